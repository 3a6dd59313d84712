package simulations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// TestCheckAfterHeal: three clients die silently during a fault that
// heals at +10 s. eviction-after-heal counts from the heal (no probe
// shows membership whole): gone 3.4 s
// after it passes (though 10 s after the deaths, which eviction-latency
// fails), 6 s after it fails, never fails. sp-after-heal: engaged until
// one and a half windows after the heal passes (the hysteresis's second
// close), engaged 1 s later than that fails.
func TestCheckAfterHeal(t *testing.T) {
	th := DefaultThresholds(DefaultTimers()) // after-heal bound 5.75s, window 2s
	const heal = 10.0
	build := func(goneAfterHeal, engagedUntil float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.QuietEnd = h.at(25)
		h.o.Timeline = []Event{{At: 2 * time.Second, Kind: "partition"}, {At: time.Duration(heal * float64(time.Second)), Kind: "heal"}}
		for i, id := range []string{"a", "b", "c"} {
			start := float64(i)
			h.life("APP", id, "n0", start, start+4, false)
			h.o.Instances[id].Lives[0].Renewed = map[string]time.Time{"n0": h.at(start + 3.9)}
		}
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 25, nil, func(sec float64) []string {
				if sec < heal+goneAfterHeal {
					return []string{"a", "b", "c"}
				}
				return nil
			})
		}
		h.probes(0, 25, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				p.SP[n] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 20, ExpirationEnabled: true}
				if sec >= 3 && sec < engagedUntil {
					p.SP[n] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 12, Members: 2}
				}
			}
		})
		return h.o
	}
	o := build(3.4, heal+2)
	v := CheckEvictionAfterHeal(o, th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.False(t, CheckEvictionLatency(o, th).Pass, "counted from the deaths, the same history fails")
	v = CheckSPAfterHeal(o, th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)

	v = CheckEvictionAfterHeal(build(6, heal+2), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "p99 6.")
	v = CheckEvictionAfterHeal(build(100, heal+2), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "still listed at the end")

	v = CheckSPAfterHeal(build(3.4, heal+3), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckSPAfterHeal(build(3.4, heal+4), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Details[0], "engaged from +13.")

	// A false death refuted between two probes leaves every probe
	// complete but moves when the member last changed state: the clock
	// starts then (the same 6 s after the heal is 5 s after it).
	flap := build(6, heal+2)
	refuted := flap.Start.Add(time.Duration((heal + 1) * float64(time.Second)))
	for i := range flap.Probes {
		if p := &flap.Probes[i]; !p.At.Before(refuted) {
			p.LiveSince = map[string]time.Time{"n1": refuted}
		}
	}
	assert.Equal(t, refuted, flap.wholeAfterHeal())
	v = CheckEvictionAfterHeal(flap, th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)

	none := build(3.4, heal+2)
	none.Timeline = nil
	assert.Contains(t, CheckSPAfterHeal(none, th).Measured, "no heal")
	assert.Contains(t, CheckEvictionAfterHeal(none, th).Measured, "no heal")
}
