package simulations

// Property 5 around a mass client failure: self-preservation holds the dead
// clients' leases until they come back (self-preservation); and the
// readings of self-preservation the other checkers of property 5 share.

import (
	"fmt"
	"strings"
	"time"

	"github.com/heureka/heureka/actors"
)

// CheckSelfPreservation checks property 5 around a mass client failure:
// every node that expected renewals before the failure engages
// self-preservation within Thresholds.SPEngage and stays engaged until the
// clients come back; no failed client's instance is evicted once every
// such node has engaged; the nodes release within Thresholds.SPRelease of
// the clients' return; and at least Thresholds.SPMinSurvivors of the
// failed clients' instances are still registered on every node when they
// return.
func CheckSelfPreservation(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvSelfPreservation, Property: 5,
		Threshold: fmt.Sprintf("engages within %s of the renewals collapsing and holds, evicting nothing more; releases within %s of their recovery; ≥ %.0f%% of the silent instances survive",
			secs(th.SPEngage), secs(th.SPRelease), th.SPMinSurvivors*100)}
	crash, recov := o.ClientsCrashed, o.ClientsRecovered
	if crash.IsZero() || recov.IsZero() {
		v.Measured = "no mass client failure in this run"
		return v
	}
	pre, affected := spAffected(o, crash)
	if pre == nil {
		v.Measured = "no probe before the failure"
		return v
	}
	if len(affected) == 0 {
		v.Measured = "no node expected renewals before the failure"
		return v
	}
	// preWindow is how far before the failure the checker looks for
	// self-preservation engaged in a healthy cluster (it should not be).
	const preWindow = 2 * time.Second
	ok := true
	var worstEngage, worstRelease time.Duration
	var allEngaged time.Time // when the last affected node engaged; zero if one never did
	var figures []string
	for _, n := range affected {
		var engagedAt, releasedAt time.Time
		flapped := false
		preEngaged, preProbes := 0, 0
		for i := range o.Probes {
			p := &o.Probes[i]
			sp, present := p.SP[n]
			if !present || (!o.QuietEnd.IsZero() && p.At.After(o.QuietEnd)) {
				continue
			}
			switch {
			case p.At.Before(crash):
				if crash.Sub(p.At) <= preWindow {
					preProbes++
					if !sp.ExpirationEnabled {
						preEngaged++
					}
				}
			case p.At.Before(recov):
				if engagedAt.IsZero() {
					if !sp.ExpirationEnabled {
						engagedAt = p.At
					}
				} else if sp.ExpirationEnabled && !flapped {
					flapped = true
					v.Details = append(v.Details, fmt.Sprintf("%s released self-preservation at %s while the clients were still down (renews %d, threshold %d)",
						n, o.offset(p.At), sp.RenewsLastWindow, sp.Threshold))
				}
			default:
				if releasedAt.IsZero() && sp.ExpirationEnabled {
					releasedAt = p.At
				}
			}
		}
		st := pre.SP[n]
		fig := fmt.Sprintf("%s: expected %d, threshold %d", n, st.Expected, st.Threshold)
		if preProbes > 0 && preEngaged > 0 {
			fig += fmt.Sprintf(", already engaged in %d%% of the probes of the %v before", preEngaged*100/preProbes, preWindow)
		}
		if engagedAt.After(allEngaged) {
			allEngaged = engagedAt
		}
		engage := spStep{node: n, what: "engaged", since: crash, after: "the failure", bound: th.SPEngage}
		if !engage.judge(&v, &fig, engagedAt, &worstEngage) {
			ok = false
		}
		if flapped {
			ok = false
		}
		release := spStep{node: n, what: "released", since: recov, after: "the recovery", neverAfter: true, bound: th.SPRelease}
		if !release.judge(&v, &fig, releasedAt, &worstRelease) {
			ok = false
		}
		figures = append(figures, fig)
	}
	// Survivors: in each node's last ready sample before the recovery.
	lastBefore := map[[2]string]*Sample{}
	for i := range o.Samples {
		s := &o.Samples[i]
		if s.At.Before(recov) && s.At.After(crash) && s.Ready && s.IDs != nil {
			lastBefore[[2]string{s.Node, s.App}] = s
		}
	}
	survivors := 0
	for _, id := range o.CrashedIDs {
		l := o.Instances[id]
		if l == nil {
			continue
		}
		everywhere, seen := true, false
		for _, n := range o.Nodes {
			if s := lastBefore[[2]string{n, l.App}]; s != nil {
				seen = true
				everywhere = everywhere && s.IDs[id]
			}
		}
		if seen && everywhere {
			survivors++
		}
	}
	share := 0.0
	if len(o.CrashedIDs) > 0 {
		share = float64(survivors) / float64(len(o.CrashedIDs))
	}
	if share < th.SPMinSurvivors {
		ok = false
		v.Details = append(v.Details, fmt.Sprintf("only %d of %d silent instances still registered everywhere when the clients came back", survivors, len(o.CrashedIDs)))
	}
	// Evictions: when each silent instance first went missing from a ready
	// node. Before every owner had engaged, an eviction is Eureka's
	// behaviour (leases expire before the first low-count window closes);
	// after, it is what self-preservation exists to prevent.
	const slack = 200 * time.Millisecond // two probes: the eviction may predate its sighting
	evictedBefore, evictedAfter := 0, 0
	for _, id := range o.CrashedIDs {
		l := o.Instances[id]
		if l == nil {
			continue
		}
		key := "|" + l.App + "/" + id + "@"
	probes:
		for i := range o.Probes {
			p := &o.Probes[i]
			if !p.At.After(crash) || !p.At.Before(recov) {
				continue
			}
			for _, n := range p.Up {
				if p.Ready[n] && !strings.Contains(p.Fingerprint[n], key) {
					if !allEngaged.IsZero() && p.At.After(allEngaged.Add(slack)) {
						evictedAfter++
						ok = false
						v.Details = append(v.Details, fmt.Sprintf("%s evicted (missing on %s at %s) after self-preservation had engaged everywhere (%s)",
							id, n, o.offset(p.At), o.offset(allEngaged)))
					} else {
						evictedBefore++
					}
					break probes
				}
			}
		}
	}
	v.Pass = ok
	v.Key = keySecs("release after recovery", worstRelease)
	v.Measured = fmt.Sprintf("engaged within %s (worst node), released within %s; %d/%d silent instances survived (%.0f%%); "+
		"evicted before engagement %d, after %d",
		secs(worstEngage), secs(worstRelease), survivors, len(o.CrashedIDs), share*100, evictedBefore, evictedAfter)
	v.Details = append(v.Details, figures...)
	return v
}

// spEngaged reports whether sp shows self-preservation holding expired
// leases: on, renewals expected, and not above the threshold.
func spEngaged(sp actors.SelfPreservationStatus) bool {
	return sp.Enabled && sp.Expected > 0 && !sp.ExpirationEnabled
}

// spReading describes one node's self-preservation reading for evidence.
func spReading(sp actors.SelfPreservationStatus) string {
	out := fmt.Sprintf("renews %d (local %d + peers %d, %d members), threshold %d, expected %d",
		sp.RenewsLastWindow, sp.LocalRenewals, sp.PeerRenewals, sp.Members, sp.Threshold, sp.Expected)
	if sp.Reason != "" {
		out += ": " + sp.Reason
	}
	return out
}

// spAffected returns the last probe before t and the nodes that, in it,
// had self-preservation on and expected renewals: those a collapse of the
// renewals at t should make engage. pre is nil when no probe came before t.
func spAffected(o *Observations, t time.Time) (pre *Probe, affected []string) {
	for i := range o.Probes {
		if o.Probes[i].At.Before(t) {
			pre = &o.Probes[i]
		}
	}
	if pre == nil {
		return nil, nil
	}
	for _, n := range pre.Up {
		if sp, ok := pre.SP[n]; ok && sp.Enabled && sp.Expected > 0 {
			affected = append(affected, n)
		}
	}
	return pre, affected
}

// spStep is one step of a node's self-preservation that CheckSelfPreservation
// expects: it engages after the failure, or releases after the recovery,
// within bound of since.
type spStep struct {
	node, what string    // the node; "engaged" or "released"
	since      time.Time // the failure or the recovery
	after      string    // what since is, for the details
	neverAfter bool      // whether a step that never came names since too
	bound      time.Duration
}

// judge judges the step that came at at (zero: never): it adds the delay
// to fig, raises worst to it, puts a missing or late step in v's details
// and reports whether the step came within the bound.
func (st spStep) judge(v *Verdict, fig *string, at time.Time, worst *time.Duration) bool {
	if at.IsZero() {
		never := fmt.Sprintf("%s never %s self-preservation", st.node, st.what)
		if st.neverAfter {
			never += " after " + st.after
		}
		v.Details = append(v.Details, never)
		*fig += ", never " + st.what
		return false
	}
	d := at.Sub(st.since)
	*worst = max(*worst, d)
	*fig += ", " + st.what + " after " + secs(d)
	if d > st.bound {
		v.Details = append(v.Details, fmt.Sprintf("%s %s only %s after %s", st.node, st.what, secs(d), st.after))
		return false
	}
	return true
}
