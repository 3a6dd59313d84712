package simulations

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

// KnownBugs lists the open server bugs whose failures the tests tolerate
// (analysis in simulations/FINDINGS.md, Findings); knownbugs_open.go adds
// their entries. The matchers of the bugs fixed since (BUG-1, BUG-2,
// BUG-4 … BUG-7, BUG-9, BUG-10) were removed with their tests, their
// stories being in FINDINGS.md; the last tree that has them is 3db7d95
// (knownbugs.go, knownbugs2.go).
var KnownBugs = []KnownBug{}

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
