package simulations

// After a WAN cut heals, every node's view of every region it follows
// comes to equal that region's registry, and stays so until the next cut
// (region-convergence).

import (
	"fmt"
	"strings"
	"time"
)

// CheckRegionConvergence checks the observer's rounds after every heal,
// until the next cut (or the teardown): the first round in which every
// remote view equals its region's registry (roundConverged) comes within
// regionBound plus a request timeout of the heal (a dropped region loads
// again in full at the first successful pull), and every later round of
// the window is converged too, or again within the bound (a change made
// inside a region meanwhile, an eviction or a registration, reaches its
// nodes one after the other, and a round may catch it on some). Without cuts, the window starts with the observations.
func CheckRegionConvergence(o *Observations, th Thresholds) Verdict {
	_, stale, _ := regionTimers(o.Timers)
	bound := regionBound(o.Timers, th) + stale/6
	v := Verdict{Invariant: InvRegionConvergence, Property: 2,
		Threshold: fmt.Sprintf("heal → every node's remote views equal the regions' registries ≤ %s, and stay equal until the next cut (a difference lasting at most as long)", secs(bound)),
		Key:       noKey("region convergence", "s")}
	d := o.Datacenters
	if d == nil {
		return noDatacenters(v)
	}
	end := d.Teardown
	if end.IsZero() {
		end = o.End
	}
	type window struct{ from, to time.Time }
	var ws []window
	if len(d.Cuts) == 0 {
		ws = append(ws, window{o.Start, end})
	}
	for i, c := range d.Cuts {
		to := end
		if i+1 < len(d.Cuts) {
			to = d.Cuts[i+1].From
		}
		ws = append(ws, window{c.To, to})
	}
	var worst time.Duration
	pass := true
	var parts []string
	for _, w := range ws {
		rounds := map[int][]DCRead{}
		var order []int
		for _, r := range d.Reads {
			if r.At.Before(w.from) || !r.At.Before(w.to) {
				continue
			}
			if _, ok := rounds[r.Round]; !ok {
				order = append(order, r.Round)
			}
			rounds[r.Round] = append(rounds[r.Round], r)
		}
		var at, badSince time.Time
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
			case ok:
				badSince = time.Time{}
			case badSince.IsZero():
				// A change made in the region meanwhile (an eviction, a
				// registration) reaches its nodes one after the other: a
				// round may catch it on some. Only a disagreement that
				// outlasts the bound counts.
				badSince = first
			case first.Sub(badSince) > bound:
				after++
				if len(v.Details) < maxDetails {
					v.Details = append(v.Details, fmt.Sprintf("not converged again from %s to the round at %s (over %s): %s",
						o.offset(badSince), o.offset(first), secs(bound), why))
				}
				badSince = first // one count per bound
			}
		}
		if at.IsZero() {
			pass = false
			parts = append(parts, fmt.Sprintf("never converged in %d rounds after %s", len(order), o.offset(w.from)))
			if lastWhy != "" && len(v.Details) < maxDetails {
				v.Details = append(v.Details, fmt.Sprintf("after %s, last round: %s", o.offset(w.from), lastWhy))
			}
			continue
		}
		took := at.Sub(w.from)
		worst = max(worst, took)
		if took > bound || after > 0 {
			pass = false
		}
		parts = append(parts, fmt.Sprintf("converged %s after %s; %d later rounds not converged", secs(took), o.offset(w.from), after))
	}
	v.Pass = pass
	if pass || worst > 0 {
		v.Key = keySecs("region convergence", worst)
	}
	v.Measured = fmt.Sprintf("%d heals: %s", len(d.Cuts), strings.Join(parts, "; "))
	return v
}
