package simulations

import (
	"net/http"
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
	for _, name := range []string{InvRegionVisibility, InvRegionCancel, InvRegionNoEcho, InvRegionStaleDrop, InvRegionConvergence, InvRegionResurrection, InvRegionLoading} {
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

// restartHistory: dc1 of two nodes (dc1-n0, dc1-n1), dc2 of one; the WAN
// cut 2s–12s, every node's last success at the cut, its copy of the other
// region stale from 4.2s and dropped (nothing served) from 10.2s. dc1-n0
// restarts at 2.5s, before dc2 turns stale on it (ready at 2.7s): until
// 12s+lag its fresh process shows dc2 loading and answers 403, then
// serves it as the others do; fresh changes its reads from 2.7s to then.
func restartHistory(lag float64, fresh func(sec float64, r *DCRead)) *Observations {
	h := newDCHistory()
	h.d.Nodes["dc1"] = []string{"dc1-n0", "dc1-n1"}
	h.inst("dc1", "dc1-app-001", 0.5, -1, false)
	h.inst("dc2", "dc2-app-001", 0.5, -1, false)
	h.d.Cuts = []Span{{From: h.at(2), To: h.at(12)}}
	h.d.Restarts = []DCRestart{{Region: "dc1", Node: "dc1-n0", Stopped: h.at(2.5), Ready: h.at(2.7)}}
	h.reads(0, 18, func(sec float64, r *DCRead) {
		h.serve(0.3, 10.2, 12.3)(sec, r)
		r.LastOK = map[string]time.Time{}
		for o := range r.States {
			r.LastOK[o] = h.at(sec)
			if sec >= 2 && sec < 12.3 {
				r.LastOK[o] = h.at(2)
			}
			switch {
			case sec >= 10.2 && sec < 12.3:
				r.States[o] = federation.StateDropped
			case sec >= 4.2 && sec < 12.3:
				r.States[o] = federation.StateStale
			}
		}
		if r.Node != "dc1-n0" || sec < 2.5 || sec >= 12+lag {
			return
		}
		r.Code, r.Instances = http.StatusForbidden, map[string]string{}
		r.States["dc2"], r.LastOK["dc2"] = federation.StateLoading, time.Time{}
		if sec < 2.7 {
			r.Code = 0 // between the old process's stop and the fresh one
			return
		}
		if fresh != nil {
			fresh(sec, r)
		}
	})
	return h.o
}

// TestCheckRegionLoading: a node restarted in a cut before the other
// region turned stale must show it loading and answer 403 until the heal,
// then load it within the bound; serving it empty, showing it ok or
// starting its stale clock at the restart, loading it late or never fail.
func TestCheckRegionLoading(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	v := CheckRegionLoading(restartHistory(0.4, nil), th)
	require.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.InDelta(t, 0.4, v.Key.Value, 0.01)
	assert.Contains(t, v.Measured, "1 restarts in a cut: 46 reads of the fresh processes answered 403 before the heal (37 while a peer served the region)")

	for _, c := range []struct {
		name  string
		lag   float64
		fresh func(sec float64, r *DCRead)
		want  string
	}{
		{"served empty", 0.4, func(_ float64, r *DCRead) {
			r.Code = http.StatusOK
			r.Instances["dc1-app-001"] = ""
		}, "dc1-n0 answered 200 at +2.8s while loading [dc2] (serving 0 of its instances)"},
		{"shown ok without a copy", 0.4, func(_ float64, r *DCRead) {
			r.States["dc2"] = federation.StateOK
		}, "dc1-n0 shows dc2 ok at +2.8s without a success ever"},
		{"stale clock from the restart", 0.4, func(sec float64, r *DCRead) {
			if sec >= 4.8 {
				r.States["dc2"], r.LastOK["dc2"] = federation.StateStale, r.At.Add(-2100*time.Millisecond)
			}
		}, "dc1-n0, restarted at +2.5s in the cut, shows dc2 stale at +4.8s (never loaded)"},
		{"loaded late", 4, nil, "dc1-n0, restarted at +2.5s in the cut, loaded 4.00s after the heal (over 2.73s)"},
		{"never loaded", 100, nil, "dc1-n0, restarted at +2.5s in the cut: never served [dc2] after the heal at +12.0s (observed until +17.8s)"},
	} {
		v := CheckRegionLoading(restartHistory(c.lag, c.fresh), th)
		require.False(t, v.Pass, "%s: %s", c.name, v.Measured)
		assert.Contains(t, v.Details, c.want, c.name)
	}

	// The cut heals before the fresh process answered once: the case was
	// not observed.
	o := restartHistory(0.4, nil)
	o.Datacenters.Restarts[0].Ready = o.Start.Add(11900 * time.Millisecond)
	v = CheckRegionLoading(o, th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details[0], "no read answered 403 before the heal")
}

// TestCheckRegionStaleDropRestart: a node restarted in a cut is judged up
// to its restart (its fresh process is loading, not stale); one whose old
// process lived past the drop time must have dropped the region by then.
func TestCheckRegionStaleDropRestart(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	o := restartHistory(0.4, nil)
	v := CheckRegionStaleDrop(o, th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	o.Datacenters.Restarts = nil
	v = CheckRegionStaleDrop(o, th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details, "dc1-n0: dc2 never stale in a cut of 10.00s")

	// The old process lived to 11.9s (past the drop time and its slack)
	// but never dropped dc2.
	o = restartHistory(0.4, nil)
	d := o.Datacenters
	d.Restarts[0].Stopped, d.Restarts[0].Ready = o.Start.Add(11900*time.Millisecond), o.Start.Add(11950*time.Millisecond)
	for i := range d.Reads {
		r := &d.Reads[i]
		if r.Node != "dc1-n0" || !r.At.After(o.Start.Add(2*time.Second)) || !r.At.Before(d.Restarts[0].Stopped) {
			continue
		}
		r.Code, r.States["dc2"], r.LastOK["dc2"] = http.StatusOK, federation.StateOK, o.Start.Add(2*time.Second)
		r.Instances = map[string]string{"dc1-app-001": "", "dc2-app-001": "dc2"}
		if r.At.Sub(o.Start) >= 4200*time.Millisecond {
			r.States["dc2"] = federation.StateStale
		}
	}
	v = CheckRegionStaleDrop(o, th)
	require.False(t, v.Pass, v.Measured)
	assert.Contains(t, v.Details, "dc1-n0: dc2 never dropped in the 9.90s of the cut before its restart")
}
