package simulations

// Invariant checkers
//
// Each checker reads the Observations of one run and returns a Verdict:
// PASS or FAIL against an explicit threshold, the figure it measured and,
// when it fails, the evidence (which instance, which node, when). The
// checkers are plain functions of plain data, so a test can hand them a
// made-up history (a resurrected instance, a node that never converges) and
// see them fail.
//
// Times in details are offsets from the scenario's start ("+12.4s").

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Names of the invariants, as scenarios list them.
const (
	InvNoMissingRenewer = "no-missing-renewer" // property 1
	InvConvergence      = "convergence"        // property 2
	InvNoResurrection   = "no-resurrection"    // property 3
	InvMembership       = "membership"         // property 4
	InvSelfPreservation = "self-preservation"  // property 5
)

// Verdict is one invariant's judgement of one run.
type Verdict struct {
	// Invariant is the checker's name; Property the number of the property
	// in ARCHITECTURE.md it stands for.
	Invariant string
	Property  int
	// Threshold states the bound; Measured the figure observed.
	Threshold string
	Measured  string
	Pass      bool
	// Details are the evidence: the worst cases, and on failure what broke.
	Details []string
}

// Checker judges observations against thresholds.
type Checker func(o *Observations, th Thresholds) Verdict

// Checkers maps invariant names to their checkers.
var Checkers = map[string]Checker{
	InvNoMissingRenewer: CheckNoMissingRenewer,
	InvConvergence:      CheckConvergence,
	InvNoResurrection:   CheckNoResurrection,
	InvMembership:       CheckMembership,
	InvSelfPreservation: CheckSelfPreservation,
}

// maxDetails caps the evidence lines of a verdict.
const maxDetails = 8

// offset formats t as an offset from the scenario's start.
func (o *Observations) offset(t time.Time) string {
	return fmt.Sprintf("+%.1fs", t.Sub(o.Start).Seconds())
}

// sampleIndex groups the samples by node and application, in time order.
func (o *Observations) sampleIndex() map[[2]string][]*Sample {
	idx := map[[2]string][]*Sample{}
	for i := range o.Samples {
		s := &o.Samples[i]
		k := [2]string{s.Node, s.App}
		idx[k] = append(idx[k], s)
	}
	return idx
}

// sortedInstances returns the instance logs ordered by id.
func (o *Observations) sortedInstances() []*InstanceLog {
	out := make([]*InstanceLog, 0, len(o.Instances))
	for _, l := range o.Instances {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// ---- 1. a renewing client is never missing where it can look ----------------

// missStreak is a run of samples in which a node the client could reach did
// not list the client's instance.
type missStreak struct {
	id, node string
	from     time.Time
	d        time.Duration
	censored bool // ended by the node becoming unreachable, or the client stopping
}

// missStreaks computes the runs of misses of CheckNoMissingRenewer, longest
// first, and how many samples were eligible.
func (o *Observations) missStreaks() ([]missStreak, int) {
	idx := o.sampleIndex()
	gap := 3 * max(o.SampleInterval, 50*time.Millisecond)
	var streaks []missStreak
	evaluated := 0
	for _, l := range o.sortedInstances() {
		for _, lf := range l.Lives {
			if lf.Acked.IsZero() {
				continue
			}
			end := lf.End
			if end.IsZero() {
				end = o.End
			}
			for _, nodeName := range o.Nodes {
				var (
					open     bool
					from     time.Time
					last     time.Time // last eligible sample
					lastInc  int
					haveLast bool
				)
				closeAt := func(t time.Time, censored bool) {
					if open {
						streaks = append(streaks, missStreak{id: l.ID, node: nodeName, from: from, d: t.Sub(from), censored: censored})
						open = false
					}
				}
				for _, s := range idx[[2]string{nodeName, l.App}] {
					if s.At.Before(lf.Acked) {
						continue
					}
					if !s.At.Before(end) {
						break
					}
					if haveLast && (s.At.Sub(last) > gap || s.Incarnation != lastInc) {
						closeAt(last, true)
					}
					if s.IDs == nil || !s.Ready || !s.Topo.Reachable(l.Location, s.Node) {
						closeAt(s.At, true)
						haveLast = false
						continue
					}
					evaluated++
					last, lastInc, haveLast = s.At, s.Incarnation, true
					if s.IDs[l.ID] {
						closeAt(s.At, false)
					} else if !open {
						open, from = true, s.At
					}
				}
				if haveLast {
					closeAt(last, true)
				}
			}
		}
	}
	sort.Slice(streaks, func(i, j int) bool { return streaks[i].d > streaks[j].d })
	return streaks, evaluated
}

// CheckNoMissingRenewer checks property 1: while a client runs (from its
// first successful registration until it stops), every node it can reach
// that is ready lists its instance, except for runs of samples no longer
// than Thresholds.MaxMissing. A run ends when the instance shows up again;
// one cut short by the node going out of reach (partition, crash, a gap in
// the samples) or the client stopping counts for as long as it was seen.
func CheckNoMissingRenewer(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvNoMissingRenewer, Property: 1,
		Threshold: fmt.Sprintf("a renewing client's instance missing from a reachable, ready node for at most %s", secs(th.MaxMissing))}
	streaks, evaluated := o.missStreaks()
	var worst time.Duration
	over := 0
	for _, st := range streaks {
		worst = max(worst, st.d)
		if st.d > th.MaxMissing {
			over++
		}
	}
	v.Pass = over == 0 && evaluated > 0
	v.Measured = fmt.Sprintf("max missing %s; %d runs of misses (%d over the bound) in %d eligible samples",
		secs(worst), len(streaks), over, evaluated)
	if evaluated == 0 {
		v.Details = append(v.Details, "no eligible samples: nothing was observed")
	}
	for i, st := range streaks {
		if i == maxDetails || st.d == 0 {
			break
		}
		how := "until it showed up again"
		if st.censored {
			how = "until the node went out of reach or the client stopped"
		}
		v.Details = append(v.Details, fmt.Sprintf("%s missing on %s from %s for %s (%s)", st.id, st.node, o.offset(st.from), secs(st.d), how))
	}
	return v
}

// ---- 2. convergence ----------------------------------------------------------

// CheckConvergence checks property 2: within Thresholds.Convergence of the
// end of the faults (of the churn, when there were none), every running
// node is ready and holds the same registry (apps hashcode and every
// instance's version), and the nodes still agree at the end of the quiet
// phase (some probe of its last two seconds converged).
func CheckConvergence(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvConvergence, Property: 2,
		Threshold: fmt.Sprintf("all running nodes hold the same registry within %s of the end of the faults, and still at the end", secs(th.Convergence))}
	from := o.settled()
	var first *Probe
	stillAtEnd := false
	var last *Probe
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(from) || (!o.QuietEnd.IsZero() && p.At.After(o.QuietEnd)) {
			continue
		}
		last = p
		if p.converged() {
			if first == nil {
				first = p
			}
			if !o.QuietEnd.IsZero() && o.QuietEnd.Sub(p.At) <= 2*time.Second {
				stillAtEnd = true
			}
		}
	}
	if first == nil {
		v.Measured = "never converged"
		v.Details = append(v.Details, describeDivergence(last)...)
		return v
	}
	d := first.At.Sub(from)
	v.Pass = d <= th.Convergence && stillAtEnd
	v.Measured = fmt.Sprintf("converged %s after the faults (at %s), %d instances", secs(d), o.offset(first.At),
		strings.Count(first.Fingerprint[first.Up[0]], "|"))
	if !stillAtEnd {
		v.Measured += "; diverged again before the end"
		v.Details = append(v.Details, describeDivergence(last)...)
	}
	return v
}

// describeDivergence groups the nodes of p by the registry they hold.
func describeDivergence(p *Probe) []string {
	if p == nil {
		return []string{"no probe after the faults"}
	}
	groups := map[string][]string{}
	for _, n := range p.Up {
		fp := p.Fingerprint[n]
		if !p.Ready[n] {
			fp = "(not ready) " + fp
		}
		groups[fp] = append(groups[fp], n)
	}
	var out []string
	for fp, nodes := range groups {
		hash := fp
		if i := strings.IndexByte(hash, '|'); i >= 0 {
			hash = hash[:i]
		}
		out = append(out, fmt.Sprintf("%s hold %d instances, hashcode %q", strings.Join(nodes, ","), strings.Count(fp, "|"), hash))
	}
	sort.Strings(out)
	return out
}

// ---- 3. no resurrection ------------------------------------------------------

// CheckNoResurrection checks property 3 in three ways. (1) Once a client
// has stopped (cancelled, or died and was evicted) and a ready node that
// listed its instance has been seen without it, that node (the same
// process) never lists the instance again unless a client registered it
// again. (2) No node makes a new version of the instance while no client
// runs for it (see republications): such a version overrides the
// cancel's or eviction's tombstone everywhere, even if the sampler never
// caught the instance absent. (3) Every instance whose client cancelled is
// absent from every node's last sample.
func CheckNoResurrection(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvNoResurrection, Property: 3,
		Threshold: "0 instances served again by a node that had dropped them, 0 new versions made by a node while no client ran for the instance, 0 cancelled instances left at the end"}
	idx := o.sampleIndex()
	const inflight = 2 * time.Second // a read sent this long before a registration may already see it
	var back, left []string
	stopped, cancelled := 0, 0
	for _, l := range o.sortedInstances() {
		if len(l.Lives) == 0 || l.Lives[0].End.IsZero() {
			continue
		}
		stopped++
		lastLife := l.Lives[len(l.Lives)-1]
		if lastLife.Deregistered && !lastLife.End.IsZero() {
			cancelled++
		}
		for _, nodeName := range o.Nodes {
			var absentAt time.Time
			// hadIt: this process of the node has listed the instance;
			// seenAbsent: and has since dropped it, after the client
			// stopped. A node that never had it (the other side of a
			// partition) may learn of it late: that is not a resurrection.
			hadIt, seenAbsent, inc := false, false, 0
			var final *Sample
			for _, s := range idx[[2]string{nodeName, l.App}] {
				if s.Incarnation != inc {
					hadIt, seenAbsent, inc = false, false, s.Incarnation
				}
				if s.IDs == nil || !s.Ready {
					continue
				}
				present := s.IDs[l.ID]
				if l.lifeAt(s.At) != nil || restartsWithin(l, s.At, inflight) || s.At.Before(l.Lives[0].End) {
					hadIt = hadIt || present
					seenAbsent = false
					continue
				}
				final = s
				if !present {
					if hadIt && !seenAbsent {
						absentAt = s.At
						seenAbsent = true
					}
					continue
				}
				hadIt = true
				if seenAbsent {
					died := lifeBefore(l, s.At)
					d := fmt.Sprintf("%s back on %s at %s after it was gone at %s (client stopped at %s, cancelled=%v)",
						l.ID, nodeName, o.offset(s.At), o.offset(absentAt), o.offset(died.End), died.Deregistered)
					if at, author, ok := o.versionOn(nodeName, l.App, l.ID, s.At); ok && at.After(died.End) {
						d += fmt.Sprintf("; %s %s with a version stamped at %s, after its client stopped", RepublishedSignature, author, o.offset(at))
						if recv, ok := o.copyBefore(author, l.App, l.ID, at); ok {
							d += fmt.Sprintf(", while %s held a copy from another node that it had received at %s", author, o.offset(recv))
							if o.LeaseDuration > 0 && at.Sub(recv) < o.LeaseDuration {
								d += " (" + FreshCopySignature + ")"
							}
						}
					}
					back = append(back, d)
					seenAbsent = false
				}
			}
			if final != nil && lastLife.Deregistered && !lastLife.End.IsZero() && final.At.After(lastLife.End) && final.IDs[l.ID] {
				left = append(left, fmt.Sprintf("%s still on %s at %s, cancelled at %s", l.ID, nodeName, o.offset(final.At), o.offset(lastLife.End)))
			}
		}
	}
	var republished []string
	for _, l := range o.sortedInstances() {
		republished = append(republished, o.republications(l)...)
	}
	v.Pass = len(back) == 0 && len(left) == 0 && len(republished) == 0
	v.Measured = fmt.Sprintf("%d resurrections seen served again, %d new versions made by a node after the client stopped, "+
		"%d cancelled instances left, over %d stopped instances (%d cancelled)",
		len(back), len(republished), len(left), stopped, cancelled)
	for _, d := range append(append(republished, back...), left...) {
		if len(v.Details) == maxDetails {
			break
		}
		v.Details = append(v.Details, d)
	}
	return v
}

// RepublishedSignature marks a resurrection whose record carries a version
// made after the client stopped, by a node, not a client: the node
// published the instance anew on its own.
const RepublishedSignature = "re-published by"

// FreshCopySignature marks a re-publication by a node whose copy of the
// instance was less than one lease duration old: the signature of BUG-1.
const FreshCopySignature = "less than a lease before"

// versionIn parses the version of app/id out of a fingerprint: its HLC
// clock and its author.
func versionIn(fp, app, id string) (clock uint64, author string, ok bool) {
	key := "|" + app + "/" + id + "@"
	k := strings.Index(fp, key)
	if k < 0 {
		return 0, "", false
	}
	rest := fp[k+len(key):]
	if e := strings.IndexByte(rest, '|'); e >= 0 {
		rest = rest[:e]
	}
	c, author, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, "", false
	}
	clock, err := strconv.ParseUint(c, 10, 64)
	return clock, author, err == nil
}

// hlcTime is the wall-clock part of an HLC reading.
func hlcTime(clock uint64) time.Time { return time.UnixMilli(int64(clock >> 16)) }

// versionOn returns the version of app/id that node held in the first probe
// at or after t (within two seconds): its HLC time and its author.
func (o *Observations) versionOn(node, app, id string, t time.Time) (time.Time, string, bool) {
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(t) {
			continue
		}
		if p.At.After(t.Add(2 * time.Second)) {
			break
		}
		if clock, author, ok := versionIn(p.Fingerprint[node], app, id); ok {
			return hlcTime(clock), author, true
		}
	}
	return time.Time{}, "", false
}

// copyBefore looks at what author held just before it published its own
// version of app/id at stamp: if that was a copy made by another node, it
// returns when author started holding that copy (the first probe of the
// run of probes showing it).
func (o *Observations) copyBefore(author, app, id string, stamp time.Time) (time.Time, bool) {
	last := -1
	for i := range o.Probes {
		if o.Probes[i].At.Before(stamp) {
			last = i
		}
	}
	var recv time.Time
	for i := last; i >= 0; i-- {
		p := &o.Probes[i]
		fp, up := p.Fingerprint[author]
		if !up {
			break
		}
		clock, by, ok := versionIn(fp, app, id)
		if !ok || by == author || !hlcTime(clock).Before(stamp) {
			break
		}
		recv = p.At
	}
	return recv, !recv.IsZero()
}

// republications finds versions of l's instance that a node made while no
// client ran for it: after a life ended and before the next began. A node
// may legitimately do so within a lease of the client's last renewal there
// (the owner evicted on old information, the renewal wins); any other such
// version brings back an instance that was gone.
func (o *Observations) republications(l *InstanceLog) []string {
	type ver struct {
		clock  uint64
		author string
	}
	var out []string
	seen := map[ver]bool{}
	for i, lf := range l.Lives {
		if lf.End.IsZero() {
			continue
		}
		var next time.Time
		if i+1 < len(l.Lives) {
			next = l.Lives[i+1].Start
		}
		for pi := range o.Probes {
			p := &o.Probes[pi]
			if p.At.Before(lf.End) || (!next.IsZero() && p.At.After(next)) {
				continue
			}
			for _, n := range p.Up {
				clock, author, ok := versionIn(p.Fingerprint[n], l.App, l.ID)
				if !ok || seen[ver{clock, author}] {
					continue
				}
				stamp := hlcTime(clock)
				if !stamp.After(lf.End) || (!next.IsZero() && !stamp.Before(next)) {
					continue
				}
				seen[ver{clock, author}] = true
				if r, ok := lf.Renewed[author]; ok && r.After(stamp.Add(-o.LeaseDuration-50*time.Millisecond)) {
					continue // a renewal there the owner had not seen
				}
				d := fmt.Sprintf("%s %s %s with a version stamped at %s, %s after its client stopped (cancelled=%v), with no registration since; first seen on %s at %s",
					l.ID, RepublishedSignature, author, o.offset(stamp), secs(stamp.Sub(lf.End)), lf.Deregistered, n, o.offset(p.At))
				if recv, ok := o.copyBefore(author, l.App, l.ID, stamp); ok {
					d += fmt.Sprintf("; %s held a copy made by another node since %s", author, o.offset(recv))
					if o.LeaseDuration > 0 && stamp.Sub(recv) < o.LeaseDuration {
						d += " (" + FreshCopySignature + ")"
					}
				}
				out = append(out, d)
			}
		}
	}
	return out
}

// restartsWithin reports whether a life of l starts in (t, t+d].
func restartsWithin(l *InstanceLog, t time.Time, d time.Duration) bool {
	for _, lf := range l.Lives {
		if lf.Start.After(t) && !lf.Start.After(t.Add(d)) {
			return true
		}
	}
	return false
}

// lifeBefore returns the last life of l that ended before t.
func lifeBefore(l *InstanceLog, t time.Time) Life {
	var out Life
	for _, lf := range l.Lives {
		if !lf.End.IsZero() && !lf.End.After(t) {
			out = lf
		}
	}
	return out
}

// ---- 4. membership -----------------------------------------------------------

// CheckMembership checks property 4: within Thresholds.Membership of the
// end of the faults, every running node sees exactly the running nodes as
// live members (alive or suspect).
func CheckMembership(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvMembership, Property: 4,
		Threshold: fmt.Sprintf("every running node sees every other as live within %s of the end of the faults", secs(th.Membership))}
	from := o.settled()
	var last *Probe
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(from) {
			continue
		}
		last = p
		if p.membersComplete() {
			d := p.At.Sub(from)
			v.Pass = d <= th.Membership
			v.Measured = fmt.Sprintf("complete %s after the faults (at %s), %d nodes", secs(d), o.offset(p.At), len(p.Up))
			return v
		}
	}
	v.Measured = "never complete"
	if last != nil {
		for _, n := range last.Up {
			v.Details = append(v.Details, fmt.Sprintf("%s sees %s", n, strings.Join(last.Live[n], ",")))
		}
	}
	return v
}

// ---- 5. self-preservation ----------------------------------------------------

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
	var pre *Probe
	for i := range o.Probes {
		if o.Probes[i].At.Before(crash) {
			pre = &o.Probes[i]
		}
	}
	if pre == nil {
		v.Measured = "no probe before the failure"
		return v
	}
	var affected []string
	for _, n := range pre.Up {
		if sp, ok := pre.SP[n]; ok && sp.Enabled && sp.Expected > 0 {
			affected = append(affected, n)
		}
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
		if engagedAt.IsZero() {
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s never engaged self-preservation", n))
			fig += ", never engaged"
		} else {
			d := engagedAt.Sub(crash)
			worstEngage = max(worstEngage, d)
			fig += ", engaged after " + secs(d)
			if d > th.SPEngage {
				ok = false
				v.Details = append(v.Details, fmt.Sprintf("%s engaged only %s after the failure", n, secs(d)))
			}
		}
		if flapped {
			ok = false
		}
		if releasedAt.IsZero() {
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s never released self-preservation after the recovery", n))
			fig += ", never released"
		} else {
			d := releasedAt.Sub(recov)
			worstRelease = max(worstRelease, d)
			fig += ", released after " + secs(d)
			if d > th.SPRelease {
				ok = false
				v.Details = append(v.Details, fmt.Sprintf("%s released only %s after the recovery", n, secs(d)))
			}
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
	v.Measured = fmt.Sprintf("engaged within %s (worst node), released within %s; %d/%d silent instances survived (%.0f%%); "+
		"evicted before engagement %d, after %d",
		secs(worstEngage), secs(worstRelease), survivors, len(o.CrashedIDs), share*100, evictedBefore, evictedAfter)
	v.Details = append(v.Details, figures...)
	return v
}

// ---- figures -----------------------------------------------------------------

// SilentFigures describe the eviction of the instances whose clients died
// without cancelling and never came back.
type SilentFigures struct {
	// Died counts those instances (clients that died before the teardown).
	Died int
	// Evicted counts those gone from every node's last sample before the
	// teardown.
	Evicted int
	// MaxLatency is the longest time from a client's death until the first
	// sample of a node without its instance, over the evicted ones.
	MaxLatency time.Duration
}

// silentFigures computes SilentFigures from the samples. It is a figure,
// not an invariant: the lease duration plus the eviction interval is the
// expected latency, but self-preservation may rightly stretch it.
func silentFigures(o *Observations) SilentFigures {
	var f SilentFigures
	idx := o.sampleIndex()
	for _, l := range o.sortedInstances() {
		if len(l.Lives) == 0 {
			continue
		}
		lf := l.Lives[len(l.Lives)-1]
		if lf.Deregistered || lf.End.IsZero() || lf.Acked.IsZero() || (!o.QuietEnd.IsZero() && !lf.End.Before(o.QuietEnd)) {
			continue
		}
		f.Died++
		gone, seen := true, false
		var latency time.Duration
		for _, n := range o.Nodes {
			var last *Sample
			var firstAbsent time.Time
			for _, s := range idx[[2]string{n, l.App}] {
				if s.At.Before(lf.End) || s.IDs == nil || !s.Ready || (!o.QuietEnd.IsZero() && s.At.After(o.QuietEnd)) {
					continue
				}
				last = s
				if s.IDs[l.ID] {
					firstAbsent = time.Time{}
				} else if firstAbsent.IsZero() {
					firstAbsent = s.At
				}
			}
			if last == nil {
				continue
			}
			seen = true
			if last.IDs[l.ID] {
				gone = false
			} else {
				latency = max(latency, firstAbsent.Sub(lf.End))
			}
		}
		if seen && gone {
			f.Evicted++
			f.MaxLatency = max(f.MaxLatency, latency)
		}
	}
	return f
}

// SPFigures describe self-preservation over a run, on the nodes that
// expected renewals, from their first counted renewal window until the
// teardown.
type SPFigures struct {
	// EngagedShare is the share of such node-probes with self-preservation
	// engaged (leases may not expire).
	EngagedShare float64
	// Transitions counts engage and release switches.
	Transitions int
}

// spFigures computes SPFigures from the probes.
func spFigures(o *Observations) SPFigures {
	var f SPFigures
	counted := map[string]bool{}
	last := map[string]bool{}
	engaged, total := 0, 0
	for i := range o.Probes {
		p := &o.Probes[i]
		if !o.QuietEnd.IsZero() && p.At.After(o.QuietEnd) {
			break
		}
		for _, n := range p.Up {
			sp, ok := p.SP[n]
			if !ok || !sp.Enabled {
				continue
			}
			if sp.RenewsLastWindow > 0 {
				counted[n] = true
			}
			if !counted[n] || sp.Expected == 0 {
				continue
			}
			total++
			if !sp.ExpirationEnabled {
				engaged++
			}
			if prev, seen := last[n]; seen && prev != sp.ExpirationEnabled {
				f.Transitions++
			}
			last[n] = sp.ExpirationEnabled
		}
	}
	if total > 0 {
		f.EngagedShare = float64(engaged) / float64(total)
	}
	return f
}
