package simulations

// No echoed copies across regions (region-no-echo): a region's own
// instance never comes back to it as a remote one, and no region serves
// another's instance as its own or as a third region's.

import (
	"fmt"
	"sort"
)

// CheckRegionNoEcho checks every successful ?regions= read of every node:
// each instance served as local belongs to the node's region, each one
// served as remote carries the marker of the region it was registered in,
// which is not the node's region, and no instance is served twice. It
// counts the reads that break any of these.
func CheckRegionNoEcho(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvRegionNoEcho, Property: 3,
		Threshold: "0 reads serving an echo (own instance as remote), a re-export (another region's instance under a third marker or as local) or a duplicate",
		Key:       noKey("echoing reads", "")}
	d := o.Datacenters
	if d == nil {
		return noDatacenters(v)
	}
	bad, total := 0, 0
	kinds := map[string]int{}
	for i := range d.Reads {
		r := &d.Reads[i]
		if r.Code != 200 {
			continue
		}
		total++
		var found []string
		ids := make([]string, 0, len(r.Instances))
		for id := range r.Instances {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			marker := r.Instances[id]
			owner := "?"
			if in := d.Instances[id]; in != nil {
				owner = in.Region
			}
			switch {
			case marker == "" && owner != r.Region:
				kinds["another region's instance served as local"]++
				found = append(found, fmt.Sprintf("%s of %s served as local", id, owner))
			case marker != "" && owner == r.Region:
				kinds["echo"]++
				found = append(found, fmt.Sprintf("its own %s served as %s's", id, marker))
			case marker != "" && marker != owner:
				kinds["re-export"]++
				found = append(found, fmt.Sprintf("%s of %s served as %s's", id, owner, marker))
			}
		}
		for _, id := range r.Dups {
			kinds["duplicate"]++
			found = append(found, id+" served twice")
		}
		if len(found) > 0 {
			bad++
			if len(v.Details) < maxDetails {
				v.Details = append(v.Details, fmt.Sprintf("%s at %s: %s (%d in all)", r.Node, o.offset(r.At), found[0], len(found)))
			}
		}
	}
	v.Pass = bad == 0
	v.Key = KeyFigure{Name: "echoing reads", Value: float64(bad)}
	v.Measured = fmt.Sprintf("%d of %d reads echoed", bad, total)
	if bad > 0 {
		var ks []string
		for k, n := range kinds {
			ks = append(ks, fmt.Sprintf("%s ×%d", k, n))
		}
		sort.Strings(ks)
		v.Measured += fmt.Sprintf(" (%v)", ks)
	}
	return v
}
