//go:build sabotage

package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With rejoin-below-left-incarnation on, the restarted node of
// TestRestartAfterLeaveSeenAliveByAll is not alive in every member's view
// when its join returns (run with -tags sabotage): the members it did not
// push its refuted state to wait for gossip.
func TestSabotageRejoinBelowLeftIncarnation(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RejoinBelowLeftIncarnation))
	defer func() { require.NoError(t, sabotage.Set()) }()
	names := []string{"a", "b", "c", "d", "e"}
	ms, _ := restartAfterLeave(t, names...)
	missed := 0
	for _, name := range []string{"c", "d", "e"} {
		if states(ms[name])["b"] != StateAlive {
			missed++
		}
	}
	assert.Positive(t, missed, "some member does not see the restarted b when its join returns")
}
