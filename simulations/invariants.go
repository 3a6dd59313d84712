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
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/heureka/heureka/actors"
)

// Names of the invariants, as scenarios list them.
const (
	InvNoMissingRenewer = "no-missing-renewer" // property 1
	InvConvergence      = "convergence"        // property 2
	InvNoResurrection   = "no-resurrection"    // property 3
	InvMembership       = "membership"         // property 4
	InvSelfPreservation = "self-preservation"  // property 5
	InvSPRecount        = "sp-recount-release" // property 5
	InvSPQuiet          = "sp-quiet"           // property 5
	InvEvictionLatency  = "eviction-latency"   // property 5
	InvVisibility       = "visibility"         // property 2
	InvTombstoneGC      = "tombstone-ttl"      // property 3
	InvRenewerKept      = "renewer-kept"       // property 1
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
	// Key is the verdict's key figure, for the summaries over many seeds
	// (RESULTS.md).
	Key KeyFigure
}

// KeyFigure is one number a checker measured: the one to compare across
// runs (the worst latency, a share, a count).
type KeyFigure struct {
	// Name says what it is ("max missing", "p99 visibility").
	Name string
	// Value is in Unit; NaN when the run gave none (never converged).
	Value float64
	// Unit is "s", "%" or "" (a count).
	Unit string
}

// keySecs is a key figure in seconds.
func keySecs(name string, d time.Duration) KeyFigure {
	return KeyFigure{Name: name, Value: d.Seconds(), Unit: "s"}
}

// noKey is the key figure of a run that produced no value.
func noKey(name, unit string) KeyFigure { return KeyFigure{Name: name, Value: math.NaN(), Unit: unit} }

// Checker judges observations against thresholds.
type Checker func(o *Observations, th Thresholds) Verdict

// Checkers maps invariant names to their checkers.
var Checkers = map[string]Checker{
	InvNoMissingRenewer: CheckNoMissingRenewer,
	InvConvergence:      CheckConvergence,
	InvNoResurrection:   CheckNoResurrection,
	InvMembership:       CheckMembership,
	InvSelfPreservation: CheckSelfPreservation,
	InvSPRecount:        CheckSPRecountRelease,
	InvSPQuiet:          CheckSPQuiet,
	InvEvictionLatency:  CheckEvictionLatency,
	InvVisibility:       CheckVisibility,
	InvTombstoneGC:      CheckTombstoneTTL,
	InvRenewerKept:      CheckRenewerKept,
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
					if s.IDs == nil || !s.Ready || !s.Topo.Reachable(l.Location, s.Node) || s.Topo.IsStalled(s.Node) {
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
	v.Key = keySecs("max missing", worst)
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

// ---- 1b. no renewing client is evicted, even for a moment -------------------

// CheckRenewerKept checks property 1 where sampling cannot: no node evicts
// the instance of a client that keeps renewing, even when the eviction is
// overruled at once. An eviction that a renewal overrules (the node the
// client renews on publishes the instance anew, with a version above the
// eviction's tombstone) removes the instance from every other node for the
// few milliseconds the two messages are apart, too short for the sampler,
// but it leaves a trace: a version of the instance made while the client
// ran that no registration of the client made. So: every version of a
// running client's instance seen in a probe must be stamped within one of
// its registrations (sent … acknowledged, ± 100ms). Scenarios with
// partitions do not use it: a node cut off from a client may evict it, and
// the heal then overrules that eviction.
func CheckRenewerKept(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvRenewerKept, Property: 1,
		Threshold: "0 versions of a running client's instance that none of its registrations made (an eviction of a renewing client, overruled)",
		Key:       KeyFigure{Name: "evictions of renewing clients"}}
	const slack = 100 * time.Millisecond
	type ver struct {
		clock  uint64
		author string
	}
	var bad []string
	checked := 0
	for _, l := range o.sortedInstances() {
		seen := map[ver]bool{}
		for i := range l.Lives {
			lf := &l.Lives[i]
			if lf.Acked.IsZero() {
				continue
			}
			checked++
			end := lf.End
			if end.IsZero() {
				end = o.End
			}
			for pi := range o.Probes {
				p := &o.Probes[pi]
				if p.At.Before(lf.Acked) || p.At.After(end.Add(time.Second)) {
					continue
				}
				for _, n := range p.Up {
					clock, author, ok := versionIn(p.Fingerprint[n], l.App, l.ID)
					if !ok || seen[ver{clock, author}] {
						continue
					}
					seen[ver{clock, author}] = true
					stamp := hlcTime(clock)
					if !stamp.After(lf.Start.Add(-slack)) || !stamp.Before(end) {
						continue // an earlier life's, or after the client stopped (no-resurrection's)
					}
					registered := false
					for _, r := range lf.Registrations {
						if !stamp.Before(r.From.Add(-slack)) && !stamp.After(r.To.Add(slack)) {
							registered = true
						}
					}
					if !registered {
						bad = append(bad, fmt.Sprintf("%s re-published by %s at %s while its client was renewing (location %s, registered at %s); first seen on %s at %s",
							l.ID, author, o.offset(stamp), l.Location, o.offset(lf.Acked), n, o.offset(p.At)))
					}
				}
			}
		}
	}
	v.Pass = len(bad) == 0 && checked > 0
	v.Key.Value = float64(len(bad))
	v.Measured = fmt.Sprintf("%d versions of running clients' instances made by no registration, over %d client lives", len(bad), checked)
	if checked == 0 {
		v.Details = append(v.Details, "no registered client: nothing was observed")
	}
	for i, d := range bad {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, d)
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
	v.Key = noKey("convergence time", "s")
	if first == nil {
		v.Measured = "never converged"
		v.Details = append(v.Details, describeDivergence(last)...)
		return v
	}
	d := first.At.Sub(from)
	v.Key = keySecs("convergence time", d)
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
// absent from every node's last sample. A return under (1) that serves a
// version (2) finds legitimate (made after the client stopped, by a node
// the client renewed on less than a lease before) is the node catching up
// with an overruled deletion, not a resurrection: it is reported as "not
// counted".
func CheckNoResurrection(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvNoResurrection, Property: 3,
		Threshold: "0 instances served again by a node that had dropped them, 0 new versions made by a node while no client ran for the instance, 0 cancelled instances left at the end"}
	idx := o.sampleIndex()
	const inflight = 2 * time.Second // a read sent this long before a registration may already see it
	var back, left, caughtUp, lost []string
	flagged := map[[2]string]bool{} // (id, node) whose return the samples already judged
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
					at, author, ok := o.versionOn(nodeName, l.App, l.ID, s.At)
					if ok && at.After(died.End) && o.overrules(died, author, at) {
						// The node is catching up with a version that
						// overruled a deletion (a renewal its author had
						// seen, the one legitimate re-publication; see
						// republications): what it dropped was the
						// overruled deletion, not the instance.
						caughtUp = append(caughtUp, d+fmt.Sprintf("; it serves the version %s made at %s, less than a lease after the client's last renewal sent or forwarded there, which overruled the deletion",
							author, o.offset(at)))
						flagged[[2]string{l.ID, nodeName}] = true
						seenAbsent = false
						continue
					}
					if ok && at.After(died.End) {
						d += fmt.Sprintf("; %s %s with a version stamped at %s, after its client stopped", RepublishedSignature, author, o.offset(at))
						if recv, ok := o.copyBefore(author, l.App, l.ID, at); ok {
							d += fmt.Sprintf(", while %s held a copy from another node that it had received at %s", author, o.offset(recv))
							if o.LeaseDuration > 0 && at.Sub(recv) < o.LeaseDuration {
								d += " (" + FreshCopySignature + ")"
							}
						}
					}
					back = append(back, d)
					flagged[[2]string{l.ID, nodeName}] = true
					seenAbsent = false
				}
			}
			if final != nil && lastLife.Deregistered && !lastLife.End.IsZero() && final.At.After(lastLife.End) && final.IDs[l.ID] {
				d := fmt.Sprintf("%s still on %s at %s, cancelled at %s", l.ID, nodeName, o.offset(final.At), o.offset(lastLife.End))
				if at, ok := o.lostWithCrash(&lastLife); ok {
					lost = append(lost, d+fmt.Sprintf("; the cancel was answered by %s, which crashed at %s before it could replicate it", lastLife.CancelledBy, o.offset(at)))
					continue
				}
				left = append(left, d)
			}
		}
	}
	// (1) again on the probes' fingerprints, ten a second: a copy that is
	// back for less than a sampling interval (a node installs an old copy,
	// and another's eviction tombstone deletes it again a moment later).
	for _, l := range o.sortedInstances() {
		if len(l.Lives) == 0 || l.Lives[0].End.IsZero() {
			continue
		}
		key := "|" + l.App + "/" + l.ID + "@"
		for _, nodeName := range o.Nodes {
			if flagged[[2]string{l.ID, nodeName}] {
				continue
			}
			hadIt, seenAbsent := false, false
			var absentAt time.Time
			for i := range o.Probes {
				p := &o.Probes[i]
				if !slices.Contains(p.Up, nodeName) {
					hadIt, seenAbsent = false, false // down: the next process starts afresh
					continue
				}
				if !p.Ready[nodeName] {
					continue
				}
				present := strings.Contains(p.Fingerprint[nodeName], key)
				if l.lifeAt(p.At) != nil || restartsWithin(l, p.At, inflight) || p.At.Before(l.Lives[0].End) {
					hadIt = hadIt || present
					seenAbsent = false
					continue
				}
				if !present {
					if hadIt && !seenAbsent {
						absentAt, seenAbsent = p.At, true
					}
					continue
				}
				hadIt = true
				if !seenAbsent {
					continue
				}
				seenAbsent = false
				died := lifeBefore(l, p.At)
				d := fmt.Sprintf("%s back on %s at %s (in a probe) after it was gone at %s (client stopped at %s, cancelled=%v)",
					l.ID, nodeName, o.offset(p.At), o.offset(absentAt), o.offset(died.End), died.Deregistered)
				clock, author, ok := versionIn(p.Fingerprint[nodeName], l.App, l.ID)
				at := hlcTime(clock)
				if ok && at.After(died.End) && o.overrules(died, author, at) {
					caughtUp = append(caughtUp, d+fmt.Sprintf("; it serves the version %s made at %s, which overruled the deletion", author, o.offset(at)))
					continue
				}
				if ok {
					d += fmt.Sprintf(" with the version %s made at %s", author, o.offset(at))
				}
				back = append(back, d)
				flagged[[2]string{l.ID, nodeName}] = true
				break
			}
		}
	}
	var republished []string
	for _, l := range o.sortedInstances() {
		republished = append(republished, o.republications(l)...)
	}
	v.Pass = len(back) == 0 && len(left) == 0 && len(republished) == 0
	v.Key = KeyFigure{Name: "resurrections", Value: float64(len(back) + len(left) + len(republished))}
	v.Measured = fmt.Sprintf("%d resurrections seen served again, %d new versions made by a node after the client stopped, "+
		"%d cancelled instances left, over %d stopped instances (%d cancelled)",
		len(back), len(republished), len(left), stopped, cancelled)
	for _, d := range append(append(republished, back...), left...) {
		if len(v.Details) == maxDetails {
			break
		}
		v.Details = append(v.Details, d)
	}
	v.notCounted(lost, "(instance, node) left by a cancel lost with the node that answered it")
	v.notCounted(caughtUp, "returns on a node catching up with an overruled deletion")
	return v
}

// notCounted adds to v the findings ds that the verdict does not count: how
// many, as what, and the first of them.
func (v *Verdict) notCounted(ds []string, what string) {
	if len(ds) == 0 {
		return
	}
	v.Measured += fmt.Sprintf("; %d %s (not counted)", len(ds), what)
	for i, d := range ds {
		if i == maxDetails/2 {
			break
		}
		v.Details = append(v.Details, "not counted: "+d)
	}
}

// crashGrace is how long after answering a write a node must stay up for
// the write to have left it. Replication is asynchronous, as in Eureka: a
// node answers a cancel and then sends it to its peers, so a node that
// crashes in between takes the cancel with it, and the instance stays
// until its lease expires and eviction (if self-preservation allows)
// removes it.
const crashGrace = 200 * time.Millisecond

// lostWithCrash reports whether the successful cancel that ended lf was
// answered by a node that crashed from the time the request could have been
// sent until crashGrace after the answer, and when that node crashed.
func (o *Observations) lostWithCrash(lf *Life) (time.Time, bool) {
	if lf.CancelledBy == "" {
		return time.Time{}, false
	}
	for _, c := range o.Crashes {
		if c.Node == lf.CancelledBy && !c.At.Before(lf.End.Add(-cancelTimeout)) && !c.At.After(lf.End.Add(crashGrace)) {
			return c.At, true
		}
	}
	return time.Time{}, false
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
				if stamp.After(p.At) {
					// Stamped in the future of the probe that saw it: the
					// author's wall clock runs ahead (clock-skew), so the
					// stamp does not say when the version was made. The
					// probes bound that: after the last probe that listed
					// it nowhere, at or before the first that listed it. A
					// version is only held against the client's end if it
					// was surely made after it, so the lower bound counts
					// (the upper one took a version made just before a
					// client's end and first listed just after it for a
					// resurrection).
					stamp = o.madeAfter(l.App, l.ID, clock, author, p.At)
					if stamp.IsZero() {
						continue // listed since the first probe: made when, unknown
					}
				}
				if !stamp.After(lf.End) || (!next.IsZero() && !stamp.Before(next)) {
					continue
				}
				seen[ver{clock, author}] = true
				if o.overrules(lf, author, stamp) {
					continue // a renewal there the owner had not seen
				}
				d := fmt.Sprintf("%s %s %s with a version stamped at %s, %s after its client stopped (cancelled=%v), with no registration since; first seen on %s at %s; %s",
					l.ID, RepublishedSignature, author, o.offset(stamp), secs(stamp.Sub(lf.End)), lf.Deregistered, n, o.offset(p.At), o.renewalTrail(&lf))
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

// madeAfter returns the time of the last probe before by that listed the
// version (clock, author) of app/id on no node, such that a later one up to
// by did: the version was made after it. It returns the zero time when the
// first probe already listed the version.
func (o *Observations) madeAfter(app, id string, clock uint64, author string, by time.Time) time.Time {
	var before time.Time
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.After(by) {
			break
		}
		for _, n := range p.Up {
			if c, a, ok := versionIn(p.Fingerprint[n], app, id); ok && c == clock && a == author {
				return before
			}
		}
		before = p.At
	}
	return before
}

// overrules reports whether a version of lf's instance that author made at
// stamp, after the client stopped, is the legitimate re-publication: the
// client's last renewal on author, sent there or forwarded there (to the
// owner), was less than a lease before: an eviction made on older
// information, and author's renewal wins.
func (o *Observations) overrules(lf Life, author string, stamp time.Time) bool {
	since := stamp.Add(-o.LeaseDuration - 50*time.Millisecond)
	if r, ok := lf.Renewed[author]; ok && r.After(since) {
		return true
	}
	// A forwarded renewal reaches the owner up to a forwarding interval
	// later; 200ms covers it.
	r, ok := lf.Forwarded[author]
	return ok && r.After(since.Add(-200*time.Millisecond))
}

// renewalTrail says where lf's client last renewed and where those
// renewals were forwarded, for evidence.
func (o *Observations) renewalTrail(lf *Life) string {
	var parts []string
	for _, n := range o.Nodes {
		if r, ok := lf.Renewed[n]; ok {
			parts = append(parts, fmt.Sprintf("renewed on %s at %s", n, o.offset(r)))
		}
		if r, ok := lf.Forwarded[n]; ok {
			parts = append(parts, fmt.Sprintf("forwarded to %s at %s", n, o.offset(r)))
		}
	}
	if len(parts) == 0 {
		return "the client never renewed"
	}
	return "the client last " + strings.Join(parts, ", ")
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

// ---- 3b. tombstones are collected after the TTL ------------------------------

// CheckTombstoneTTL checks the mechanism of property 3 that bounds its
// cost: tombstones are collected once their deletion is TombstoneTTL old,
// by the deletion's HLC time, on every node alike. In the census the
// prober takes once a second (the tombstones a node's registry would send
// a peer), no tombstone may be older than the TTL plus
// Thresholds.TombstoneSlack. A node that ages tombstones by their local
// receipt keeps those it learned late (at a heal, an initial sync) for
// longer, and nodes re-seed each other with tombstones the others have
// already collected, so some never go.
func CheckTombstoneTTL(o *Observations, th Thresholds) Verdict {
	ttl := o.Timers.TombstoneTTL
	bound := ttl + th.TombstoneSlack
	v := Verdict{Invariant: InvTombstoneGC, Property: 3,
		Threshold: fmt.Sprintf("no node serves a tombstone older than the TTL %s + %s by its deletion's HLC time", secs(ttl), secs(th.TombstoneSlack)),
		Key:       noKey("oldest tombstone", "s")}
	if ttl <= 0 {
		v.Measured = "no tombstone TTL in these observations"
		return v
	}
	censuses, readings := 0, 0
	var oldest time.Duration
	type over struct {
		node, id string
		at       time.Time
		age      time.Duration
	}
	worst := map[string]over{} // by node+id: the oldest reading
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.Tombstones == nil {
			continue
		}
		censuses++
		for n, c := range p.Tombstones {
			readings += c.Count
			oldest = max(oldest, c.Oldest)
			if c.Oldest > bound {
				k := n + " " + c.OldestID
				if w, ok := worst[k]; !ok || c.Oldest > w.age {
					worst[k] = over{node: n, id: c.OldestID, at: p.At, age: c.Oldest}
				}
			}
		}
	}
	if censuses == 0 {
		v.Measured = "no tombstone census was taken"
		return v
	}
	v.Pass = len(worst) == 0
	v.Key = keySecs("oldest tombstone", oldest)
	v.Measured = fmt.Sprintf("oldest tombstone served %s old (TTL %s), %d (node, tombstone) over the bound, in %d censuses (%d tombstone readings)",
		secs(oldest), secs(ttl), len(worst), censuses, readings)
	var ws []over
	for _, w := range worst {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].age > ws[j].age })
	for i, w := range ws {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, fmt.Sprintf("%s still served %s's tombstone at %s, %s after the deletion", w.node, w.id, o.offset(w.at), secs(w.age)))
	}
	return v
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
	v.Key = noKey("membership time", "s")
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(from) {
			continue
		}
		if p.membersComplete() {
			d := p.At.Sub(from)
			v.Key = keySecs("membership time", d)
			v.Pass = d <= th.Membership
			v.Measured = fmt.Sprintf("complete %s after the faults (at %s), %d nodes", secs(d), o.offset(p.At), len(p.Up))
			if !v.Pass && last != nil {
				v.Details = append(v.Details, fmt.Sprintf("last incomplete probe at %s", o.offset(last.At)))
				v.Details = append(v.Details, membershipGaps(last)...)
			}
			return v
		}
		last = p
	}
	v.Measured = "never complete"
	if last != nil {
		v.Details = append(v.Details, membershipGaps(last)...)
	}
	return v
}

// membershipGaps says, for every running node of p that does not see
// exactly the running nodes, what it sees.
func membershipGaps(p *Probe) []string {
	var out []string
	for _, n := range p.Up {
		if !slices.Equal(p.Live[n], p.Up) {
			out = append(out, fmt.Sprintf("%s sees %s", n, strings.Join(p.Live[n], ",")))
		}
	}
	return out
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
	v.Key = keySecs("release after recovery", worstRelease)
	v.Measured = fmt.Sprintf("engaged within %s (worst node), released within %s; %d/%d silent instances survived (%.0f%%); "+
		"evicted before engagement %d, after %d",
		secs(worstEngage), secs(worstRelease), survivors, len(o.CrashedIDs), share*100, evictedBefore, evictedAfter)
	v.Details = append(v.Details, figures...)
	return v
}

// ---- 5b. self-preservation releases after a scale-down ------------------------

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

// CheckSPRecountRelease checks property 5 after a scale-down: once part of
// the fleet died silently for good (Observations.ClientsCrashed, with no
// recovery), every node that expected renewals engages self-preservation
// within Thresholds.SPEngage, releases it by itself within one
// RecountInterval plus Thresholds.SPRecountSlack of engaging (the measured
// rate becomes the expectation), does not engage again, and the dead
// instances are gone from every node within Thresholds.EvictAfterRelease of
// the last release.
func CheckSPRecountRelease(o *Observations, th Thresholds) Verdict {
	recount := o.Timers.RecountInterval
	bound := recount + th.SPRecountSlack
	v := Verdict{Invariant: InvSPRecount, Property: 5,
		Threshold: fmt.Sprintf("after silent deaths for good: engages within %s, releases by itself within %s of engaging (recount interval %s + %s), "+
			"never engages again, and the dead are gone from every node within %s of the last release",
			secs(th.SPEngage), secs(bound), secs(recount), secs(th.SPRecountSlack), secs(th.EvictAfterRelease)),
		Key: noKey("release after engaging", "s")}
	crash := o.ClientsCrashed
	if crash.IsZero() || len(o.CrashedIDs) == 0 {
		v.Measured = "no clients died for good in this run"
		return v
	}
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	var pre *Probe
	for i := range o.Probes {
		if o.Probes[i].At.Before(crash) {
			pre = &o.Probes[i]
		}
	}
	if pre == nil {
		v.Measured = "no probe before the deaths"
		return v
	}
	var affected []string
	for _, n := range pre.Up {
		if sp, ok := pre.SP[n]; ok && sp.Enabled && sp.Expected > 0 {
			affected = append(affected, n)
		}
	}
	if len(affected) == 0 {
		v.Measured = "no node expected renewals before the deaths"
		return v
	}
	ok := true
	var worstEngage, worstRelease time.Duration
	var lastRelease time.Time
	var figures []string
	for _, n := range affected {
		var engagedAt, releasedAt, againAt time.Time
		var atEngage, atRelease actors.SelfPreservationStatus
		for i := range o.Probes {
			p := &o.Probes[i]
			sp, present := p.SP[n]
			if !present || p.At.Before(crash) || p.At.After(end) {
				continue
			}
			switch e := spEngaged(sp); {
			case engagedAt.IsZero():
				if e {
					engagedAt, atEngage = p.At, sp
				}
			case releasedAt.IsZero():
				if !e {
					releasedAt, atRelease = p.At, sp
				}
			case againAt.IsZero() && e:
				againAt = p.At
				v.Details = append(v.Details, fmt.Sprintf("%s engaged again at %s, %s after it released: %s",
					n, o.offset(p.At), secs(p.At.Sub(releasedAt)), spReading(sp)))
			}
		}
		fig := n + ": "
		if engagedAt.IsZero() {
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s never engaged self-preservation after %d of its expected clients died", n, len(o.CrashedIDs)))
			figures = append(figures, fig+"never engaged")
			continue
		}
		d := engagedAt.Sub(crash)
		worstEngage = max(worstEngage, d)
		fig += fmt.Sprintf("engaged %s after the deaths (%s)", secs(d), spReading(atEngage))
		if d > th.SPEngage {
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s engaged only %s after the deaths", n, secs(d)))
		}
		if releasedAt.IsZero() {
			ok = false
			held := end.Sub(engagedAt)
			worstRelease = max(worstRelease, held)
			v.Details = append(v.Details, fmt.Sprintf("%s still engaged at the end, %s after engaging at %s (bound %s)",
				n, secs(held), o.offset(engagedAt), secs(bound)))
			figures = append(figures, fig+", never released")
			continue
		}
		r := releasedAt.Sub(engagedAt)
		worstRelease = max(worstRelease, r)
		if releasedAt.After(lastRelease) {
			lastRelease = releasedAt
		}
		fig += fmt.Sprintf(", released %s later (%s)", secs(r), spReading(atRelease))
		if r > bound {
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s released only %s after engaging at %s (bound %s)", n, secs(r), o.offset(engagedAt), secs(bound)))
		}
		if !againAt.IsZero() {
			ok = false
		}
		figures = append(figures, fig)
	}
	// The dead: when each was gone for good from every node (the start of
	// the trailing run of ready samples without it), or still there.
	idx := o.sampleIndex()
	var worstGone time.Duration
	gone, left := 0, 0
	for _, id := range o.CrashedIDs {
		l := o.Instances[id]
		if l == nil {
			continue
		}
		var goneAt time.Time
		still := ""
		for _, n := range o.Nodes {
			var firstAbsent time.Time
			var last *Sample
			for _, smp := range idx[[2]string{n, l.App}] {
				if smp.At.Before(crash) || smp.At.After(end) || smp.IDs == nil || !smp.Ready {
					continue
				}
				last = smp
				if smp.IDs[id] {
					firstAbsent = time.Time{}
				} else if firstAbsent.IsZero() {
					firstAbsent = smp.At
				}
			}
			if last == nil {
				continue
			}
			if last.IDs[id] {
				still = n
				break
			}
			if firstAbsent.After(goneAt) {
				goneAt = firstAbsent
			}
		}
		if still != "" {
			left++
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s (died silently at %s) still on %s at the end", id, o.offset(crash), still))
			continue
		}
		gone++
		if !lastRelease.IsZero() {
			d := goneAt.Sub(lastRelease)
			worstGone = max(worstGone, d)
			if d > th.EvictAfterRelease {
				ok = false
				v.Details = append(v.Details, fmt.Sprintf("%s gone from every node only at %s, %s after the last release at %s",
					id, o.offset(goneAt), secs(d), o.offset(lastRelease)))
			}
		}
	}
	v.Pass = ok
	v.Key = keySecs("release after engaging", worstRelease)
	v.Measured = fmt.Sprintf("engaged within %s of the deaths, released within %s of engaging (worst node); "+
		"%d of %d dead gone from every node, at worst %s after the last release; %d left",
		secs(worstEngage), secs(worstRelease), gone, len(o.CrashedIDs), secs(worstGone), left)
	v.Details = append(v.Details, figures...)
	return v
}

// ---- 5c. self-preservation stays off in a healthy cluster ------------------

// CheckSPQuiet checks property 5 in a cluster without faults:
// self-preservation is engaged in at most Thresholds.SPMaxEngagedShare of
// the probes of nodes that expect renewals, counted from two renewal
// windows after the warm-up (Observations.SteadyAt: the first full window
// after the first clients registered) until the teardown.
func CheckSPQuiet(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvSPQuiet, Property: 5,
		Threshold: fmt.Sprintf("self-preservation engaged in at most %.1f%% of the probes of nodes that expect renewals, from two renewal windows after the warm-up until the teardown",
			th.SPMaxEngagedShare*100),
		Key: noKey("engaged share", "%")}
	from := o.SteadyAt
	if from.IsZero() {
		from = o.Start
	}
	from = from.Add(2 * o.Timers.RenewalWindow)
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	type run struct {
		node      string
		from, to  time.Time
		reading   actors.SelfPreservationStatus
		held, ran int // instances the node held, clients running
	}
	var runs []run
	open := map[string]*run{}
	closeRun := func(n string, at time.Time) {
		if r := open[n]; r != nil {
			r.to = at
			runs = append(runs, *r)
			delete(open, n)
		}
	}
	total, engaged := 0, 0
	var last time.Time
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(from) || p.At.After(end) {
			continue
		}
		last = p.At
		for _, n := range o.Nodes {
			sp, ok := p.SP[n]
			if !ok || !sp.Enabled || sp.Expected == 0 {
				closeRun(n, p.At)
				continue
			}
			total++
			if !spEngaged(sp) {
				closeRun(n, p.At)
				continue
			}
			engaged++
			if open[n] == nil {
				open[n] = &run{node: n, from: p.At, reading: sp, held: strings.Count(p.Fingerprint[n], "|"), ran: o.runningAt(p.At)}
			}
		}
	}
	for _, n := range o.Nodes {
		closeRun(n, last)
	}
	if total == 0 {
		v.Measured = "no probe of a node expecting renewals after the warm-up"
		return v
	}
	share := float64(engaged) / float64(total)
	sort.Slice(runs, func(i, j int) bool { return runs[i].to.Sub(runs[i].from) > runs[j].to.Sub(runs[j].from) })
	var longest time.Duration
	if len(runs) > 0 {
		longest = runs[0].to.Sub(runs[0].from)
	}
	v.Pass = share <= th.SPMaxEngagedShare
	v.Key = KeyFigure{Name: "engaged share", Value: share * 100, Unit: "%"}
	v.Measured = fmt.Sprintf("engaged in %.2f%% of %d node-probes from %s: %d engagements, longest %s",
		share*100, total, o.offset(from), len(runs), secs(longest))
	for i, r := range runs {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, fmt.Sprintf("%s engaged from %s for %s, holding %d instances while %d clients ran: %s",
			r.node, o.offset(r.from), secs(r.to.Sub(r.from)), r.held, r.ran, spReading(r.reading)))
	}
	return v
}

// runningAt counts the clients registered and running at t.
func (o *Observations) runningAt(t time.Time) int {
	n := 0
	for _, l := range o.Instances {
		for _, lf := range l.Lives {
			if !lf.Acked.IsZero() && !lf.Acked.After(t) && (lf.End.IsZero() || lf.End.After(t)) {
				n++
			}
		}
	}
	return n
}

// ---- 5d. silently dead clients are evicted promptly ------------------------

// percentile returns the nearest-rank q-quantile of sorted ds (0 if empty).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(k, 0), len(ds)-1)]
}

// lastRenewal returns when lf's client last registered or renewed
// successfully anywhere (its acknowledgement if nothing else is known).
func lastRenewal(lf *Life) time.Time {
	t := lf.Acked
	for _, r := range lf.Renewed {
		if r.After(t) {
			t = r
		}
	}
	return t
}

// latencyCase is one measured latency with its evidence.
type latencyCase struct {
	id, node string
	from     time.Time
	d        time.Duration
	censored bool // still not done when observation ended
}

// sortCases orders cs longest first and returns their durations ascending.
func sortCases(cs []latencyCase) []time.Duration {
	sort.Slice(cs, func(i, j int) bool { return cs[i].d > cs[j].d })
	ds := make([]time.Duration, len(cs))
	for i, c := range cs {
		ds[len(cs)-1-i] = c.d
	}
	return ds
}

// CheckEvictionLatency checks that a client that dies without cancelling is
// expired promptly everywhere (property 5: self-preservation must not
// stick): over every (silently dead instance, node) pair, the 99th
// percentile of the time from the client's last successful renewal until
// the node's first ready sample without the instance is at most
// Thresholds.EvictionLatency. A node still listing it when observation ends
// counts with the time until then, if that is already over the bound (else
// it is left out: too close to the end to judge). Lives followed by a
// restart under the same id are left out.
func CheckEvictionLatency(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvEvictionLatency, Property: 5,
		Threshold: fmt.Sprintf("p99 of last renewal → first sample of each node without a silently dead client's instance ≤ %s", secs(th.EvictionLatency)),
		Key:       noKey("p99 eviction latency", "s")}
	idx := o.sampleIndex()
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	var cases []latencyCase
	dead := 0
	for _, l := range o.sortedInstances() {
		for i := range l.Lives {
			lf := &l.Lives[i]
			if lf.Deregistered || lf.End.IsZero() || lf.Acked.IsZero() || i+1 < len(l.Lives) || !lf.End.Before(end) {
				continue
			}
			dead++
			last := lastRenewal(lf)
			for _, n := range o.Nodes {
				var absent time.Time
				observed := false
				for _, smp := range idx[[2]string{n, l.App}] {
					if smp.At.Before(lf.End) || smp.IDs == nil || !smp.Ready {
						continue
					}
					if smp.At.After(end) {
						break
					}
					observed = true
					if !smp.IDs[l.ID] {
						absent = smp.At
						break
					}
				}
				switch {
				case !absent.IsZero():
					cases = append(cases, latencyCase{id: l.ID, node: n, from: last, d: absent.Sub(last)})
				case observed && end.Sub(last) > th.EvictionLatency:
					cases = append(cases, latencyCase{id: l.ID, node: n, from: last, d: end.Sub(last), censored: true})
				}
			}
		}
	}
	if len(cases) == 0 {
		v.Measured = fmt.Sprintf("nothing to judge: %d silently dead clients, none observed afterwards", dead)
		return v
	}
	ds := sortCases(cases)
	p50, p99, worst := percentile(ds, 0.5), percentile(ds, 0.99), ds[len(ds)-1]
	over, stuck := 0, 0
	for _, c := range cases {
		if c.d > th.EvictionLatency {
			over++
		}
		if c.censored {
			stuck++
		}
	}
	v.Pass = p99 <= th.EvictionLatency
	v.Key = keySecs("p99 eviction latency", p99)
	v.Measured = fmt.Sprintf("p50 %s, p99 %s, max %s over %d (instance, node) pairs of %d silently dead clients; %d over the bound, %d still listed at the end",
		secs(p50), secs(p99), secs(worst), len(cases), dead, over, stuck)
	for i, c := range cases {
		if i == maxDetails || c.d <= th.EvictionLatency/2 {
			break
		}
		how := "until its first sample without it"
		if c.censored {
			how = "and still listed when observation ended"
		}
		v.Details = append(v.Details, fmt.Sprintf("%s on %s: last renewal at %s, %s %s", c.id, c.node, o.offset(c.from), secs(c.d), how))
	}
	return v
}

// ---- 2b. registrations become visible everywhere promptly -------------------

// CheckVisibility checks that replication keeps going (property 2): over
// every (registration, other node) pair, the 99th percentile of the time
// from the registration's acknowledgement until the first probe of the
// other node that lists the instance is at most Thresholds.Visibility.
// Registrations acknowledged by a stalled node, and nodes while stalled,
// not ready, down or cut off from the registering node, are left out; a
// pair whose client stops first counts only if it already waited longer
// than the bound.
func CheckVisibility(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvVisibility, Property: 2,
		Threshold: fmt.Sprintf("p99 of registration ack → first probe of every other (ready, not stalled, reachable) node listing it ≤ %s", secs(th.Visibility)),
		Key:       noKey("p99 visibility", "s")}
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	var cases []latencyCase
	skipped := 0
	for _, l := range o.sortedInstances() {
		key := "|" + l.App + "/" + l.ID + "@"
		for i := range l.Lives {
			lf := &l.Lives[i]
			if lf.Acked.IsZero() || lf.AckedBy == "" || lf.Acked.After(end) {
				continue
			}
			k := sort.Search(len(o.Probes), func(j int) bool { return !o.Probes[j].At.Before(lf.Acked) })
			if k == len(o.Probes) || o.Probes[k].Topo.IsStalled(lf.AckedBy) {
				skipped++
				continue
			}
			stop := end
			if !lf.End.IsZero() && lf.End.Before(stop) {
				stop = lf.End
			}
			for _, n := range o.Nodes {
				if n == lf.AckedBy {
					continue
				}
				for j := k; j < len(o.Probes); j++ {
					p := &o.Probes[j]
					if p.At.After(stop) {
						if d := p.At.Sub(lf.Acked); d > th.Visibility {
							cases = append(cases, latencyCase{id: l.ID, node: n, from: lf.Acked, d: d, censored: true})
						}
						break
					}
					if !p.Ready[n] || p.Topo.IsStalled(n) || !p.Topo.Reachable(lf.AckedBy, n) {
						break // not expected to see it (p.Ready is false for a node that is down)
					}
					if strings.Contains(p.Fingerprint[n], key) {
						cases = append(cases, latencyCase{id: l.ID, node: n, from: lf.Acked, d: p.At.Sub(lf.Acked)})
						break
					}
				}
			}
		}
	}
	if len(cases) == 0 {
		v.Measured = "no registration observed on another node"
		return v
	}
	ds := sortCases(cases)
	p50, p99, worst := percentile(ds, 0.5), percentile(ds, 0.99), ds[len(ds)-1]
	over := 0
	for _, c := range cases {
		if c.d > th.Visibility {
			over++
		}
	}
	v.Pass = p99 <= th.Visibility
	v.Key = keySecs("p99 visibility", p99)
	v.Measured = fmt.Sprintf("p50 %s, p99 %s, max %s over %d (registration, node) pairs; %d over the bound; %d registrations on a stalled node left out",
		secs(p50), secs(p99), secs(worst), len(cases), over, skipped)
	for i, c := range cases {
		if i == maxDetails || c.d <= th.Visibility/2 {
			break
		}
		how := ""
		if c.censored {
			how = " (not yet listed when its client stopped or observation ended)"
		}
		v.Details = append(v.Details, fmt.Sprintf("%s registered at %s, listed on %s %s later%s", c.id, o.offset(c.from), c.node, secs(c.d), how))
	}
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
