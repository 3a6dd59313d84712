package simulations

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

func TestCheckSelfPreservation(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(engages bool, evictAt float64) *Observations {
		h := newHistory("n0")
		h.o.ClientsCrashed = h.at(5)
		h.o.ClientsRecovered = h.at(12)
		h.o.CrashedIDs = []string{"a"}
		h.life("APP", "a", "n0", 0, 5, false)
		h.life("APP", "a", "n0", 12, -1, false)
		h.samples("n0", "APP", 0, 15, nil, always("a"))
		h.probes(0, 15, func(sec float64, p *Probe) {
			enabled := sec < 7 || sec >= 14 || !engages
			p.SP["n0"] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 20, ExpirationEnabled: enabled}
			if evictAt > 0 && sec >= evictAt && sec < 12 {
				p.Fingerprint["n0"] = "UP_0_"
			}
		})
		return h.o
	}
	v := CheckSelfPreservation(build(true, 0), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckSelfPreservation(build(false, 0), th)
	require.False(t, v.Pass)
	assert.Contains(t, strings.Join(v.Details, "\n"), "n0 never engaged self-preservation")
	// An eviction before self-preservation engaged (at 7s) is tolerated;
	// one after it is not.
	v = CheckSelfPreservation(build(true, 6), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "evicted before engagement 1, after 0")
	v = CheckSelfPreservation(build(true, 9), th)
	require.False(t, v.Pass)
	assert.Contains(t, strings.Join(v.Details, "\n"), "a evicted (missing on n0 at +9.0s) after self-preservation had engaged everywhere")
}
