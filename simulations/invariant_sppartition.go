package simulations

// Property 5 across a partition: self-preservation engages on both sides
// and releases after the heal (sp-partition).

import (
	"fmt"
	"time"

	"github.com/heureka/heureka/actors"
)

// CheckSPPartition judges self-preservation across the first partition of a
// run: every node that expected renewals when the cluster split, on the
// minority and on the majority side alike, engages within SPEngage of the
// split (each side hears only its own clients' renewals, a share below the
// threshold), and releases within SPRelease of the heal (or earlier, by the
// release rule, when the split outlasted the recount interval). A node that
// was not running at the split or the heal is judged only on what it saw.
//
// The release is asked of a node only when the clients running when it is
// due (SPRelease after the heal) can bring its renewals back above the
// threshold: when fewer than RenewalPercentThreshold of the clients it
// expects then are alive (churn clients that died silently while it was
// engaged, which it rightly kept, while new ones kept registering), no
// renewal count can recover, and the node stays engaged until the release
// rule lets go one RecountInterval after it engaged (judged by
// sp-recount-release in scale-down, not here); the verdict says so in its
// details.
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
		late := releasedAt.IsZero() || releasedAt.Sub(heal) > th.SPRelease
		due := heal.Add(th.SPRelease)
		if !o.QuietEnd.IsZero() && due.After(o.QuietEnd) {
			due = o.QuietEnd // the clients' teardown is no recovery to judge
		}
		shrank := false
		if expected, live := expectedAt(o, n, due), liveClients(o, due); late && expected > 0 && float64(live) < spPercent*float64(expected) {
			shrank = true
			v.Details = append(v.Details, fmt.Sprintf("%s not judged on its release: %d clients alive when it was due "+
				"(%s), below %.0f%% of the %d it expected", n, live, o.offset(due), 100*spPercent, expected))
		}
		switch {
		case shrank:
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

// spPercent is the renewal share below which the nodes engage
// (actors.Config.RenewalPercentThreshold, which the simulations leave at its
// default).
var spPercent = actors.DefaultConfig("sim").RenewalPercentThreshold

// expectedAt is how many clients node n expected at its last probe at or
// before t (0 if none).
func expectedAt(o *Observations, n string, t time.Time) int {
	expected := 0
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.After(t) {
			break
		}
		if sp, ok := p.SP[n]; ok {
			expected = sp.Expected
		}
	}
	return expected
}

// liveClients counts the clients running at t whose registration had been
// acknowledged by then.
func liveClients(o *Observations, t time.Time) int {
	n := 0
	for _, l := range o.Instances {
		if lf := l.lifeAt(t); lf != nil && !lf.Acked.IsZero() && !lf.Acked.After(t) {
			n++
		}
	}
	return n
}
