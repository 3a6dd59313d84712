package simulations

// A node does not serve a remote region it has not loaded, and a node
// restarted while the WAN is cut loads it after the heal (region-loading).
//
// docs/federation.md, "Never stale forever": a region is loading until its
// first successful pull (or stream snapshot), and ?regions= reads answer
// 403 meanwhile, as Eureka's shouldAllowAccess does; its stale and drop
// clocks count from its last success, so a region that never loaded is
// never stale nor dropped: it is not served at all. A fresh process
// restarted in a WAN cut is the case: its peers still serve their copy
// (ok, then stale), it has none; answering 200 would hand a client the
// remote region as empty, as if it had no instances.
//
// With relays (federation links.go, relay.go), a fresh process that does
// not hold a WAN link follows a peer that does, and loads the peer's copy
// while that copy is still ok: it then serves what its peers serve, not an
// empty region, with the peer's last success, from before the cut. That is
// allowed: a region loaded in the cut must show a last success no later
// than the cut's start (plus a pull interval), so it came from before the
// cut through a relay; its stale and drop clocks are region-stale-drop's.

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/heureka/heureka/federation"
)

// InvRegionLoading is the name of the loading invariant
// (datacenters-restart-early).
const InvRegionLoading = "region-loading"

func init() {
	Checkers[InvRegionLoading] = CheckRegionLoading
}

// CheckRegionLoading checks:
//
//   - every read: a region shown ok, stale or dropped has a last success
//     (a node never judges, nor serves as fresh, a copy it never had); a
//     read answered 200 while a region it follows shows loading is a
//     breach, unless the node's next read shows that region loaded (it
//     loaded between the state's read and the registry's);
//   - every restart inside a cut (Restarts, Cuts): from the fresh
//     process's readiness to the heal, each of its reads shows every
//     region it follows loading (not ok: it has no copy; not stale nor
//     dropped: its clocks start at its first success, which the cut
//     forbids) and is answered 403 (0, no answer, is let pass); at least
//     one such read is observed, unless it loaded through a relay: then
//     its reads show the region with a last success from before the cut
//     (see above) and none answers 403 with the region loaded. The 403s
//     answered while a peer of its
//     region served the region's instances in the same round are counted:
//     the fresh process refused what its peers still served, rather than
//     serving it empty;
//   - after the heal, the fresh process's first read answered 200 with
//     every region loaded comes within the convergence bound (regionBound
//     plus a request timeout) of the heal.
func CheckRegionLoading(o *Observations, th Thresholds) Verdict {
	_, stale, _ := regionTimers(o.Timers)
	bound := regionBound(o.Timers, th) + stale/6
	v := Verdict{Invariant: InvRegionLoading, Property: 2,
		Threshold: fmt.Sprintf("a region never loaded is shown loading and answered 403 (never ok, stale, dropped, nor 200); "+
			"a node restarted in a cut loads it ≤ %s after the heal", secs(bound)),
		Key: noKey("max load after heal", "s")}
	d := o.Datacenters
	if d == nil {
		return noDatacenters(v)
	}
	byNode := map[string][]*DCRead{} // every read, answered or not
	byRound := map[int][]*DCRead{}
	for i := range d.Reads {
		r := &d.Reads[i]
		byNode[r.Node] = append(byNode[r.Node], r)
		byRound[r.Round] = append(byRound[r.Round], r)
	}
	for _, rs := range byNode {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].At.Before(rs[j].At) })
	}
	var problems []string
	loadingReads := 0
	for _, region := range d.Regions {
		for _, n := range d.Nodes[region] {
			rs := byNode[n]
			for i, r := range rs {
				var loading []string
				for _, remote := range d.follows(region) {
					switch st := r.States[remote]; {
					case st == federation.StateLoading:
						loading = append(loading, remote)
					case st != "" && r.LastOK[remote].IsZero():
						problems = append(problems, fmt.Sprintf("%s shows %s %s at %s without a success ever", n, remote, st, o.offset(r.At)))
					}
				}
				if len(loading) == 0 {
					continue
				}
				loadingReads++
				if r.Code == http.StatusOK && (i+1 == len(rs) || !loadedAll(rs[i+1], loading)) {
					problems = append(problems, fmt.Sprintf("%s answered 200 at %s while loading %v (serving %d of its instances)",
						n, o.offset(r.At), loading, countMarked(r, loading[0])))
				}
			}
		}
	}

	pull, _, _ := regionTimers(o.Timers)
	inCut, refused, whilePeers, relayed := 0, 0, 0, 0
	var worst time.Duration
	for k, rst := range d.Restarts {
		var cut *Span
		for i := range d.Cuts {
			if c := &d.Cuts[i]; !rst.Stopped.Before(c.From) && rst.Stopped.Before(c.To) {
				cut = c
			}
		}
		if cut == nil {
			continue // the rules on every read cover it
		}
		inCut++
		end := time.Time{} // the fresh process's end: the node's next restart
		for _, later := range d.Restarts[k+1:] {
			if later.Node == rst.Node {
				end = later.Stopped
				break
			}
		}
		remotes := d.follows(rst.Region)
		seen, viaRelay := 0, 0
		loaded := false
		var last time.Time
		for _, r := range byNode[rst.Node] {
			if r.At.Before(rst.Ready) || (!end.IsZero() && !r.At.Before(end)) {
				continue
			}
			last = r.At
			if r.At.Before(cut.To) {
				fromRelay := 0
				for _, remote := range remotes {
					st := r.States[remote]
					switch {
					case st == federation.StateLoading:
					case st != "" && !r.LastOK[remote].IsZero() && !r.LastOK[remote].After(cut.From.Add(pull)):
						fromRelay++ // a peer's copy from before the cut, through a relay
					default:
						problems = append(problems, fmt.Sprintf("%s, restarted at %s in the cut, shows %s %s at %s (never loaded)",
							rst.Node, o.offset(rst.Stopped), remote, st, o.offset(r.At)))
					}
				}
				if fromRelay == len(remotes) && r.Code != http.StatusForbidden {
					viaRelay++
					continue
				}
				switch r.Code {
				case http.StatusForbidden:
					seen++
					if peerServes(byRound[r.Round], r, remotes) {
						whilePeers++
					}
				case 0:
				default:
					problems = append(problems, fmt.Sprintf("%s, restarted at %s in the cut, answered %d at %s (403 until it loads)",
						rst.Node, o.offset(rst.Stopped), r.Code, o.offset(r.At)))
				}
				continue
			}
			if r.Code == http.StatusOK && loadedAll(r, remotes) {
				took := r.At.Sub(cut.To)
				worst = max(worst, took)
				if took > bound {
					problems = append(problems, fmt.Sprintf("%s, restarted at %s in the cut, loaded %s after the heal (over %s)",
						rst.Node, o.offset(rst.Stopped), secs(took), secs(bound)))
				}
				loaded = true
				break
			}
		}
		refused += seen
		relayed += viaRelay
		if seen == 0 && viaRelay == 0 {
			problems = append(problems, fmt.Sprintf("%s, restarted at %s in the cut (ready at %s): no read answered 403 before the heal at %s",
				rst.Node, o.offset(rst.Stopped), o.offset(rst.Ready), o.offset(cut.To)))
		}
		if !loaded {
			problems = append(problems, fmt.Sprintf("%s, restarted at %s in the cut: never served %v after the heal at %s (observed until %s)",
				rst.Node, o.offset(rst.Stopped), remotes, o.offset(cut.To), o.offset(last)))
		}
	}
	v.Pass = len(problems) == 0
	if inCut > 0 && worst > 0 {
		v.Key = keySecs("max load after heal", worst)
	}
	v.Measured = fmt.Sprintf("%d reads showing a region loading; %d restarts in a cut: %d reads of the fresh processes answered 403 before the heal "+
		"(%d while a peer served the region), %d served a relayed copy from before the cut, loaded at worst %s after the heal; %d problems",
		loadingReads, inCut, refused, whilePeers, relayed, secs(worst), len(problems))
	for i, p := range problems {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, p)
	}
	return v
}

// loadedAll reports whether r shows none of remotes loading (and has a
// state for each).
func loadedAll(r *DCRead, remotes []string) bool {
	for _, remote := range remotes {
		if st := r.States[remote]; st == "" || st == federation.StateLoading {
			return false
		}
	}
	return true
}

// peerServes reports whether another node of r's region, in the same
// round, answered 200 serving instances of one of remotes.
func peerServes(round []*DCRead, r *DCRead, remotes []string) bool {
	for _, p := range round {
		if p.Node == r.Node || p.Region != r.Region || p.Code != http.StatusOK {
			continue
		}
		for _, remote := range remotes {
			if countMarked(p, remote) > 0 {
				return true
			}
		}
	}
	return false
}
