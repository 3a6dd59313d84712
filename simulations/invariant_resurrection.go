package simulations

// Property 3: nothing deleted comes back (no-resurrection), and the
// evidence it reads: the versions the probes saw, who made them and when.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

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
