package simulations

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// bug7: during an asymmetric partition (a side that cannot send to the
// other, while the other still reaches it) the registrations made on the
// blocked side stay missing on the other side until the block lifts
// (asymmetric-partition, every seed). Records, and the answers to the other
// side's anti-entropy requests, travel on streams the sender dials, and
// memberlist keeps both sides alive through indirect probes, so nothing
// routes around the blocked direction. Fixed in 65b9842 (anti-entropy pulls
// on the puller's own stream: the digest reply and the sync transfer come
// back on the stream the asker dials); kept, with its test, as history.
// Its consequence on renewer-kept was fixed in 5d76e62: bug7Renewals.
var bug7 = KnownBug{
	ID: "BUG-7",
	Title: "in an asymmetric partition the blocked side's registrations are missing on the other side until the block lifts " +
		"(replication and anti-entropy answers only travel on connections the sender dials)",
	Explains: explainedByOneWayBlock,
}

// bug7Renewals: what remained of BUG-7 after 65b9842. The renewals that
// the blocked side's clients send there were forwarded to their owner on a
// stream the blocked side dials; for an owner on the other side they were
// lost until the block lifted, so the owner evicted the renewing client and
// the blocked side overruled (renewer-kept; asymmetric-partition -short,
// seed 1, on 65b9842). It matches bug7's renewer-kept evidence only: a
// registration missing on the other side is no longer explained. Fixed in
// 5d76e62 (a failed forward's renewals are held and go back on the owner's
// pull, and every node pulls from members whose reports stopped); kept, with
// its test, as history.
var bug7Renewals = KnownBug{
	ID: "BUG-7",
	Title: "in an asymmetric partition the renewals the blocked side forwards to an owner on the other side are lost: " +
		"the owner evicts renewing clients and the blocked side overrules (registrations now come through the pull)",
	Explains: func(r *Result, v Verdict) bool {
		return v.Invariant == InvRenewerKept && explainedByOneWayBlock(r, v)
	},
}

// blockRE reads the sides of a block-one-way event.
var blockRE = regexp.MustCompile(`^\{([^}]*)\} → \{([^}]*)\} blocked`)

// missingOnRE reads the node of a no-missing-renewer evidence line.
var missingOnRE = regexp.MustCompile(` missing on (\S+) from `)

// explainedByOneWayBlock matches BUG-7: a failed no-missing-renewer verdict
// in a run with a one-way block, where every miss of the evidence is on a
// node of the side that could still send (the block's "to" side).
//
// It also matches the consequence on renewer-kept: every eviction of a
// renewing client that its node overruled concerns a client next to the
// blocked side (its renewals, forwarded there, could not reach an owner on
// the other side).
func explainedByOneWayBlock(r *Result, v Verdict) bool {
	o := r.Observations
	if v.Pass || o == nil || len(v.Details) == 0 || (v.Invariant != InvNoMissingRenewer && v.Invariant != InvRenewerKept) {
		return false
	}
	var from, to []string
	for _, ev := range o.Timeline {
		if ev.Kind != "block-one-way" {
			continue
		}
		if m := blockRE.FindStringSubmatch(ev.Detail); m != nil {
			from = append(from, strings.Split(m[1], ",")...)
			to = append(to, strings.Split(m[2], ",")...)
		}
	}
	if len(to) == 0 {
		return false
	}
	if v.Invariant == InvRenewerKept {
		_, _, locs, ok := republications(v)
		if !ok {
			return false
		}
		for _, l := range locs {
			if !slices.Contains(from, l) {
				return false
			}
		}
		return true
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
// Fixed in 7dda0f8 (a fresh process that finds a previous one of its name
// listed pushes its refuted state to every member after the join); kept,
// with its test, as history.
var bug9 = KnownBug{
	ID: "BUG-9",
	Title: "a node restarted after a graceful leave is not seen as live by some members for about 10 s " +
		"(memberlist ignores its alive messages: the leave raised the old incarnation above the fresh process's)",
	Explains: explainedByRejoinAfterLeave,
}

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

// republishRE reads the author and time of a renewer-kept or
// no-resurrection evidence line ("x re-published by nK at +T while …",
// "x re-published by nK with a version stamped at +T, …").
var republishRE = regexp.MustCompile(`re-published by (\S+) (?:at|with a version stamped at) \+([0-9.]+)s`)

// backWithVersionRE reads the time and the version's author of a
// no-resurrection return ("x back on nK at +T … with the version nJ made at
// …").
var backWithVersionRE = regexp.MustCompile(` back on \S+ at \+([0-9.]+)s .* with the version (\S+) made at `)

// locationRE reads the client's location in a renewer-kept line.
var locationRE = regexp.MustCompile(`\(location (\S+),`)

// republications parses the evidence of v: author, time since the start,
// and the client's location ("" if not given), or ok false if a line does
// not parse.
func republications(v Verdict) (authors []string, at []time.Duration, locs []string, ok bool) {
	for _, d := range v.Details {
		m := republishRE.FindStringSubmatch(d)
		if m == nil {
			// A return no-resurrection saw in the samples, served with a
			// version a node made after the client stopped.
			if b := backWithVersionRE.FindStringSubmatch(d); b != nil {
				m = []string{b[0], b[2], b[1]}
			}
		}
		if m == nil {
			return nil, nil, nil, false
		}
		sec, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, nil, nil, false
		}
		loc := ""
		if l := locationRE.FindStringSubmatch(d); l != nil {
			loc = l[1]
		}
		authors = append(authors, m[1])
		at = append(at, time.Duration(sec*float64(time.Second)))
		locs = append(locs, loc)
	}
	return authors, at, locs, len(authors) > 0
}

// membershipSplitNear reports whether a probe within a second before t
// (since the start) shows a running node that does not list another
// running node as live: the nodes then disagree on who owns what.
func membershipSplitNear(o *Observations, t time.Duration) bool {
	from, to := o.Start.Add(t-time.Second), o.Start.Add(t+100*time.Millisecond)
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(from) || p.At.After(to) {
			continue
		}
		if !p.membersComplete() {
			return true
		}
	}
	return false
}

// explainedByOwnershipSplitAfterLeave matches BUG-9's consequence on
// renewer-kept: in a run with graceful stops, every eviction of a renewing
// client that its node overruled came while some member did not see
// another (views of ownership differ).
func explainedByOwnershipSplitAfterLeave(r *Result, v Verdict) bool {
	o := r.Observations
	if v.Invariant != InvRenewerKept || v.Pass || o == nil {
		return false
	}
	if !slices.ContainsFunc(o.Timeline, func(ev Event) bool { return ev.Kind == "stop" }) {
		return false
	}
	_, at, _, ok := republications(v)
	if !ok {
		return false
	}
	for _, t := range at {
		if !membershipSplitNear(o, t) {
			return false
		}
	}
	return true
}

// bug10: a node's lease ages follow its wall clock. After its clock jumps
// back, leases renewed there before the jump look fresh for the size of
// the jump, and the node overrules the owner's eviction of a client that
// died (no-resurrection); after a jump forward, the leases it owns look
// expired at once and it evicts renewing clients, whose nodes overrule
// (renewer-kept). clock-skew, seeds 2 and 6 of 6 `-short` on 822aa76.
// Fixed in d4eaf3f (lease ages on a lease clock the wall clock's setting
// does not move); kept, with its tests, as history.
var bug10 = KnownBug{
	ID: "BUG-10",
	Title: "lease ages follow the wall clock: a node whose clock jumps back keeps dead leases alive and overrules their eviction; " +
		"one whose clock jumps forward evicts renewing clients",
	Explains: explainedByClockJump,
}

func init() {
	bug9.Explains = func(r *Result, v Verdict) bool {
		return explainedByRejoinAfterLeave(r, v) || explainedByOwnershipSplitAfterLeave(r, v)
	}
}

// skewRE reads a clock-skew event.
var skewRE = regexp.MustCompile(`^(\S+)'s wall clock set`)

// explainedByClockJump matches BUG-10: a failed no-resurrection or
// renewer-kept verdict in a run whose clock jumped, where every
// re-publication came within a lease and 1.5 s after a jump and is the
// skewed node's own (its dead leases look fresh) or, for renewer-kept, of a
// renewing client's node overruling an eviction.
func explainedByClockJump(r *Result, v Verdict) bool {
	o := r.Observations
	if v.Pass || o == nil || (v.Invariant != InvNoResurrection && v.Invariant != InvRenewerKept) {
		return false
	}
	var jumps []time.Duration
	skewed := ""
	for _, ev := range o.Timeline {
		if ev.Kind != "clock-skew" {
			continue
		}
		if m := skewRE.FindStringSubmatch(ev.Detail); m != nil {
			skewed = m[1]
			jumps = append(jumps, ev.At)
		}
	}
	if len(jumps) == 0 {
		return false
	}
	authors, at, _, ok := republications(v)
	if !ok {
		return false
	}
	window := o.Timers.LeaseDuration + 1500*time.Millisecond
	for i, t := range at {
		near := slices.ContainsFunc(jumps, func(j time.Duration) bool { return t >= j && t <= j+window })
		if !near || (v.Invariant == InvNoResurrection && authors[i] != skewed) {
			return false
		}
	}
	return true
}
