//go:build sabotage

package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With no-failed-members-in-state on, the check of
// TestRestartedAfterSideForgotReconnects fails: the restarted node hears
// nothing of the other side from its own, so it has nobody to re-dial after
// the heal (run with -tags sabotage).
func TestSabotageNoFailedMembersInState(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.NoFailedMembersInState))
	defer func() { require.NoError(t, sabotage.Set()) }()
	_, _, c2 := forgottenPartition(t)
	assert.False(t, heardOfA(c2), "c learns nothing of a")
}
