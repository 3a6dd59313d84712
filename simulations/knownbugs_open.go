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
			Title: "at the end of a one-way block the silent node, whose probes were lost, has declared members dead; " +
				"those verdicts reach the others before the refutations, and a report missing for a moment engages " +
				"self-preservation for up to one renewal window",
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

// explainedBySilentSP matches BUG-21: silent-member's sp-quiet verdict
// when no engagement lasted longer than one renewal window (the moment a
// false death's missing report takes from the count), not a long
// engagement, and never the eviction bound.
func explainedBySilentSP(r *Result, v Verdict) bool {
	if r.Scenario != "silent-member" || v.Invariant != InvSPQuiet {
		return false
	}
	return longestWithin(v.Measured, r.Timers.RenewalWindow)
}

// longestWithin reports whether an sp-quiet verdict's longest engagement
// ("…, longest 1.00s") is at most d.
func longestWithin(measured string, d time.Duration) bool {
	_, after, ok := strings.Cut(measured, "longest ")
	if !ok {
		return false
	}
	got, err := time.ParseDuration(strings.TrimSpace(after))
	return err == nil && got <= d
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
		return longestWithin(v.Measured, r.Timers.RenewalWindow)
	}
	return false
}
