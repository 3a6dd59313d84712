package cluster

// Views that disagree
//
// A node that is not alive in this node's view but still sends it fresh
// reports (a stranger) means the views disagree: this node is cut off one
// way (it hears the others, they do not hear it, so its probes fail and it
// declares them dead while their reports keep coming), or a false death
// spread and its refutation is on its way. By its own, narrower view this
// node may then own applications that the rest of the cluster gives to the
// stranger, whose clients' renewals go there: evicting them would evict
// renewing clients. So this node first holds eviction (HoldViewsDisagree,
// evictionGraceFrom).
//
// That hold is bounded by SilentMemberBound from when the disagreement
// began. The disagreement lasts across the flaps of a view that keeps
// changing (a member dead, refuted, dead again) until no stranger has
// reported for three LoadIntervals. Past the bound this node stops holding
// and evicts only what it owns on the eviction ring: its owners and the
// strangers together (evictionRing). An application a stranger owns on
// that ring is left to the stranger, which reports, so it runs, and holds
// it in its own, wider view: the renewals of its clients reach it there.
// Only the applications this node would own in any case, with every
// reporting node counted, are evicted here, each lease after a whole lease
// of silence counted from when the ring took effect.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
)

// disagreement is the views-disagree hold's state, guarded by
// Replicator.loadMu.
type disagreement struct {
	// since is when the current disagreement began (zero: none).
	since time.Time
	// last is when this node last saw a stranger report.
	last time.Time
	// strangers are the reporting members not alive in this node's view,
	// sorted, as last seen.
	strangers []string
}

// evictionRing is the set of owners this node evicts by once a
// disagreement outlasted its bound: its owners and the strangers.
type evictionRing struct {
	members []string // sorted
	// since is when the ring took effect: a lease is evicted by it only
	// after a whole lease of silence from then.
	since time.Time
}

// strangersLocked returns the members whose fresh reports reach this node
// while they are not alive in its view (nor silent, failed or gone),
// sorted. Callers hold loadMu.
func (r *Replicator) strangersLocked(o *ownership, now time.Time) []string {
	var out []string
	for m, p := range r.loads {
		if _, s := r.silent[m]; p.left.IsZero() && p.failed.IsZero() && !s && p.fresh(now, r.cfg.LoadInterval) &&
			m != o.self && !slices.Contains(o.members, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// observeLocked notes the strangers reporting now and returns the
// disagreement as it stands: its strangers (the last ones seen), when it
// began, and whether it is on. It stays on for three LoadIntervals after
// the last stranger was seen, so that a view that flaps, or a stranger's
// report that comes late, neither ends the hold for a moment (this node
// would evict by its narrow view meanwhile) nor restarts its bound.
// Callers hold loadMu.
func (r *Replicator) observeLocked(o *ownership, now time.Time) (strangers []string, since time.Time, on bool) {
	d := &r.disagree
	if s := r.strangersLocked(o, now); len(s) > 0 {
		if d.since.IsZero() || now.Sub(d.last) > 3*r.cfg.LoadInterval {
			d.since = now
		}
		d.last = now
		d.strangers = s
	} else if !d.since.IsZero() && now.Sub(d.last) > 3*r.cfg.LoadInterval {
		d.since, d.strangers = time.Time{}, nil
	}
	return d.strangers, d.since, !d.since.IsZero()
}

// checkDisagreement updates the disagreement and the eviction ring; the
// load loop calls it every LoadInterval.
func (r *Replicator) checkDisagreement() {
	o := r.own.Load()
	if o.self == "" {
		return
	}
	now := time.Now()
	r.loadMu.Lock()
	strangers, since, on := r.observeLocked(o, now)
	r.loadMu.Unlock()
	bounded := on && now.Sub(since) > r.silentBound() && !sabotage.On(sabotage.ViewsDisagreeHoldsForever)

	cur := r.ring.Load()
	switch {
	case bounded:
		ring := slices.Clone(o.members)
		for _, s := range strangers {
			if !slices.Contains(ring, s) {
				ring = append(ring, s)
			}
		}
		slices.Sort(ring)
		if cur != nil && slices.Equal(cur.members, ring) {
			return
		}
		r.ring.Store(&evictionRing{members: ring, since: r.cfg.Clock.Now()})
		r.log.Warn("views disagree for longer than the bound: evicting only what this node owns with the reporting strangers counted",
			"strangers", strings.Join(strangers, ","), "for", now.Sub(since).Round(time.Millisecond), "bound", r.silentBound())
	case cur != nil && !on:
		// Agreement is back: this node's view decides alone again.
		r.ring.Store(nil)
		r.log.Info("views agree again: eviction follows this node's view")
	}
}

// ringOwns reports whether this node may evict app's leases as far as the
// eviction ring goes, and since when by it (zero when no ring is in
// effect).
func (r *Replicator) ringOwns(self, app string) (time.Time, bool) {
	ring := r.ring.Load()
	if ring == nil {
		return time.Time{}, true
	}
	return ring.since, rendezvous(ring.members, app) == self
}

// disagreeHoldLocked is the views-disagree hold, if it is on (before its
// bound). Callers hold loadMu.
func (r *Replicator) disagreeHoldLocked(o *ownership, now time.Time) (EvictionHold, bool) {
	strangers, since, on := r.observeLocked(o, now)
	if !on {
		return EvictionHold{}, false
	}
	forever := sabotage.On(sabotage.ViewsDisagreeHoldsForever)
	bound := r.silentBound()
	if !forever && now.Sub(since) > bound {
		return EvictionHold{}, false
	}
	h := EvictionHold{Reason: HoldViewsDisagree, Members: slices.Clone(strangers), Since: since}
	if forever {
		h.Detail = fmt.Sprintf("eviction held: %s still report(s) but are not alive in this node's view; held until membership agrees",
			strings.Join(strangers, ", "))
		return h, true
	}
	h.Until = since.Add(bound)
	h.Detail = fmt.Sprintf("eviction held: %s still report(s) but are not alive in this node's view (it may be cut off one way) for %v; "+
		"held at most %v, then this node evicts only the applications it owns with them counted as owners",
		strings.Join(strangers, ", "), now.Sub(since).Round(time.Millisecond), bound)
	return h, true
}
