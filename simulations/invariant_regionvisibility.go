package simulations

// A registration in one region is readable through ?regions= on every node
// of the other regions within a bound (region-visibility).

import (
	"fmt"
	"time"
)

// CheckRegionVisibility checks that a registration crosses the WAN: over
// every (registration, node of a region that follows its region) pair, the
// time the WAN was up from the registration's acknowledgement until the
// first read of that node serving the instance marked with its region is
// at most regionBound. Pairs whose client stopped first are left out.
func CheckRegionVisibility(o *Observations, th Thresholds) Verdict {
	bound := regionBound(o.Timers, th)
	v := Verdict{Invariant: InvRegionVisibility, Property: 2,
		Threshold: fmt.Sprintf("WAN up time from registration ack → first ?regions= read of every node of a following region serving it ≤ %s (visibility + pull interval + sampling + 1s)", secs(bound)),
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
