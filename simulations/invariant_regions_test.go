package simulations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
)

// dcHistory builds datacenter observations by hand: regions dc1 and dc2 of
// one node each, instances, and reads every 200ms.
type dcHistory struct {
	o  *Observations
	d  *DCObservations
	t0 time.Time
}

func newDCHistory() *dcHistory {
	t0 := time.Unix(1000, 0)
	tm := DefaultTimers()
	tm.RegionDropAfter = 8 * time.Second // stale 2s, pull 200ms
	d := &DCObservations{Regions: []string{"dc1", "dc2"},
		Nodes:     map[string][]string{"dc1": {"dc1-n0"}, "dc2": {"dc2-n0"}},
		Instances: map[string]*DCInstance{}}
	return &dcHistory{o: &Observations{Start: t0, End: t0.Add(30 * time.Second), Timers: tm, Datacenters: d}, d: d, t0: t0}
}

func (h *dcHistory) at(sec float64) time.Time {
	return h.t0.Add(time.Duration(sec * float64(time.Second)))
}

// inst adds an instance of region acked at acked; ended < 0: still running.
func (h *dcHistory) inst(region, id string, acked, ended float64, cancelled bool) {
	in := &DCInstance{Region: region, App: "APP", ID: id, Acked: h.at(acked), Cancelled: cancelled}
	if ended >= 0 {
		in.Ended = h.at(ended)
	}
	h.d.Instances[id] = in
}

// reads adds a read of every node every 200ms in [from, to); fill sets what
// it served (every remote state ok unless fill says otherwise).
func (h *dcHistory) reads(from, to float64, fill func(sec float64, r *DCRead)) {
	round := len(h.d.Reads)
	for ms := int(from * 1000); ms < int(to*1000); ms += 200 {
		sec := float64(ms) / 1000
		round++
		for _, region := range h.d.Regions {
			for _, n := range h.d.Nodes[region] {
				r := DCRead{At: h.at(sec), Round: round, Region: region, Node: n, Code: 200,
					Instances: map[string]string{}, States: map[string]federation.State{}}
				for _, o := range h.d.Regions {
					if o != region {
						r.States[o] = federation.StateOK
					}
				}
				fill(sec, &r)
				h.d.Reads = append(h.d.Reads, r)
			}
		}
	}
}

// serve is a fill that serves every instance of its own region locally
// between its ack and its end, and on the other region's node with lag,
// except during the cut [cutFrom, cutTo) (none when cutTo ≤ cutFrom).
func (h *dcHistory) serve(lag, cutFrom, cutTo float64) func(float64, *DCRead) {
	return func(sec float64, r *DCRead) {
		for id, in := range h.d.Instances {
			acked, end := in.Acked.Sub(h.t0).Seconds(), 1e9
			if !in.Ended.IsZero() {
				end = in.Ended.Sub(h.t0).Seconds()
			}
			if in.Region == r.Region {
				if sec >= acked && sec < end {
					r.Instances[id] = ""
				}
				continue
			}
			cut := sec >= cutFrom && sec < cutTo
			if !cut && sec >= acked+lag && sec < end+lag {
				r.Instances[id] = in.Region
			}
		}
	}
}

func TestCheckRegionVisibilityAndCancel(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(lag float64) *Observations {
		h := newDCHistory()
		h.inst("dc1", "dc1-app-001", 1, 6, true)
		h.inst("dc2", "dc2-app-001", 2, -1, false)
		h.reads(0, 12, h.serve(lag, 0, 0))
		return h.o
	}
	for _, check := range []Checker{CheckRegionVisibility, CheckRegionCancel} {
		v := check(build(0.3), th)
		assert.True(t, v.Pass, "%s %s %v", v.Invariant, v.Measured, v.Details)
		v = check(build(3), th)
		require.False(t, v.Pass, "%s %s", v.Invariant, v.Measured)
		assert.NotEmpty(t, v.Details)
	}
	// A registration during a WAN cut is due one bound after the heal.
	h := newDCHistory()
	h.inst("dc1", "dc1-app-001", 3, -1, false)
	h.d.Cuts = []Span{{From: h.at(2), To: h.at(8)}}
	h.reads(0, 12, h.serve(0.3, 2, 8))
	v := CheckRegionVisibility(h.o, th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)

	// One that crossed just before a cut is measured as it crossed, even
	// when its client stops soon after the heal; one that had not crossed
	// when the cut began counts only the WAN's up time.
	h = newDCHistory()
	h.inst("dc1", "dc1-app-001", 1.5, 9, true)
	h.inst("dc1", "dc1-app-002", 1.9, -1, false)
	h.d.Cuts = []Span{{From: h.at(2), To: h.at(8)}}
	h.reads(0, 12, h.serve(0.3, 2, 8.2))
	v = CheckRegionVisibility(h.o, th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "over 2 (registration")
	assert.InDelta(t, 0.3, v.Key.Value, 0.01) // dc1-app-002: 0.1 s before the cut, 0.2 s after
}

func TestCheckRegionNoEcho(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	h := newDCHistory()
	h.inst("dc1", "dc1-app-001", 1, -1, false)
	h.inst("dc2", "dc2-app-001", 1, -1, false)
	h.reads(0, 5, h.serve(0.3, 0, 0))
	v := CheckRegionNoEcho(h.o, th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)

	// dc1's own instance comes back to it marked as dc2's.
	h.reads(5, 6, func(sec float64, r *DCRead) {
		h.serve(0.3, 0, 0)(sec, r)
		if r.Region == "dc1" {
			r.Instances["dc1-app-001"] = "dc2"
		}
	})
	v = CheckRegionNoEcho(h.o, th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details[0], "its own dc1-app-001 served as dc2's")
}

func TestCheckRegionStaleDrop(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	// Cut 2s–14s; stale 2s, drop 8s after it.
	build := func(staleAt, dropAt float64, servedAfterDrop bool) *Observations {
		h := newDCHistory()
		h.inst("dc1", "dc1-app-001", 0.5, -1, false)
		h.inst("dc2", "dc2-app-001", 0.5, -1, false)
		h.d.Cuts = []Span{{From: h.at(2), To: h.at(14)}}
		h.reads(0, 16, func(sec float64, r *DCRead) {
			h.serve(0.3, 0, 0)(sec, r)
			r.LastOK = map[string]time.Time{}
			for o := range r.States {
				r.LastOK[o] = h.at(min(sec, 2)) // the last success at the cut
				switch {
				case sec >= 2+dropAt && sec < 14:
					r.States[o] = federation.StateDropped
					if !servedAfterDrop {
						delete(r.Instances, o+"-app-001")
					}
				case sec >= 2+staleAt && sec < 14:
					r.States[o] = federation.StateStale
				}
			}
		})
		return h.o
	}
	v := CheckRegionStaleDrop(build(2.2, 8.2, false), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckRegionStaleDrop(build(0.4, 8.2, false), th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details[0], "its last success only 0.40s before")
	v = CheckRegionStaleDrop(build(2.2, 11, false), th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details[0], "too late")
	v = CheckRegionStaleDrop(build(2.2, 8.2, true), th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details[0], "dropped since")

	// The read right before the drop may already serve nothing (the drop
	// fell between the state's read and the registry's); an earlier one
	// may not.
	at := func(sec float64) func(float64, *DCRead) {
		return func(s float64, r *DCRead) {
			if s >= sec && r.States["dc2"] == federation.StateStale {
				delete(r.Instances, "dc2-app-001")
			}
		}
	}
	for _, c := range []struct {
		from float64
		pass bool
	}{{10.0, true}, {9.0, false}} {
		o := build(2.2, 8.2, false)
		d := o.Datacenters
		for i := range d.Reads {
			sec := d.Reads[i].At.Sub(o.Start).Seconds()
			at(c.from)(sec+1e-9, &d.Reads[i])
		}
		v = CheckRegionStaleDrop(o, th)
		assert.Equal(t, c.pass, v.Pass, "emptied from %v: %s %v", c.from, v.Measured, v.Details)
	}
}

func TestCheckRegionStaleRule(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	// A degraded window 2s–6s (stale 2s); from staleFrom to staleTo every
	// remote is stale with its last success age before staleFrom.
	build := func(staleFrom, staleTo, age float64) *Observations {
		h := newDCHistory()
		h.d.Cuts = []Span{{From: h.at(2), To: h.at(6)}}
		h.reads(0, 30, func(sec float64, r *DCRead) {
			r.LastOK = map[string]time.Time{}
			for o := range r.States {
				r.LastOK[o] = h.at(sec)
				if sec >= staleFrom && sec < staleTo {
					r.LastOK[o] = h.at(staleFrom - age)
					r.States[o] = federation.StateStale
				}
			}
		})
		return h.o
	}
	v := CheckRegionStaleRule(build(4.2, 6, 2), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckRegionStaleRule(build(4, 6, 1), th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details[0], "its last success only 1.00s before")
	v = CheckRegionStaleRule(build(20, 21, 2), th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details[0], "outside the degraded windows")
}

func TestCheckRegionConvergenceAndResurrection(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	// Cut 2s–10s; dc1-app-002 cancelled during it; after the heal dc2
	// serves dc1's registry with a lag, or keeps the cancelled instance.
	build := func(lag float64, keep bool) *Observations {
		h := newDCHistory()
		h.inst("dc1", "dc1-app-001", 0.5, -1, false)
		h.inst("dc1", "dc1-app-002", 0.5, 3, true)
		h.inst("dc2", "dc2-app-001", 0.5, -1, false)
		h.d.Cuts = []Span{{From: h.at(2), To: h.at(10)}}
		h.reads(0, 16, func(sec float64, r *DCRead) {
			h.serve(0.3, 2, 10+lag)(sec, r)
			if keep && r.Region == "dc2" && sec >= 10+lag {
				r.Instances["dc1-app-002"] = "dc1"
			}
		})
		return h.o
	}
	v := CheckRegionConvergence(build(0.4, false), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckRegionConvergence(build(4, false), th)
	assert.False(t, v.Pass, v.Measured)
	v = CheckRegionConvergence(build(0.4, true), th)
	assert.False(t, v.Pass, v.Measured)

	// A change inside dc1 after the heal that one round catches on some
	// nodes only is not a failure; the same difference for the rest of
	// the window is.
	for _, c := range []struct {
		until float64
		pass  bool
	}{{12.3, true}, {16, false}} {
		o := build(0.4, false)
		for i := range o.Datacenters.Reads {
			r := &o.Datacenters.Reads[i]
			if sec := r.At.Sub(o.Start).Seconds(); r.Region == "dc1" && r.Node == o.Datacenters.Reads[0].Node && sec >= 12 && sec < c.until {
				r.Instances["dc1-app-009"] = ""
			}
		}
		v = CheckRegionConvergence(o, th)
		assert.Equal(t, c.pass, v.Pass, "different until %v: %s %v", c.until, v.Measured, v.Details)
	}

	v = CheckRegionNoResurrection(build(0.4, false), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckRegionNoResurrection(build(0.4, true), th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details[0], "dc1-app-002 of dc1")
}

func TestCheckersWithoutDatacenters(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	for _, name := range []string{InvRegionVisibility, InvRegionCancel, InvRegionNoEcho, InvRegionStaleDrop, InvRegionConvergence, InvRegionResurrection} {
		v := Checkers[name](&Observations{Timers: DefaultTimers()}, th)
		assert.False(t, v.Pass, name)
		assert.Contains(t, v.Measured, "no datacenter observations")
	}
}

// TestRegionTimers: the default region timers are valid together, and the
// federation they give keeps production's ratios and passes its checks.
func TestRegionTimers(t *testing.T) {
	cfg := DefaultConfig()
	require.NoError(t, cfg.Validate())
	cfg.Timers.RegionPullInterval = cfg.Timers.RegionStaleAfter
	assert.ErrorIs(t, cfg.Validate(), ErrInvalidConfig)
	cfg = DefaultConfig()
	cfg.Timers.RegionDropAfter = cfg.Timers.RegionStaleAfter
	assert.ErrorIs(t, cfg.Validate(), ErrInvalidConfig)

	tm := DefaultTimers()
	fc := datacenterFederation(tm, "dc1", []federation.Remote{{Name: "dc2", URL: "http://127.0.0.1:1/eureka/"}}, true)
	require.NoError(t, fc.Validate())
	prod := federation.DefaultConfig()
	ratio := func(d, stale time.Duration) float64 { return float64(d) / float64(stale) }
	assert.InDelta(t, ratio(prod.RequestTimeout, prod.StaleAfter), ratio(fc.RequestTimeout, fc.StaleAfter), 0.01)
	assert.InDelta(t, ratio(prod.DropAfter, prod.StaleAfter), ratio(fc.DropAfter, fc.StaleAfter), 0.01)
	assert.InDelta(t, ratio(prod.DeltaRetention, prod.StaleAfter), ratio(fc.DeltaRetention, fc.StaleAfter), 0.01)
	assert.InDelta(t, ratio(prod.StreamIdleTimeout, prod.StaleAfter), ratio(fc.StreamIdleTimeout, fc.StaleAfter), 0.01)
	assert.True(t, fc.TransparentFallback)
	assert.Less(t, regionKeepAlive(tm), fc.StreamIdleTimeout)
}

// TestDecodeRegionRead: instances as an array or a single object, their
// region markers, and an id served twice.
func TestDecodeRegionRead(t *testing.T) {
	body := `{"applications":{"application":[
		{"name":"A","instance":[{"instanceId":"dc1-a-001","metadata":{}},{"instanceId":"dc2-a-001","metadata":{"heureka.region":"dc2"}}]},
		{"name":"B","instance":{"instanceId":"dc1-a-001","metadata":{"heureka.region":"dc2"}}}]}}`
	ids, dups, err := decodeRegionRead([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"dc1-a-001": "dc2", "dc2-a-001": "dc2"}, ids)
	assert.Equal(t, []string{"dc1-a-001"}, dups)
}

// TestCheckRegionConvergenceEveryHeal: each heal is judged until the next
// cut, not only the last one.
func TestCheckRegionConvergenceEveryHeal(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(firstLag float64) *Observations {
		h := newDCHistory()
		h.inst("dc1", "dc1-app-001", 0.5, -1, false)
		h.inst("dc2", "dc2-app-001", 0.5, -1, false)
		h.d.Cuts = []Span{{From: h.at(2), To: h.at(6)}, {From: h.at(10), To: h.at(11)}}
		h.reads(0, 14, func(sec float64, r *DCRead) {
			if sec < 10 {
				h.serve(0.3, 2, 6+firstLag)(sec, r)
			} else {
				h.serve(0.3, 10, 11.3)(sec, r)
			}
		})
		return h.o
	}
	v := CheckRegionConvergence(build(0.3), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckRegionConvergence(build(5), th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Measured, "never converged")
}
