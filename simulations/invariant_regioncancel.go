package simulations

// A cancel in one region is gone from the other regions' ?regions= reads
// as fast as a registration arrives (region-cancel).

import (
	"fmt"
	"time"
)

// CheckRegionCancel checks that a cancel crosses the WAN: over every
// (cancel, node of a region that follows its region) pair, the time the
// WAN was up from the cancel until the first read of that node without the
// instance is at most regionBound. Only instances
// that were registered and whose cancel a node accepted count.
func CheckRegionCancel(o *Observations, th Thresholds) Verdict {
	bound := regionBound(o.Timers, th)
	v := Verdict{Invariant: InvRegionCancel, Property: 2,
		Threshold: fmt.Sprintf("WAN up time from cancel → first ?regions= read of every node of a following region without it ≤ %s", secs(bound)),
		Key:       noKey("max cancel across", "s")}
	d := o.Datacenters
	if d == nil {
		return noDatacenters(v)
	}
	cases := crossing(o, d, bound,
		func(in *DCInstance) (time.Time, bool) { return in.Ended, in.Cancelled && !in.Acked.IsZero() },
		func(r *DCRead, in *DCInstance) bool { _, ok := r.Instances[in.ID]; return !ok },
		func(*DCInstance) time.Time { return time.Time{} })
	return crossingVerdict(o, v, cases, bound, "cancel")
}
