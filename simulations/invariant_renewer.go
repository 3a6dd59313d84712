package simulations

// Property 1: a renewing client is never missing where it can look
// (no-missing-renewer), and no renewing client is evicted, even for a
// moment (renewer-kept).

import (
	"fmt"
	"sort"
	"time"
)

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
