package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
)

// expiredLeave sets up BUG-8's case on a memnet.Network: a, b and c, where b and
// c are stalled (they accept a's leave notices but never read them), so a's
// leave spends its whole timeout in the notices, and memberlist neither
// gossips nor probes, so no broadcast of a's ever goes out. It
// starts a's Leave and returns a and a channel closed when Leave returns.
func expiredLeave(t *testing.T) (*Membership, <-chan struct{}) {
	t.Helper()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	cfg := func(name string, join ...string) Config {
		c := memConfig(t, n, name, join...)
		c.MemberlistConfig = func(mc *memberlist.Config) {
			fastTimings(mc)
			// No gossip, no probes (whose packets and acks piggyback
			// broadcasts), no periodic push/pull.
			mc.GossipInterval, mc.ProbeInterval, mc.PushPullInterval = time.Hour, time.Hour, time.Hour
		}
		c.LeaveTimeout = 50 * time.Millisecond
		c.StreamTimeout = 2 * time.Second // a notice outlives the leave timeout
		return c
	}
	a := startNode(t, cfg("a"))
	b := startNode(t, cfg("b", "a"))
	c := startNode(t, cfg("c", "a", "b")) // no gossip: c's join tells b
	for _, m := range []*Membership{a, b, c} {
		waitView(t, m, allAre(StateAlive, "a", "b", "c"))
	}
	n.Stall("b")
	n.Stall("c")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Leave(0) // times out: logged, not the point
	}()
	return a, done
}

// TestLeaveWithExpiredDeadlineReturns is BUG-8 of the simulations: a leave
// whose deadline has run out before memberlist's part (the leaving flag's
// update and the leave message) still returns, though those broadcasts
// never go out. memberlist waits without limit for a timeout ≤ 0.
func TestLeaveWithExpiredDeadlineReturns(t *testing.T) {
	_, done := expiredLeave(t)
	require.Eventually(t, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}, waitFor, 10*time.Millisecond, "Leave returns although its deadline ran out")
}
