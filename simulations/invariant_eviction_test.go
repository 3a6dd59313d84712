package simulations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckEvictionLatency(t *testing.T) {
	th := DefaultThresholds(DefaultTimers()) // bound 3s + 0.25s + 1s
	build := func(goneAfter float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.QuietEnd = h.at(20)
		for i, id := range []string{"a", "b", "c"} {
			start := float64(i)
			h.life("APP", id, "n0", start, start+2, false)
			h.o.Instances[id].Lives[0].Renewed = map[string]time.Time{"n0": h.at(start + 1.9)}
		}
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 20, nil, func(sec float64) []string {
				var ids []string
				for i, id := range []string{"a", "b", "c"} {
					if sec < float64(i)+1.9+goneAfter {
						ids = append(ids, id)
					}
				}
				return ids
			})
		}
		return h.o
	}
	v := CheckEvictionLatency(build(3.4), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "over 6 (instance, node) pairs of 3 silently dead clients")
	v = CheckEvictionLatency(build(6), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "p99 6.10s")
	assert.Contains(t, v.Details[0], "last renewal at +")
	// Never evicted: still listed when observation ends.
	v = CheckEvictionLatency(build(100), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "6 still listed at the end")
	assert.Contains(t, v.Details[0], "still listed when observation ended")
}

// A node stopped for a restart serves nothing: its first sample without the
// dead instance comes after the restart, but it is judged a sample after
// its last one listing the instance (before the stop). A node that lists
// the instance after the restart is still judged by that listing.
func TestCheckEvictionLatencySkipsAStoppedNode(t *testing.T) {
	th := DefaultThresholds(DefaultTimers()) // bound 4.25s
	build := func(listedAfterRestart bool) *Observations {
		h := newHistory("n0", "n1")
		h.o.QuietEnd = h.at(20)
		h.life("APP", "a", "n0", 0, 2, false)
		h.o.Instances["a"].Lives[0].Renewed = map[string]time.Time{"n0": h.at(1.9)}
		h.samples("n0", "APP", 0, 20, nil, func(sec float64) []string {
			if sec < 5 {
				return []string{"a"}
			}
			return nil
		})
		// n1 lists it until 4, is stopped from 4 to 8, then serves.
		h.samples("n1", "APP", 0, 4, nil, func(float64) []string { return []string{"a"} })
		h.samples("n1", "APP", 8, 20, nil, func(sec float64) []string {
			if listedAfterRestart && sec < 9 {
				return []string{"a"}
			}
			return nil
		})
		return h.o
	}
	v := CheckEvictionLatency(build(false), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckEvictionLatency(build(true), th)
	assert.False(t, v.Pass, "the restarted node served the dead instance: %s", v.Measured)
}
