package simulations

// What the region invariants share (the datacenters scenario): their
// names, the propagation bound across the WAN, and the reads per node.

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"
)

// Names of the region invariants (scenario datacenters).
const (
	InvRegionVisibility   = "region-visibility"      // property 2
	InvRegionCancel       = "region-cancel"          // property 2
	InvRegionNoEcho       = "region-no-echo"         // property 3
	InvRegionStaleDrop    = "region-stale-drop"      // property 2
	InvRegionConvergence  = "region-convergence"     // property 2
	InvRegionResurrection = "region-no-resurrection" // property 3
)

func init() {
	Checkers[InvRegionVisibility] = CheckRegionVisibility
	Checkers[InvRegionCancel] = CheckRegionCancel
	Checkers[InvRegionNoEcho] = CheckRegionNoEcho
	Checkers[InvRegionStaleDrop] = CheckRegionStaleDrop
	Checkers[InvRegionConvergence] = CheckRegionConvergence
	Checkers[InvRegionResurrection] = CheckRegionNoResurrection
}

// regionBound bounds how long a change in one region takes to show in
// another region's ?regions= reads, counting only the time the WAN is up
// (upTime): replication to the
// node the other region follows (Thresholds.Visibility), a pull interval
// (the polling nodes), a sampling round, and a second for the stream's
// coalescing and scheduling.
func regionBound(t Timers, th Thresholds) time.Duration {
	pull, _, _ := regionTimers(t)
	return th.Visibility + pull + t.SampleInterval + time.Second
}

// localBound bounds how long a change takes to show on the other nodes of
// its own region: replication and a sampling round, plus a second.
func localBound(t Timers, th Thresholds) time.Duration {
	return th.Visibility + t.SampleInterval + time.Second
}

// upTime returns how much of [from, to] the WAN was up: a change cannot
// cross while it is cut, so the bounds count the time outside the cuts.
func (d *DCObservations) upTime(from, to time.Time) time.Duration {
	if !to.After(from) {
		return 0
	}
	up := to.Sub(from)
	for _, c := range d.Cuts {
		a, b := c.From, c.To
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			up -= b.Sub(a)
		}
	}
	return up
}

// follows returns the regions whose nodes region's nodes follow.
func (d *DCObservations) follows(region string) []string {
	if d.Follows != nil {
		return d.Follows[region]
	}
	var out []string
	for _, r := range d.Regions {
		if r != region {
			out = append(out, r)
		}
	}
	return out
}

// followers returns the regions that follow region.
func (d *DCObservations) followers(region string) []string {
	var out []string
	for _, r := range d.Regions {
		if r != region && slices.Contains(d.follows(r), region) {
			out = append(out, r)
		}
	}
	return out
}

// readsByNode returns the successful reads of every node, in time order.
func (d *DCObservations) readsByNode() map[string][]*DCRead {
	out := map[string][]*DCRead{}
	for i := range d.Reads {
		r := &d.Reads[i]
		if r.Code == http.StatusOK {
			out[r.Node] = append(out[r.Node], r)
		}
	}
	for _, rs := range out {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].At.Before(rs[j].At) })
	}
	return out
}

// sortedInstances returns the instances ordered by id.
func (d *DCObservations) sortedInstances() []*DCInstance {
	out := make([]*DCInstance, 0, len(d.Instances))
	for _, in := range d.Instances {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// noDatacenters is the verdict of a run without datacenter observations.
func noDatacenters(v Verdict) Verdict {
	v.Measured = "no datacenter observations (not the datacenters scenario)"
	return v
}

// crossing measures, for every instance (selected by pick, which returns
// when its change happened) and every node of every region that follows
// the instance's region, the WAN's up time (upTime) from the change until
// the first read of that node for which seen holds, up to undone (when the
// change was undone: the registration's client stopped; zero: never). A
// pair never settled while observed for more than bound of up time is a
// censored case; one undone earlier is left out.
func crossing(o *Observations, d *DCObservations, bound time.Duration, pick func(*DCInstance) (time.Time, bool),
	seen func(r *DCRead, in *DCInstance) bool, undone func(in *DCInstance) time.Time) []latencyCase {
	byNode := d.readsByNode()
	var cases []latencyCase
	for _, in := range d.sortedInstances() {
		at, ok := pick(in)
		if !ok {
			continue
		}
		stop := undone(in)
		for _, region := range d.followers(in.Region) {
			for _, n := range d.Nodes[region] {
				rs := byNode[n]
				k := sort.Search(len(rs), func(j int) bool { return !rs[j].At.Before(at) })
				found := false
				var last time.Time
				for _, r := range rs[k:] {
					if !stop.IsZero() && r.At.After(stop) {
						break
					}
					last = r.At
					if seen(r, in) {
						cases = append(cases, latencyCase{id: in.ID, node: n, from: at, d: d.upTime(at, r.At)})
						found = true
						break
					}
				}
				if up := d.upTime(at, last); !found && up > bound {
					cases = append(cases, latencyCase{id: in.ID, node: n, from: at, d: up, censored: true})
				}
			}
		}
	}
	return cases
}

// crossingVerdict fills v from cases against bound: every case within it.
func crossingVerdict(o *Observations, v Verdict, cases []latencyCase, bound time.Duration, what string) Verdict {
	if len(cases) == 0 {
		v.Measured = "no " + what + " observed across regions"
		return v
	}
	ds := sortCases(cases)
	worst := ds[len(ds)-1]
	over := 0
	for _, c := range cases {
		if c.d > bound || c.censored {
			over++
		}
	}
	v.Pass = over == 0
	v.Key = keySecs("max "+what+" across", worst)
	v.Measured = fmt.Sprintf("p50 %s, p99 %s, max %s over %d (%s, node of a following region) pairs; %d over the bound",
		secs(percentile(ds, 0.5)), secs(percentile(ds, 0.99)), secs(worst), len(cases), what, over)
	for i, c := range cases {
		if i == maxDetails || c.d <= bound/2 {
			break
		}
		how := ""
		if c.censored {
			how = " (never, while observed that long)"
		}
		v.Details = append(v.Details, fmt.Sprintf("%s (%s at %s) on %s after %s%s", c.id, what, o.offset(c.from), c.node, secs(c.d), how))
	}
	return v
}

// roundConverged reports whether the reads of one round show every remote
// view equal to its region's registry: every node of a region serves the
// same local instances, and every node of every region that follows it
// serves exactly those as that region's. It returns a description of the first
// difference otherwise.
func roundConverged(d *DCObservations, reads []DCRead) (bool, string) {
	local := map[string][]string{}
	remote := map[string]map[string][]string{} // node → region → ids
	have := map[string]bool{}
	for i := range reads {
		r := &reads[i]
		if r.Code != http.StatusOK {
			return false, fmt.Sprintf("%s answered %d", r.Node, r.Code)
		}
		have[r.Node] = true
		ids := map[string][]string{}
		for id, m := range r.Instances {
			ids[m] = append(ids[m], id)
		}
		for _, l := range ids {
			slices.Sort(l)
		}
		if prev, ok := local[r.Region]; ok && !slices.Equal(prev, ids[""]) {
			return false, fmt.Sprintf("the nodes of %s disagree on its registry", r.Region)
		}
		local[r.Region] = ids[""]
		remote[r.Node] = ids
	}
	for _, region := range d.Regions {
		for _, n := range d.Nodes[region] {
			if !have[n] {
				return false, fmt.Sprintf("no read of %s", n)
			}
			for _, other := range d.follows(region) {
				if !slices.Equal(remote[n][other], local[other]) {
					return false, fmt.Sprintf("%s serves %d instances of %s, which holds %d", n, len(remote[n][other]), other, len(local[other]))
				}
			}
		}
	}
	return true, ""
}
