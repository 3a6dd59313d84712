package simulations

import (
	"fmt"
	"time"
)

// InvSPPartition: self-preservation engages on both sides of a partition and
// releases after the heal (property 5).
const InvSPPartition = "sp-partition"

func init() { Checkers[InvSPPartition] = CheckSPPartition }

// CheckSPPartition judges self-preservation across the first partition of a
// run: every node that expected renewals when the cluster split, on the
// minority and on the majority side alike, engages within SPEngage of the
// split (each side hears only its own clients' renewals, a share below the
// threshold), and releases within SPRelease of the heal (or earlier, by the
// release rule, when the split outlasted the recount interval). A node that
// was not running at the split or the heal is judged only on what it saw.
func CheckSPPartition(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvSPPartition, Property: 5,
		Threshold: fmt.Sprintf("every node engages within %s of the split, on both sides, and releases within %s of the heal",
			secs(th.SPEngage), secs(th.SPRelease))}
	var split, heal time.Time
	for _, ev := range o.Timeline {
		switch {
		case ev.Kind == "partition" && split.IsZero():
			split = o.Start.Add(ev.At)
		case ev.Kind == "heal" && !split.IsZero() && heal.IsZero():
			heal = o.Start.Add(ev.At)
		}
	}
	if split.IsZero() || heal.IsZero() {
		v.Measured = "no partition and heal in this run"
		return v
	}
	var nodes []string
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(split) {
			nodes = nodes[:0]
			for _, n := range p.Up {
				if sp, ok := p.SP[n]; ok && sp.Enabled && sp.Expected > 0 {
					nodes = append(nodes, n)
				}
			}
		}
	}
	ok := true
	var worstEngage, worstRelease time.Duration
	for _, n := range nodes {
		var engagedAt, releasedAt time.Time
		for i := range o.Probes {
			p := &o.Probes[i]
			sp, present := p.SP[n]
			if !present || p.At.Before(split) || (!o.QuietEnd.IsZero() && p.At.After(o.QuietEnd)) {
				continue
			}
			switch {
			case p.At.Before(heal):
				if engagedAt.IsZero() && !sp.ExpirationEnabled {
					engagedAt = p.At
				}
			case releasedAt.IsZero() && sp.ExpirationEnabled:
				releasedAt = p.At
			}
		}
		switch {
		case engagedAt.IsZero():
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s never engaged between the split at %s and the heal at %s", n, o.offset(split), o.offset(heal)))
		case engagedAt.Sub(split) > th.SPEngage:
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s engaged %s after the split", n, secs(engagedAt.Sub(split))))
		}
		if !engagedAt.IsZero() {
			worstEngage = max(worstEngage, engagedAt.Sub(split))
		}
		switch {
		case releasedAt.IsZero():
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s never released after the heal at %s", n, o.offset(heal)))
		case releasedAt.Sub(heal) > th.SPRelease:
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s released %s after the heal", n, secs(releasedAt.Sub(heal))))
		default:
			worstRelease = max(worstRelease, releasedAt.Sub(heal))
		}
	}
	if len(nodes) == 0 {
		v.Measured = "no node expected renewals at the split"
		return v
	}
	v.Pass = ok
	v.Measured = fmt.Sprintf("%d nodes: engaged within %s of the split (worst node), released within %s of the heal",
		len(nodes), secs(worstEngage), secs(worstRelease))
	v.Key = keySecs("worst engage", worstEngage)
	return v
}
