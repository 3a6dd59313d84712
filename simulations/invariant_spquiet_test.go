package simulations

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

func TestCheckSPQuiet(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(engagedFrom, engagedTo float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.SteadyAt = h.at(1)
		h.o.QuietEnd = h.at(20)
		h.probes(0, 20, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				p.SP[n] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 20, ExpirationEnabled: true}
			}
			if sec >= engagedFrom && sec < engagedTo {
				p.SP["n1"] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 16, LocalRenewals: 8, PeerRenewals: 8, Members: 2}
			}
		})
		return h.o
	}
	// Engaged during the warm-up only (before SteadyAt + two windows).
	v := CheckSPQuiet(build(0, 4.5), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	// Engaged for 2s of the 15s judged on one of two nodes: ~6.7%.
	v = CheckSPQuiet(build(10, 12), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "1 engagements, longest 2.00s")
	assert.Contains(t, v.Details[0], "n1 engaged from +10.0s for 2.00s")
	assert.Contains(t, v.Details[0], "renews 16 (local 8 + peers 8, 2 members), threshold 17, expected 10")
	assert.InDelta(t, 100*20.0/300, v.Key.Value, 0.5)
}
