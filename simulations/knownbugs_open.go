package simulations

import "strings"

// The open server bugs the hold scenarios found (analysis in
// simulations/FINDINGS.md, "Open: self-preservation under silence and
// restarts"). Each matcher is narrow: its scenario, its invariant, and
// self-preservation seen engaged in the run, which is the bug's signature.
func init() {
	KnownBugs = append(KnownBugs,
		KnownBug{
			ID: "BUG-21",
			Title: "while a member is silent, its clients' renewals are missing from every other node's count, " +
				"so self-preservation engages and holds eviction past the silent-member bound",
			Explains: explainedBySilentSP,
		},
		KnownBug{
			ID: "BUG-22",
			Title: "in a rolling restart a fresh node judges its first window on its own count alone (a collapse), " +
				"and the renewals of a stopped node's clients dip while they fail over, so self-preservation engages " +
				"briefly and a client that died meanwhile waits for it",
			Explains: explainedByRestartSP,
		})
}

// explainedBySilentSP matches BUG-21: silent-member's verdicts on
// self-preservation or on the eviction bound, in a run where
// self-preservation engaged, and (for the bound) where the silent-member
// hold itself was shown on every node.
func explainedBySilentSP(r *Result, v Verdict) bool {
	if r.Scenario != "silent-member" || r.SP.EngagedShare == 0 {
		return false
	}
	switch v.Invariant {
	case InvSPQuiet:
		return true
	case InvSilentMemberBound:
		return strings.Contains(v.Measured, "missing on 0 nodes")
	}
	return false
}

// explainedByRestartSP matches BUG-22: rolling-restart-quiet's verdicts on
// self-preservation or on the eviction latency of the client killed during
// the roll, in a run where self-preservation engaged; every other
// invariant of the scenario holds.
func explainedByRestartSP(r *Result, v Verdict) bool {
	if r.Scenario != "rolling-restart-quiet" || r.SP.EngagedShare == 0 {
		return false
	}
	return v.Invariant == InvSPQuiet || v.Invariant == InvEvictionLatency
}
