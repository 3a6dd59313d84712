package simulations

// The region invariants adapted to the WAN faults other than a cut of
// every link (scenarios_datacenters_faults.go):
//
//   - region-stale-rule (datacenters-lossy-wan): a region is never stale
//     (dropped) while the node's last success with it is younger than the
//     stale (drop) time, and outside the degraded windows (plus the
//     convergence bound after each) every region is ok. A lossy WAN may
//     make a region stale, it need not: the reads that show it stale
//     within a window are counted, not judged.
//   - the one-link invariants (datacenters-one-link) judge the cut link
//     (dc1's view of dc2) as the datacenters scenario judges a cut, and
//     the other links of the ring as never cut: their WAN up time never
//     stops (visibility, cancel and resurrection within regionBound of
//     real time) and they are never stale.

import (
	"fmt"
	"math"
	"net/http"

	"github.com/heureka/heureka/federation"
)

// Names of the adapted region invariants.
const (
	InvRegionStaleRule           = "region-stale-rule"
	InvRegionOneLinkVisibility   = "region-visibility-one-link"
	InvRegionOneLinkCancel       = "region-cancel-one-link"
	InvRegionOneLinkStaleDrop    = "region-stale-drop-one-link"
	InvRegionOneLinkResurrection = "region-no-resurrection-one-link"
)

func init() {
	Checkers[InvRegionStaleRule] = CheckRegionStaleRule
	Checkers[InvRegionOneLinkVisibility] = oneLink(InvRegionOneLinkVisibility, CheckRegionVisibility, CheckRegionVisibility)
	Checkers[InvRegionOneLinkCancel] = oneLink(InvRegionOneLinkCancel, CheckRegionCancel, CheckRegionCancel)
	Checkers[InvRegionOneLinkResurrection] = oneLink(InvRegionOneLinkResurrection, CheckRegionNoResurrection, CheckRegionNoResurrection)
	Checkers[InvRegionOneLinkStaleDrop] = oneLink(InvRegionOneLinkStaleDrop, CheckRegionStaleDrop,
		func(o *Observations, th Thresholds) Verdict {
			v := Verdict{Invariant: InvRegionStaleRule, Property: 2}
			return staleRule(o, th, v, "")
		})
}

// CheckRegionStaleRule checks every successful read of every node, for
// every region it follows: not stale while its last success (read with the
// state) is younger than the stale time, not dropped while younger than
// the drop time; and ok in every read outside the observations' windows
// (Cuts: there, the degraded WAN) and the convergence bound after each.
func CheckRegionStaleRule(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvRegionStaleRule, Property: 2}
	return staleRule(o, th, v, "the degraded windows")
}

// staleRule is CheckRegionStaleRule on o.Datacenters; what names the
// windows in the verdict ("": there are none, every read must be ok).
func staleRule(o *Observations, th Thresholds, v Verdict, what string) Verdict {
	_, stale, drop := regionTimers(o.Timers)
	grace := regionBound(o.Timers, th) + stale/6
	v.Threshold = fmt.Sprintf("never stale (dropped) while the last success is younger than %s (%s); ok outside %s and %s after each",
		secs(stale), secs(drop), what, secs(grace))
	if what == "" {
		what = "any fault"
		v.Threshold = fmt.Sprintf("never stale (dropped) while the last success is younger than %s (%s); ok in every read", secs(stale), secs(drop))
	}
	v.Key = KeyFigure{Name: "stale reads outside faults", Unit: ""}
	d := o.Datacenters
	if d == nil {
		v.Key.Value = math.NaN()
		return noDatacenters(v)
	}
	var problems []string
	checked, within, outside := 0, 0, 0
	for i := range d.Reads {
		r := &d.Reads[i]
		if r.Code != http.StatusOK {
			continue
		}
		for _, remote := range d.follows(r.Region) {
			st := r.States[remote]
			if st == "" {
				continue
			}
			checked++
			if p := tooEarly(o, r, remote, stale, drop); p != "" {
				problems = append(problems, p)
			}
			if st == federation.StateOK {
				continue
			}
			in := false
			for _, w := range d.Cuts {
				if !r.At.Before(w.From) && r.At.Before(w.To.Add(grace)) {
					in = true
				}
			}
			if in {
				within++
				continue
			}
			outside++
			problems = append(problems, fmt.Sprintf("%s: %s %s at %s, outside %s", r.Node, remote, st, o.offset(r.At), what))
		}
	}
	v.Pass = len(problems) == 0
	v.Key.Value = float64(outside)
	v.Measured = fmt.Sprintf("%d (read, remote region) pairs; %d not ok within %s (allowed), %d outside; %d problems", checked, within, what, outside, len(problems))
	for i, p := range problems {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, p)
	}
	return v
}

// oneLinkViews splits o for datacenters-one-link: cut is the cut link
// alone (oneLinkFollower following oneLinkRemote) with the cuts; free the
// other links, never cut (no Cuts).
func oneLinkViews(o *Observations) (cut, free *Observations) {
	d := o.Datacenters
	dc, df := *d, *d
	dc.Follows, df.Follows = map[string][]string{}, map[string][]string{}
	for _, region := range d.Regions {
		for _, r := range d.follows(region) {
			if region == oneLinkFollower && r == oneLinkRemote {
				dc.Follows[region] = append(dc.Follows[region], r)
			} else {
				df.Follows[region] = append(df.Follows[region], r)
			}
		}
	}
	df.Cuts = nil
	oc, of := *o, *o
	oc.Datacenters, of.Datacenters = &dc, &df
	return &oc, &of
}

// oneLink is the checker name made of onCut judging the cut link and
// onFree the others.
func oneLink(name string, onCut, onFree Checker) Checker {
	return func(o *Observations, th Thresholds) Verdict {
		if o.Datacenters == nil {
			return noDatacenters(Verdict{Invariant: name, Property: 2, Key: noKey("", "")})
		}
		oc, of := oneLinkViews(o)
		a, b := onCut(oc, th), onFree(of, th)
		link := fmt.Sprintf("%s's view of %s (the cut link)", oneLinkFollower, oneLinkRemote)
		v := Verdict{Invariant: name, Property: a.Property, Pass: a.Pass && b.Pass,
			Threshold: link + ": " + a.Threshold + "; the other links (never cut): " + b.Threshold,
			Measured:  link + ": " + a.Measured + "; the other links: " + b.Measured,
			Key:       a.Key}
		if b.Key.Name == a.Key.Name && !math.IsNaN(b.Key.Value) && (math.IsNaN(a.Key.Value) || b.Key.Value > a.Key.Value) {
			v.Key = b.Key
		}
		for _, x := range a.Details {
			v.Details = append(v.Details, "cut link: "+x)
		}
		for _, x := range b.Details {
			v.Details = append(v.Details, "other links: "+x)
		}
		return v
	}
}
