package simulations

import (
	"regexp"
	"slices"
	"strings"
)

// bug7: during an asymmetric partition (a side that cannot send to the
// other, while the other still reaches it) the registrations made on the
// blocked side stay missing on the other side until the block lifts
// (asymmetric-partition, every seed). Records, and the answers to the other
// side's anti-entropy requests, travel on streams the sender dials, and
// memberlist keeps both sides alive through indirect probes, so nothing
// routes around the blocked direction.
var bug7 = KnownBug{
	ID: "BUG-7",
	Title: "in an asymmetric partition the blocked side's registrations are missing on the other side until the block lifts " +
		"(replication and anti-entropy answers only travel on connections the sender dials)",
	Explains: explainedByOneWayBlock,
}

func init() { KnownBugs = append(KnownBugs, bug7) }

// blockRE reads the sides of a block-one-way event.
var blockRE = regexp.MustCompile(`^\{([^}]*)\} → \{([^}]*)\} blocked`)

// missingOnRE reads the node of a no-missing-renewer evidence line.
var missingOnRE = regexp.MustCompile(` missing on (\S+) from `)

// explainedByOneWayBlock matches BUG-7: a failed no-missing-renewer verdict
// in a run with a one-way block, where every miss of the evidence is on a
// node of the side that could still send (the block's "to" side).
func explainedByOneWayBlock(r *Result, v Verdict) bool {
	o := r.Observations
	if v.Invariant != InvNoMissingRenewer || v.Pass || o == nil || len(v.Details) == 0 {
		return false
	}
	var to []string
	for _, ev := range o.Timeline {
		if ev.Kind != "block-one-way" {
			continue
		}
		if m := blockRE.FindStringSubmatch(ev.Detail); m != nil {
			to = append(to, strings.Split(m[2], ",")...)
		}
	}
	if len(to) == 0 {
		return false
	}
	for _, d := range v.Details {
		m := missingOnRE.FindStringSubmatch(d)
		if m == nil || !slices.Contains(to, m[1]) {
			return false
		}
	}
	return true
}
