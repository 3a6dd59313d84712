package simulations

// region-wan-links: only the nodes the cluster chose hold the WAN link.
//
// Every datacenters scenario records each node's requests over the WAN
// (DCObservations.WAN, dc_wan.go): pulls, and change streams for as long
// as they stay open; relay requests stay in the region and are not
// recorded. A node holds the WAN link to a remote region while one of its
// requests to it is open, and for wanHold after each ends (a polling node
// sends one every pull interval; the hold joins them). At no time may more
// than Links nodes of a region hold the link to one remote, except in a
// fallback window, during which a node that is no link may follow the WAN
// itself (federation's fallback) and the links may move:
//
//   - from the start until fallbackBound after the first read (the nodes
//     start alone, each its own link, until their cluster forms);
//   - from the start of every WAN cut or degraded window (Cuts) until
//     fallbackBound after its end (relays turn stale with their links'
//     copies, and the nodes that follow them fall back to the WAN for the
//     stale time; after the heal, a relay set aside is tried again within
//     relayRetry);
//   - from a node's stop to fallbackBound after its fresh process was ready
//     (Restarts), in its region (a link that stops breaks its followers'
//     relays, and the links move with the membership).
//
// fallbackBound is federation's relayRetry (the stale time, at least four
// pull intervals), plus the stale time (a relay whose copy stays other
// than ok is set aside after it), plus two pull intervals (the ticks that
// move a node to a relay and the hold). The checker is judged from the
// scenarios' first read to their last.

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// InvRegionWANLinks is the name of the links invariant (every datacenters
// scenario).
const InvRegionWANLinks = "region-wan-links"

func init() {
	Checkers[InvRegionWANLinks] = CheckRegionWANLinks
	// Every datacenters scenario is judged by it (their lists are in
	// scenarios.go; added here so that this file holds the whole check).
	for i := range Scenarios {
		if strings.HasPrefix(Scenarios[i].Name, "datacenters") && !slices.Contains(Scenarios[i].Invariants, InvRegionWANLinks) {
			Scenarios[i].Invariants = append(slices.Clone(Scenarios[i].Invariants), InvRegionWANLinks)
		}
	}
}

// wanHold is how long a node holds the WAN link after a request ends.
func wanHold(t Timers) time.Duration {
	pull, _, _ := regionTimers(t)
	return pull * 3 / 2
}

// fallbackBound is how long after a cut, a restart or the start a node
// that is no link may still use the WAN (see the file comment).
func fallbackBound(t Timers) time.Duration {
	pull, stale, _ := regionTimers(t)
	return max(stale, 4*pull) + stale + 2*pull
}

// CheckRegionWANLinks checks that at most Links nodes of a region hold
// the WAN link to each remote region outside the fallback windows (file
// comment).
func CheckRegionWANLinks(o *Observations, _ Thresholds) Verdict {
	bound := fallbackBound(o.Timers)
	// Not one of the properties: the cost docs/federation.md claims (WAN
	// bytes per link, not per node); filed with the region invariants.
	v := Verdict{Invariant: InvRegionWANLinks, Property: 2,
		Key: KeyFigure{Name: "most nodes on one WAN link outside fallbacks", Unit: "nodes"}}
	d := o.Datacenters
	if d == nil {
		v.Threshold = "at most Links nodes of a region use the WAN to a remote"
		return noDatacenters(v)
	}
	v.Threshold = fmt.Sprintf("at most %d nodes of a region hold the WAN link to a remote (a request open, or ended < %s ago), "+
		"except up to %s after the start, a WAN cut's or degraded window's end, or a restart in the region", d.Links, secs(wanHold(o.Timers)), secs(bound))
	if len(d.Reads) == 0 {
		v.Measured = "no reads"
		return v
	}
	from, to := d.Reads[0].At, d.Reads[0].At
	for _, r := range d.Reads {
		from, to = minTime(from, r.At), maxTime(to, r.At)
	}
	type window struct{ from, to time.Time }
	excused := func(region string) []window {
		ws := []window{{time.Time{}, from.Add(bound)}}
		for _, c := range d.Cuts {
			ws = append(ws, window{c.From, c.To.Add(bound)})
		}
		for _, r := range d.Restarts {
			if r.Region == region {
				ws = append(ws, window{r.Stopped, r.Ready.Add(bound)})
			}
		}
		// Overlapping windows are one.
		sort.Slice(ws, func(i, j int) bool { return ws[i].from.Before(ws[j].from) })
		out := ws[:1]
		for _, w := range ws[1:] {
			if last := &out[len(out)-1]; !w.from.After(last.to) {
				last.to = maxTime(last.to, w.to)
			} else {
				out = append(out, w)
			}
		}
		return out
	}
	hold := wanHold(o.Timers)
	var problems []string
	most, inFallback, longest := 0, 0, time.Duration(0)
	for _, region := range d.Regions {
		ws := excused(region)
		inWindow := func(a, b time.Time) bool {
			for _, w := range ws {
				if !a.Before(w.from) && !b.After(w.to) {
					return true
				}
			}
			return false
		}
		for _, remote := range d.follows(region) {
			// Each node's holding spans, and the sweep's boundaries.
			spans := map[string][]Span{}
			cuts := []time.Time{from, to}
			for _, u := range d.WAN {
				if u.Region != region || u.Remote != remote {
					continue
				}
				end := to
				if !u.To.IsZero() {
					end = u.To.Add(hold)
				}
				spans[u.Node] = append(spans[u.Node], Span{From: u.From, To: end})
				cuts = append(cuts, u.From, end)
			}
			sort.Slice(cuts, func(i, j int) bool { return cuts[i].Before(cuts[j]) })
			var excess *Span
			var excessNodes []string
			flush := func() {
				if excess == nil {
					return
				}
				if inWindow(excess.From, excess.To) {
					inFallback++
					longest = max(longest, excess.To.Sub(excess.From))
				} else {
					problems = append(problems, fmt.Sprintf("%s: %d nodes of %s on the WAN to %s from %s to %s (%s), outside every fallback window",
						region, len(excessNodes), region, remote, o.offset(excess.From), o.offset(excess.To), strings.Join(excessNodes, ", ")))
				}
				excess = nil
			}
			for i := 0; i+1 < len(cuts); i++ {
				a, b := cuts[i], cuts[i+1]
				if !b.After(a) || b.Before(from) || a.After(to) {
					continue
				}
				a, b = maxTime(a, from), minTime(b, to)
				var on []string
				for n, ss := range spans {
					for _, s := range ss {
						if !s.From.After(a) && !s.To.Before(b) {
							on = append(on, n)
							break
						}
					}
				}
				sort.Strings(on)
				if !inWindow(a, b) {
					most = max(most, len(on))
				}
				switch {
				case len(on) <= d.Links:
					flush()
				case excess != nil && excess.To.Equal(a) && slices.Equal(on, excessNodes):
					excess.To = b
				default:
					flush()
					excess, excessNodes = &Span{From: a, To: b}, on
				}
			}
			flush()
		}
	}
	v.Key.Value = float64(most)
	v.Measured = fmt.Sprintf("at most %d nodes of a region on one WAN link outside the fallback windows (%d WAN requests); "+
		"%d spans of more than %d inside them, the longest %s", most, len(d.WAN), inFallback, d.Links, secs(longest))
	v.Pass = len(problems) == 0
	if !v.Pass {
		v.Details = append(v.Details, fmt.Sprintf("%d spans with more than %d nodes on a WAN link outside the fallback windows:", len(problems), d.Links))
		for i, p := range problems {
			if i == maxDetails {
				break
			}
			v.Details = append(v.Details, p)
		}
	}
	return v
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
