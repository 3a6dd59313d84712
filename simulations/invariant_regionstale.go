package simulations

// While the WAN is cut, remote data is marked stale after the stale time
// and dropped after the drop time, not before (region-stale-drop).

import (
	"fmt"
	"time"

	"github.com/heureka/heureka/federation"
)

// CheckRegionStaleDrop checks every WAN cut, on every node, for every
// remote region it follows:
//
//   - a read never shows the region stale (dropped) while the node's last
//     success with it (LastOK, read with the state) is younger than the
//     stale (drop) time: the judgement is by the time since the last
//     success, not by when the link broke;
//   - the region turns stale no later than the stale time after the cut
//     plus the late slack (a request timeout, a pull interval, a sampling
//     round and the visibility threshold), when the cut lasted that long;
//     the same for dropped and the drop time;
//   - while stale and not yet dropped, the region's instances are still
//     served (the node held some at the cut), but in a read right before
//     the drop (the drop may fall between the state's read and the
//     registry's);
//   - once dropped, until the heal, none is served.
//
// A node restarted in the cut (Restarts) is judged up to its restart:
// the deadlines apply only when its old process lived past them. The
// fresh process has never loaded the region, so it is neither stale nor
// dropped but loading, and answers 403 (region-loading judges it).
//
// How long before the cut the last success came is reported, not judged
// (a poll that times out under load moves it back).
func CheckRegionStaleDrop(o *Observations, th Thresholds) Verdict {
	_, stale, drop := regionTimers(o.Timers)
	late := staleDropLate(o.Timers, th)
	v := Verdict{Invariant: InvRegionStaleDrop, Property: 2,
		Threshold: fmt.Sprintf("stale after %s and dropped after %s without success, by %s and %s after a WAN cut; served while stale, not served once dropped",
			secs(stale), secs(drop), secs(stale+late), secs(drop+late)),
		Key: noKey("max drop after cut", "s")}
	d := o.Datacenters
	if d == nil {
		return noDatacenters(v)
	}
	if len(d.Cuts) == 0 {
		v.Measured = "no WAN cut"
		return v
	}
	byNode := d.readsByNode()
	var problems []string
	var worstDrop, worstLastOK time.Duration
	checked := 0
	for _, cut := range d.Cuts {
		for _, region := range d.Regions {
			for _, n := range d.Nodes[region] {
				for _, remote := range d.follows(region) {
					checked++
					held := 0
					var staleAt, dropAt time.Time
					first := true
					end := cut.To
					if at, ok := d.restartIn(n, cut); ok {
						end = at
					}
					rs := byNode[n]
					for i, r := range rs {
						if r.At.Before(cut.From) {
							held = countMarked(r, remote)
							continue
						}
						if !r.At.Before(end) {
							break
						}
						st, ok := r.States[remote], r.LastOK[remote]
						if first && !ok.IsZero() {
							worstLastOK = max(worstLastOK, cut.From.Sub(ok))
							first = false
						}
						if p := tooEarly(o, r, remote, stale, drop); p != "" {
							problems = append(problems, p)
						}
						if staleAt.IsZero() && (st == federation.StateStale || st == federation.StateDropped) {
							staleAt = r.At
						}
						if dropAt.IsZero() && st == federation.StateDropped {
							dropAt = r.At
						}
						served := countMarked(r, remote)
						nextDropped := i+1 < len(rs) && rs[i+1].States[remote] == federation.StateDropped
						switch {
						case !dropAt.IsZero() && served > 0:
							problems = append(problems, fmt.Sprintf("%s serves %d instances of %s at %s, dropped since %s", n, served, remote, o.offset(r.At), o.offset(dropAt)))
						case !staleAt.IsZero() && dropAt.IsZero() && held > 0 && served == 0 && !nextDropped:
							problems = append(problems, fmt.Sprintf("%s serves no instance of %s at %s, stale but not dropped", n, remote, o.offset(r.At)))
						}
					}
					lasted := end.Sub(cut.From)
					span := "a cut of " + secs(lasted)
					if !end.Equal(cut.To) {
						span = fmt.Sprintf("the %s of the cut before its restart", secs(lasted))
					}
					judge := func(what string, at time.Time, bound time.Duration) {
						switch {
						case at.IsZero() && lasted > bound+late:
							problems = append(problems, fmt.Sprintf("%s: %s never %s in %s", n, remote, what, span))
						case !at.IsZero() && at.Sub(cut.From) > bound+late:
							problems = append(problems, fmt.Sprintf("%s: %s %s %s after the cut (too late)", n, remote, what, secs(at.Sub(cut.From))))
						}
					}
					judge("stale", staleAt, stale)
					judge("dropped", dropAt, drop)
					if !dropAt.IsZero() {
						worstDrop = max(worstDrop, dropAt.Sub(cut.From))
					}
				}
			}
		}
	}
	v.Pass = len(problems) == 0
	v.Key = keySecs("max drop after cut", worstDrop)
	v.Measured = fmt.Sprintf("%d (node, remote region) pairs over %d cuts; latest drop %s after its cut; last success up to %s before a cut; %d problems",
		checked, len(d.Cuts), secs(worstDrop), secs(worstLastOK), len(problems))
	for i, p := range problems {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, p)
	}
	return v
}

// staleDropLate is how late region-stale-drop lets a region turn stale
// (dropped) after the stale (drop) time of a cut: a request timeout, a
// pull interval, a sampling round and the visibility threshold.
func staleDropLate(t Timers, th Thresholds) time.Duration {
	pull, stale, _ := regionTimers(t)
	return stale/6 + pull + t.SampleInterval + th.Visibility
}

// restartIn returns when node's first restart inside cut stopped its
// process, if it restarted there.
func (d *DCObservations) restartIn(node string, cut Span) (time.Time, bool) {
	for _, r := range d.Restarts {
		if r.Node == node && !r.Stopped.Before(cut.From) && r.Stopped.Before(cut.To) {
			return r.Stopped, true
		}
	}
	return time.Time{}, false
}

// tooEarly is the rule region-stale-drop and region-stale-rule share: r
// must not show remote stale (dropped) while the node's last success with
// it, read with the state, is younger than the stale (drop) time (less a
// 10 ms slack). It describes the breach, "" if there is none.
func tooEarly(o *Observations, r *DCRead, remote string, stale, drop time.Duration) string {
	const eps = 10 * time.Millisecond
	st, ok := r.States[remote], r.LastOK[remote]
	bound := time.Duration(0)
	switch st {
	case federation.StateStale:
		bound = stale
	case federation.StateDropped:
		bound = drop
	}
	if bound <= 0 || ok.IsZero() || r.At.Sub(ok) >= bound-eps {
		return ""
	}
	return fmt.Sprintf("%s: %s %s at %s, its last success only %s before", r.Node, remote, st, o.offset(r.At), secs(r.At.Sub(ok)))
}

// countMarked counts the instances r serves marked with region.
func countMarked(r *DCRead, region string) int {
	n := 0
	for _, m := range r.Instances {
		if m == region {
			n++
		}
	}
	return n
}
