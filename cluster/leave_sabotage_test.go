//go:build sabotage

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With leave-waits-unbounded on, the leave of TestLeaveWithExpiredDeadlineReturns
// hangs in memberlist's UpdateNode (run with -tags sabotage). The test then
// releases it: a newer update of the node replaces the broadcast it waits for.
func TestSabotageLeaveWaitsUnbounded(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.LeaveWaitsUnbounded))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a, done := expiredLeave(t)
	hung := assert.Never(t, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}, 3*time.Second, 50*time.Millisecond, "the leave hangs past its deadline")
	_ = a.Memberlist().UpdateNode(time.Millisecond) // releases it; its own broadcast times out
	<-done
	require.True(t, hung)
}
