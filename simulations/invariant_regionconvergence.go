package simulations

// After a WAN cut heals, every node's view of every other region comes to
// equal that region's registry, and stays so (region-convergence).

import (
	"fmt"
	"time"
)

// CheckRegionConvergence checks the observer's rounds after the last heal
// (until the teardown): the first round in which every remote view equals
// its region's registry (roundConverged) comes within regionBound plus a
// request timeout of the heal (a dropped region loads again in full at the
// first successful pull), and every later round is converged too (nothing
// changes after the heal in the scenario).
func CheckRegionConvergence(o *Observations, th Thresholds) Verdict {
	_, stale, _ := regionTimers(o.Timers)
	bound := regionBound(o.Timers, th) + stale/6
	v := Verdict{Invariant: InvRegionConvergence, Property: 2,
		Threshold: fmt.Sprintf("heal → every node's remote views equal the regions' registries ≤ %s, and stay equal", secs(bound)),
		Key:       noKey("region convergence", "s")}
	d := o.Datacenters
	if d == nil {
		return noDatacenters(v)
	}
	var from time.Time
	for _, c := range d.Cuts {
		from = c.To
	}
	if from.IsZero() {
		from = o.Start
	}
	end := d.Teardown
	if end.IsZero() {
		end = o.End
	}
	rounds := map[int][]DCRead{}
	var order []int
	for _, r := range d.Reads {
		if r.At.Before(from) || !r.At.Before(end) {
			continue
		}
		if _, ok := rounds[r.Round]; !ok {
			order = append(order, r.Round)
		}
		rounds[r.Round] = append(rounds[r.Round], r)
	}
	var at time.Time
	var lastWhy string
	after := 0
	for _, n := range order {
		rs := rounds[n]
		ok, why := roundConverged(d, rs)
		first := rs[0].At
		for _, r := range rs {
			if r.At.Before(first) {
				first = r.At
			}
		}
		switch {
		case at.IsZero() && ok:
			at = first
		case at.IsZero():
			lastWhy = why
		case !ok:
			after++
			if len(v.Details) < maxDetails {
				v.Details = append(v.Details, fmt.Sprintf("round at %s not converged again: %s", o.offset(first), why))
			}
		}
	}
	if at.IsZero() {
		v.Measured = fmt.Sprintf("never converged in %d rounds after %s", len(order), o.offset(from))
		if lastWhy != "" {
			v.Details = append(v.Details, "last round: "+lastWhy)
		}
		return v
	}
	took := at.Sub(from)
	v.Pass = took <= bound && after == 0
	v.Key = keySecs("region convergence", took)
	v.Measured = fmt.Sprintf("converged %s after the heal; %d later rounds not converged", secs(took), after)
	return v
}
