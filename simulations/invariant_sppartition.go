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
// threshold of the fleet its engagement protects (Protected: the clients
// it expected when it engaged, less a release's silent leases; Expected
// for a node that reports none): when fewer than RenewalPercentThreshold
// of them are alive (clients of that fleet died silently while it was
// engaged, which it rightly kept), the fault still silences too many of
// them and the node stays engaged until the release rule lets go one
// RecountInterval after it engaged (judged by sp-recount-release in
// scale-down, not here); the verdict says so in its details. The clients
// that registered and died while it was engaged are no excuse: the
// recovery release lets go whatever they were.
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
		if protected, live := protectedAt(o, n, due), liveClients(o, due); late && protected > 0 && float64(live) < spPercent*float64(protected) {
			shrank = true
			v.Details = append(v.Details, fmt.Sprintf("%s not judged on its release: %d clients alive when it was due "+
				"(%s), below %.0f%% of the %d its engagement protected", n, live, o.offset(due), 100*spPercent, protected))
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

// protectedAt is the fleet node n's engagement protected at its last probe
// at or before t: its Protected figure, or Expected when it reports none
// (not engaged, or a node of the release before it); 0 if no probe.
func protectedAt(o *Observations, n string, t time.Time) int {
	protected := 0
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.After(t) {
			break
		}
		if sp, ok := p.SP[n]; ok {
			protected = sp.Protected
			if protected == 0 {
				protected = sp.Expected
			}
		}
	}
	return protected
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
