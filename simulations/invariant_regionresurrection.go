package simulations

// No cancelled instance comes back in any region after a WAN cut longer
// than the tombstone TTL with cancels on both sides
// (region-no-resurrection).

import (
	"fmt"
	"sort"
)

// CheckRegionNoResurrection checks every read after every accepted cancel:
// a node of the instance's own region may serve it for localBound after
// the cancel, a node of a region that follows it until the WAN has been up
// for regionBound since the cancel (as region-cancel counts); any read
// later than that which serves it is a resurrection. The scenario never registers an id
// again, so nothing may.
func CheckRegionNoResurrection(o *Observations, th Thresholds) Verdict {
	lb, rb := localBound(o.Timers, th), regionBound(o.Timers, th)
	v := Verdict{Invariant: InvRegionResurrection, Property: 3,
		Threshold: fmt.Sprintf("0 cancelled instances served later than %s after the cancel (own region) or %s of WAN up time after it (other regions)", secs(lb), secs(rb)),
		Key:       noKey("resurrected", "")}
	d := o.Datacenters
	if d == nil {
		return noDatacenters(v)
	}
	byNode := d.readsByNode()
	cancelled, back := 0, map[string]bool{}
	for _, in := range d.sortedInstances() {
		if !in.Cancelled {
			continue
		}
		cancelled++
		for _, region := range append([]string{in.Region}, d.followers(in.Region)...) {
			late := func(r *DCRead) bool { return r.At.Sub(in.Ended) > lb }
			if region != in.Region {
				late = func(r *DCRead) bool { return d.upTime(in.Ended, r.At) > rb }
			}
			for _, n := range d.Nodes[region] {
				rs := byNode[n]
				k := sort.Search(len(rs), func(j int) bool { return rs[j].At.After(in.Ended) })
				for _, r := range rs[k:] {
					if m, ok := r.Instances[in.ID]; ok && late(r) {
						if !back[in.ID] && len(v.Details) < maxDetails {
							v.Details = append(v.Details, fmt.Sprintf("%s of %s, cancelled at %s, served by %s at %s (marker %q)",
								in.ID, in.Region, o.offset(in.Ended), n, o.offset(r.At), m))
						}
						back[in.ID] = true
						break
					}
				}
			}
		}
	}
	v.Pass = len(back) == 0
	v.Key = KeyFigure{Name: "resurrected", Value: float64(len(back))}
	v.Measured = fmt.Sprintf("%d of %d cancelled instances came back", len(back), cancelled)
	return v
}
