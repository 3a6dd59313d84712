//go:build sabotage

package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With protected-by-expectation on, the engagement protects the 52
// expected clients, dead ones included, and the 42 that live after the
// fault never renew 85% of that: it stays engaged.
func TestSabotageProtectedByExpectation(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ProtectedByExpectation))
	defer func() { require.NoError(t, sabotage.Set()) }()
	sp := engagedWithDeadExpected(t)
	assert.True(t, sp.engaged(), sp.reason())
}

// With recovery-while-members-unheard on, it recovers while a member is
// unheard.
func TestSabotageRecoveryWhileMembersUnheard(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RecoveryWhileMembersUnheard))
	defer func() { require.NoError(t, sabotage.Set()) }()
	sp, _ := faultThenUnheard(t)
	assert.True(t, sp.expirationEnabled(), sp.reason())
}
