package simulations

import (
	"strings"
	"time"
)

// The open server bugs the hold scenarios found (analysis in
// simulations/FINDINGS.md, "Open: holds under silence and restarts"). Each
// matcher is narrow: its scenario, its invariant, and the bug's signature.
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
			Title: "in a rolling restart every ownership move gives the new owner's leases a lease of grace, " +
				"so a client that died during the roll is evicted up to a lease past its bound; and the renewals " +
				"of a stopped node's clients dip while they fail over, engaging self-preservation for a moment",
			Explains: explainedByRestartGrace,
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

// explainedByRestartGrace matches BUG-22 in rolling-restart-quiet: the
// eviction-latency verdict, late but not lost (every silently dead client
// gone by the end), and the sp-quiet verdict when no engagement lasted
// longer than one renewal window (the dip of a stopped node's clients while
// they fail over), not the long engagements a fresh node's own count caused
// before it warmed up.
func explainedByRestartGrace(r *Result, v Verdict) bool {
	if r.Scenario != "rolling-restart-quiet" {
		return false
	}
	switch v.Invariant {
	case InvEvictionLatency:
		return strings.Contains(v.Measured, ", 0 still listed at the end")
	case InvSPQuiet:
		_, after, ok := strings.Cut(v.Measured, "longest ")
		if !ok {
			return false
		}
		d, err := time.ParseDuration(strings.TrimSpace(after))
		return err == nil && d <= r.Timers.RenewalWindow
	}
	return false
}
