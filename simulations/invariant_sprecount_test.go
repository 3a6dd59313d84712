package simulations

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

func TestCheckSPRecountRelease(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	// Two clients of five die for good at 5s; n0 and n1 engage at 7s.
	build := func(releaseAt, goneAt float64, engage bool) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.Timers.RecountInterval = 8 * time.Second
		h.o.ClientsCrashed = h.at(5)
		h.o.CrashedIDs = []string{"d1", "d2"}
		h.o.QuietEnd = h.at(30)
		h.life("APP", "d1", "n0", 0, 5, false)
		h.life("APP", "d2", "n1", 0, 5, false)
		h.life("APP", "a", "n0", 0, -1, false)
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 30, nil, func(sec float64) []string {
				if sec < goneAt {
					return []string{"a", "d1", "d2"}
				}
				return []string{"a"}
			})
		}
		h.probes(0, 30, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				st := actors.SelfPreservationStatus{Enabled: true, Expected: 5, Threshold: 8, RenewsLastWindow: 10, ExpirationEnabled: true}
				if engage && sec >= 7 && sec < releaseAt {
					st.RenewsLastWindow, st.ExpirationEnabled = 6, false
				}
				p.SP[n] = st
			}
		})
		return h.o
	}
	v := CheckSPRecountRelease(build(15.5, 16, true), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "released within 8.50s of engaging")
	v = CheckSPRecountRelease(build(100, 100, true), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "n0 still engaged at the end, 23.00s after engaging at +7.0s (bound 10.50s)")
	assert.Contains(t, strings.Join(v.Details, "\n"), "d1 (died silently at +5.0s) still on n0 at the end")
	v = CheckSPRecountRelease(build(15.5, 25, true), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "d1 gone from every node only at +25.0s, 9.50s after the last release at +15.5s")
	v = CheckSPRecountRelease(build(0, 8, false), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "n0 never engaged self-preservation")
}

// TestCheckSPRecountReleaseEngagingAgain: engaging again after the release,
// at once (BUG-5's evidence: a recount right after the release) or later,
// fails the verdict, as never releasing does.
func TestCheckSPRecountReleaseEngagingAgain(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(releaseAt, againAt float64) *Result {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.Timers.RecountInterval = 8 * time.Second
		h.o.ClientsCrashed = h.at(5)
		h.o.CrashedIDs = []string{"d1"}
		h.o.QuietEnd = h.at(30)
		h.life("APP", "d1", "n0", 0, 5, false)
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 30, nil, func(sec float64) []string {
				if sec < releaseAt+0.3 {
					return []string{"d1"}
				}
				return nil
			})
		}
		h.probes(0, 30, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				st := actors.SelfPreservationStatus{Enabled: true, Expected: 5, Threshold: 8, RenewsLastWindow: 10, ExpirationEnabled: true}
				engaged := sec >= 7 && sec < releaseAt
				if n == "n0" && sec >= againAt && sec < againAt+2 {
					engaged = true
				}
				if engaged {
					st.RenewsLastWindow, st.ExpirationEnabled = 6, false
				}
				p.SP[n] = st
			}
		})
		r := &Result{Timers: h.o.Timers, Thresholds: th, Observations: h.o}
		r.Verdicts = []Verdict{CheckSPRecountRelease(h.o, th)}
		return r
	}
	r := build(15.5, 16)
	assert.False(t, r.Verdicts[0].Pass, "engaging again right after the release")
	r = build(15.5, 20)
	assert.False(t, r.Verdicts[0].Pass, "engaging again long after the release")
	r = build(100, 200)
	assert.False(t, r.Verdicts[0].Pass, "never releasing")
}
