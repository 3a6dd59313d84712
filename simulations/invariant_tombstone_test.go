package simulations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckTombstoneTTL(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(oldest float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.Timers.TombstoneTTL = 8 * time.Second
		h.probes(0, 20, func(sec float64, p *Probe) {
			if int(sec*10)%10 != 0 {
				return // a census once a second
			}
			p.Tombstones = map[string]TombstoneCensus{
				"n0": {Count: 3, Oldest: 5 * time.Second, OldestID: "APP/a"},
				"n1": {Count: 4, Oldest: time.Duration(min(sec, oldest) * float64(time.Second)), OldestID: "APP/b"},
			}
		})
		return h.o
	}
	v := CheckTombstoneTTL(build(8.5), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	// n1 keeps serving b's tombstone up to 15s after the deletion (aged by
	// its receipt, or re-seeded by a peer).
	v = CheckTombstoneTTL(build(15), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "oldest tombstone served 15.00s old (TTL 8.00s), 1 (node, tombstone) over the bound")
	assert.Contains(t, v.Details[0], "n1 still served APP/b's tombstone at +15.0s, 15.00s after the deletion")
}
