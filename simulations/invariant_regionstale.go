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
//   - the region turns stale no earlier than the stale time after the cut
//     less the early slack (the last success may precede the cut by a
//     keep-alive or a pull interval and a sampling round), and no later
//     than the stale time plus the late slack (a request timeout, a pull
//     interval, a sampling round and the visibility threshold), when the
//     cut lasted that long; the same for dropped and the drop time;
//   - while stale and not yet dropped, the region's instances are still
//     served (the node held some at the cut);
//   - once dropped, until the heal, none is served.
func CheckRegionStaleDrop(o *Observations, th Thresholds) Verdict {
	pull, stale, drop := regionTimers(o.Timers)
	early := stale/4 + pull + o.Timers.SampleInterval
	late := stale/6 + pull + o.Timers.SampleInterval + th.Visibility
	v := Verdict{Invariant: InvRegionStaleDrop, Property: 2,
		Threshold: fmt.Sprintf("stale in [%s, %s] and dropped in [%s, %s] after a WAN cut; served while stale, not served once dropped",
			secs(stale-early), secs(stale+late), secs(drop-early), secs(drop+late)),
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
	var worstDrop time.Duration
	checked := 0
	for _, cut := range d.Cuts {
		for _, region := range d.Regions {
			for _, n := range d.Nodes[region] {
				for _, remote := range d.follows(region) {
					checked++
					held := 0
					var staleAt, dropAt time.Time
					for _, r := range byNode[n] {
						if r.At.Before(cut.From) {
							held = countMarked(r, remote)
							continue
						}
						if !r.At.Before(cut.To) {
							break
						}
						st := r.States[remote]
						if staleAt.IsZero() && (st == federation.StateStale || st == federation.StateDropped) {
							staleAt = r.At
						}
						if dropAt.IsZero() && st == federation.StateDropped {
							dropAt = r.At
						}
						served := countMarked(r, remote)
						switch {
						case !dropAt.IsZero() && served > 0:
							problems = append(problems, fmt.Sprintf("%s serves %d instances of %s at %s, dropped since %s", n, served, remote, o.offset(r.At), o.offset(dropAt)))
						case !staleAt.IsZero() && dropAt.IsZero() && held > 0 && served == 0:
							problems = append(problems, fmt.Sprintf("%s serves no instance of %s at %s, stale but not dropped", n, remote, o.offset(r.At)))
						}
					}
					lasted := cut.To.Sub(cut.From)
					judge := func(what string, at time.Time, bound time.Duration) {
						switch {
						case at.IsZero() && lasted > bound+late:
							problems = append(problems, fmt.Sprintf("%s: %s never %s in a cut of %s", n, remote, what, secs(lasted)))
						case at.IsZero():
						case at.Sub(cut.From) < bound-early:
							problems = append(problems, fmt.Sprintf("%s: %s %s %s after the cut (too early)", n, remote, what, secs(at.Sub(cut.From))))
						case at.Sub(cut.From) > bound+late:
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
	v.Measured = fmt.Sprintf("%d (node, remote region) pairs over %d cuts; latest drop %s after its cut; %d problems",
		checked, len(d.Cuts), secs(worstDrop), len(problems))
	for i, p := range problems {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, p)
	}
	return v
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
