package simulations

// A registration in one region is readable through ?regions= on every node
// of the other regions within a bound (region-visibility).

import (
	"fmt"
	"time"
)

// CheckRegionVisibility checks that a registration crosses the WAN: over
// every (registration, node of a region that follows its region) pair, the time from the
// registration's acknowledgement (or from the heal, when a WAN cut fell
// within the bound) until the first read of that node serving the instance
// marked with its region is at most regionBound. Pairs whose client stopped
// before the bound passed are left out.
func CheckRegionVisibility(o *Observations, th Thresholds) Verdict {
	bound := regionBound(o.Timers, th)
	v := Verdict{Invariant: InvRegionVisibility, Property: 2,
		Threshold: fmt.Sprintf("registration ack (or the heal of a WAN cut within the bound) → first ?regions= read of every node of a following region serving it ≤ %s (visibility + pull interval + sampling + 1s)", secs(bound)),
		Key:       noKey("max registration across", "s")}
	d := o.Datacenters
	if d == nil {
		return noDatacenters(v)
	}
	cases := crossing(o, d, bound,
		func(in *DCInstance) (at time.Time, ok bool) { return in.Acked, !in.Acked.IsZero() },
		func(r *DCRead, in *DCInstance) bool { return r.Instances[in.ID] == in.Region },
		func(in *DCInstance) time.Time { return in.Ended })
	return crossingVerdict(o, v, cases, bound, "registration")
}
