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

// bug9: after a graceful leave, the fresh process of the same name and
// address is not seen as live by some members for about ten seconds
// (rolling-restart, about one run in three). memberlist ignores an alive
// message whose incarnation is not above the one it holds, and the leave
// raised the old process's incarnation (the leaving flag's UpdateNode, the
// leave's own message) above the fresh process's first; the members that
// miss the join's push/pull learn of it only from a later push/pull.
var bug9 = KnownBug{
	ID: "BUG-9",
	Title: "a node restarted after a graceful leave is not seen as live by some members for about 10 s " +
		"(memberlist ignores its alive messages: the leave raised the old incarnation above the fresh process's)",
	Explains: explainedByRejoinAfterLeave,
}

func init() { KnownBugs = append(KnownBugs, bug9) }

// restartedRE reads the restarted node and the reasons of a
// restart-convergence evidence line.
var restartedRE = regexp.MustCompile(`^restart at \S+ \((\S+) restarted.*; at \S+: (.*)$`)

// explainedByRejoinAfterLeave matches BUG-9: a failed restart-convergence
// verdict whose every late restart, in its last disagreeing probe, shows only
// members not seeing the restarted node, or the restarted node itself not
// ready or behind (the others refuse the sync of a member they do not list).
func explainedByRejoinAfterLeave(r *Result, v Verdict) bool {
	if v.Invariant != InvRestartConvergence || v.Pass || len(v.Details) == 0 {
		return false
	}
	for _, d := range v.Details {
		m := restartedRE.FindStringSubmatch(d)
		if m == nil {
			return false
		}
		node := m[1]
		unseen := false
		for _, why := range strings.Split(m[2], "; ") {
			switch {
			case why == node+" not ready", why == node+"'s registry differs":
			case strings.Contains(why, " does not see "):
				_, who, _ := strings.Cut(why, " does not see ")
				if strings.Split(who, ",")[0] != node || strings.Contains(who, ",") {
					return false
				}
				unseen = true
			default:
				return false
			}
		}
		if !unseen {
			return false
		}
	}
	return true
}
