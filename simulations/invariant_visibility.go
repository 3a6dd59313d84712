package simulations

// Property 2: registrations become visible on every node promptly
// (visibility).

import (
	"fmt"
	"sort"
	"strings"
)

// CheckVisibility checks that replication keeps going (property 2): over
// every (registration, other node) pair, the 99th percentile of the time
// from the registration's acknowledgement until the first probe of the
// other node that lists the instance is at most Thresholds.Visibility.
// Registrations acknowledged by a stalled node, and nodes while stalled,
// not ready, down or cut off from the registering node, are left out; a
// pair whose client stops first counts only if it already waited longer
// than the bound.
func CheckVisibility(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvVisibility, Property: 2,
		Threshold: fmt.Sprintf("p99 of registration ack → first probe of every other (ready, not stalled, reachable) node listing it ≤ %s", secs(th.Visibility)),
		Key:       noKey("p99 visibility", "s")}
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	var cases []latencyCase
	skipped := 0
	for _, l := range o.sortedInstances() {
		key := "|" + l.App + "/" + l.ID + "@"
		for i := range l.Lives {
			lf := &l.Lives[i]
			if lf.Acked.IsZero() || lf.AckedBy == "" || lf.Acked.After(end) {
				continue
			}
			k := sort.Search(len(o.Probes), func(j int) bool { return !o.Probes[j].At.Before(lf.Acked) })
			if k == len(o.Probes) || o.Probes[k].Topo.IsStalled(lf.AckedBy) {
				skipped++
				continue
			}
			stop := end
			if !lf.End.IsZero() && lf.End.Before(stop) {
				stop = lf.End
			}
			for _, n := range o.Nodes {
				if n == lf.AckedBy {
					continue
				}
				for j := k; j < len(o.Probes); j++ {
					p := &o.Probes[j]
					if p.At.After(stop) {
						if d := p.At.Sub(lf.Acked); d > th.Visibility {
							cases = append(cases, latencyCase{id: l.ID, node: n, from: lf.Acked, d: d, censored: true})
						}
						break
					}
					if !p.Ready[n] || p.Topo.IsStalled(n) || !p.Topo.Reachable(lf.AckedBy, n) {
						break // not expected to see it (p.Ready is false for a node that is down)
					}
					if strings.Contains(p.Fingerprint[n], key) {
						cases = append(cases, latencyCase{id: l.ID, node: n, from: lf.Acked, d: p.At.Sub(lf.Acked)})
						break
					}
				}
			}
		}
	}
	if len(cases) == 0 {
		v.Measured = "no registration observed on another node"
		return v
	}
	ds := sortCases(cases)
	p50, p99, worst := percentile(ds, 0.5), percentile(ds, 0.99), ds[len(ds)-1]
	over := 0
	for _, c := range cases {
		if c.d > th.Visibility {
			over++
		}
	}
	v.Pass = p99 <= th.Visibility
	v.Key = keySecs("p99 visibility", p99)
	v.Measured = fmt.Sprintf("p50 %s, p99 %s, max %s over %d (registration, node) pairs; %d over the bound; %d registrations on a stalled node left out",
		secs(p50), secs(p99), secs(worst), len(cases), over, skipped)
	for i, c := range cases {
		if i == maxDetails || c.d <= th.Visibility/2 {
			break
		}
		how := ""
		if c.censored {
			how = " (not yet listed when its client stopped or observation ended)"
		}
		v.Details = append(v.Details, fmt.Sprintf("%s registered at %s, listed on %s %s later%s", c.id, o.offset(c.from), c.node, secs(c.d), how))
	}
	return v
}
