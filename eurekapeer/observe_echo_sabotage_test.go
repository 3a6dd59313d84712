//go:build sabotage

package eurekapeer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With eurekapeer-echo on, the check of TestPeerChangesAreNotEchoed fails:
// the Eureka peer's register, status update and cancel are sent back to it
// (its renewal too, folded into the register; run with -tags sabotage).
func TestSabotageEurekaPeerEcho(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.EurekaPeerEcho))
	defer func() { require.NoError(t, sabotage.Set()) }()
	actions := map[string]bool{}
	for _, it := range echoed(t) {
		actions[it.Action] = true
	}
	for _, a := range []string{"Register", "StatusUpdate", "Cancel"} {
		assert.True(t, actions[a], "the peer's %s was not echoed", a)
	}
}
