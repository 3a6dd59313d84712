package simulations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckSilentMemberBound: a client killed at +3 s (last renewal at
// +2.9 s) during a member's silence. Gone from both nodes 3 s later with
// the hold seen passes; the same with a node that showed no hold, with
// no hold ever seen, or gone only after the bound (eviction latency plus
// the silent-member bound) fails.
func TestCheckSilentMemberBound(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	bound := th.EvictionLatency + silentBound(DefaultTimers())
	build := func(goneAfter float64, events ...string) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.QuietEnd = h.at(30)
		h.life("APP", "a", "n1", 0, 3, false)
		h.o.Instances["a"].Lives[0].Renewed = map[string]time.Time{"n1": h.at(2.9)}
		h.o.CrashedIDs = []string{"a"}
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 30, nil, func(sec float64) []string {
				if sec < 3+goneAfter {
					return []string{"a"}
				}
				return nil
			})
		}
		detail := map[string]string{
			"hold-seen":   "n1 shows the hold",
			"hold-unseen": "n1 shows no hold on eviction 3s into n0's silence",
		}
		for _, kind := range events {
			h.o.Timeline = append(h.o.Timeline, Event{At: 4 * time.Second, Kind: kind, Detail: detail[kind]})
		}
		return h.o
	}

	v := CheckSilentMemberBound(build(3, "hold-seen"), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "worst 3.10s")

	v = CheckSilentMemberBound(build(3, "hold-seen", "hold-unseen"), th)
	require.False(t, v.Pass, "a node that showed no hold while it had to: %s", v.Measured)
	assert.Contains(t, v.Measured, "missing on 1 nodes")
	assert.Contains(t, v.Details[0], "shows no hold")

	v = CheckSilentMemberBound(build(3), th)
	assert.False(t, v.Pass, "the hold never seen: %s", v.Measured)

	late := (bound + time.Second).Seconds()
	v = CheckSilentMemberBound(build(late, "hold-seen"), th)
	require.False(t, v.Pass, "gone after the bound: %s", v.Measured)
	assert.Contains(t, v.Measured, "2 (instance, node) pairs over the bound")
}
