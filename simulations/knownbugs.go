package simulations

import (
	"strings"
	"time"
)

// KnownBug is a server bug the simulations found and that is not fixed yet.
// The tests tolerate a failed verdict only when a known bug explains it,
// and say so loudly; the report marks such verdicts. Remove the entry when
// the bug is fixed, and the tests hold the invariant strictly again.
type KnownBug struct {
	// ID is how the README and the report refer to the bug.
	ID string
	// Title says what goes wrong in one line.
	Title string
	// Explains reports whether the bug explains the failed verdict v of r.
	// It must be narrow: evidence that carries the bug's signature, not a
	// blanket excuse for the invariant.
	Explains func(r *Result, v Verdict) bool
}

// KnownBugs lists the open server bugs (analysis in simulations/README.md).
// It is empty. The bugs these simulations found so far were fixed soon
// after; their entries are kept, with their tests, as the pattern for the
// next one:
//
//   - bug1, BUG-1: an evicted instance re-published by a peer holding a
//     freshly replicated copy; fixed in 6dfdd1e.
//   - bug2, BUG-2: anti-entropy stalled for six intervals after a heal;
//     introduced in 8056c4a, fixed in e8b67b3.
//
// BUG-3 (a restarted node whose initial transfer was lost never synced;
// introduced in e8b67b3, fixed in 387afac) failed the owner-crash scenario
// and cmd/heureka's process test outright and needed no matcher.
var KnownBugs = []KnownBug{}

// bug2 is BUG-2's entry as it stood while the bug was open; see KnownBugs.
var bug2 = KnownBug{
	ID: "BUG-2",
	Title: "after a heal, applications asked for in a sync request that could not be sent (the peer is not yet a live " +
		"member) stay marked in flight and are not asked for again for 6 × AntiEntropyInterval " +
		"(cluster/replicate.go mergeDigest, 8056c4a; fixed in e8b67b3)",
	Explains: explainedByStalledSync,
}

// explainedByStalledSync matches BUG-2: every run of misses over the bound
// began within a second of a heal and ended within the bound plus the
// stall (6 × AntiEntropyInterval) plus a second.
func explainedByStalledSync(r *Result, v Verdict) bool {
	o := r.Observations
	if v.Invariant != InvNoMissingRenewer || o == nil {
		return false
	}
	var heals []time.Time
	for _, ev := range o.Timeline {
		if ev.Kind == "heal" {
			heals = append(heals, o.Start.Add(ev.At))
		}
	}
	stall := 6 * r.Timers.AntiEntropyInterval
	streaks, _ := o.missStreaks()
	over := 0
	for _, st := range streaks {
		if st.d <= r.Thresholds.MaxMissing {
			continue
		}
		over++
		if st.d > r.Thresholds.MaxMissing+stall+time.Second {
			return false
		}
		afterHeal := false
		for _, h := range heals {
			if !st.from.Before(h) && st.from.Sub(h) <= time.Second {
				afterHeal = true
			}
		}
		if !afterHeal {
			return false
		}
	}
	return over > 0
}

// bug1 is BUG-1's entry as it stood while the bug was open; see KnownBugs.
var bug1 = KnownBug{
	ID: "BUG-1",
	Title: "an evicted instance is re-published by a peer that received a replicated copy of it less than " +
		"one lease duration before the owner's eviction tombstone (actors/app.go applyRecord; fixed in 6dfdd1e)",
	Explains: explainedByRepublish,
}

// ExplainFailure returns the known bug that explains the failed verdict v
// of r, or nil.
func ExplainFailure(r *Result, v Verdict) *KnownBug {
	if v.Pass {
		return nil
	}
	for i := range KnownBugs {
		if KnownBugs[i].Explains(r, v) {
			return &KnownBugs[i]
		}
	}
	return nil
}

// explainedByRepublish matches BUG-1: every resurrection came back with a
// version a node made after the client had stopped, while that node held a
// copy from another node that it had received less than a lease earlier,
// and no cancelled instance was left over; and a convergence that came late (but came) in a
// run where that happened, since each re-publication is a new version the
// nodes must agree on again.
func explainedByRepublish(r *Result, v Verdict) bool {
	switch v.Invariant {
	case InvNoResurrection:
		return republishedOnly(v)
	case InvConvergence:
		if !strings.HasPrefix(v.Measured, "converged ") {
			return false
		}
		for _, o := range r.Verdicts {
			if o.Invariant == InvNoResurrection && !o.Pass && republishedOnly(o) {
				return true
			}
		}
	}
	return false
}

// republishedOnly reports whether a failed no-resurrection verdict consists
// of re-publications only.
func republishedOnly(v Verdict) bool {
	if !strings.Contains(v.Measured, " 0 cancelled instances left") || len(v.Details) == 0 {
		return false
	}
	for _, d := range v.Details {
		if !strings.Contains(d, RepublishedSignature) || !strings.Contains(d, FreshCopySignature) {
			return false
		}
	}
	return true
}
