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
// reported for three LoadIntervals. Past the bound this node evicts an
// application only if it owns it by its own view and by the view every
// reporting member sent with its last report (wire.Load.Alive): each member
// forwards its clients' renewals to the owner of its own view, so only
// where all of them name this node do all the renewals come here. A
// stranger that does not count this node alive (this node is the one cut
// off) names it owner of nothing, and this node evicts nothing of what the
// stranger's clients renew there; a stranger that counts it alive (a false
// death in this node's view) leaves it what it owns by every view. A
// member of the previous release sends no view: while one reports, nothing
// is evicted (the hold goes on, as it did in that release). Each lease is
// evicted only after a whole lease of silence counted from when these
// views last changed (evictionRing.since).

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

// evictionRing is what this node evicts by once a disagreement outlasted
// its bound: the views of ownership that must all name it the owner.
type evictionRing struct {
	// views are this node's view and every reporting member's, each
	// sorted, without repeats.
	views [][]string
	// unknown are the reporting members that sent no view (an older
	// release): while there is one, nothing is owned by the ring.
	unknown []string
	// since is when the views took this value: a lease is evicted by them
	// only after a whole lease of silence from then.
	since time.Time
}

// same reports whether e holds the same views and unknown members as o.
func (e *evictionRing) same(o *evictionRing) bool {
	return e != nil && slices.EqualFunc(e.views, o.views, slices.Equal) && slices.Equal(e.unknown, o.unknown)
}

// owner reports whether every view names self the owner of app.
func (e *evictionRing) owns(self, app string) bool {
	if len(e.unknown) > 0 {
		return false
	}
	for _, v := range e.views {
		if !slices.Contains(v, self) || rendezvous(v, app) != self {
			return false
		}
	}
	return true
}

// reportedViewsLocked returns this node's view and every fresh reporter's
// (members and strangers alike), sorted and without repeats, and the
// reporters that sent none. Callers hold loadMu.
func (r *Replicator) reportedViewsLocked(o *ownership, now time.Time) (views [][]string, unknown []string) {
	views = [][]string{o.members}
	for m, p := range r.loads {
		if m == o.self || !p.left.IsZero() || !p.failed.IsZero() || !p.fresh(now, r.cfg.LoadInterval) {
			continue
		}
		if p.msg.Alive == nil {
			unknown = append(unknown, m)
			continue
		}
		v := p.msg.Alive
		if !slices.IsSorted(v) {
			v = slices.Clone(v)
			slices.Sort(v)
		}
		views = append(views, v)
	}
	slices.SortFunc(views, func(a, b []string) int { return slices.Compare(a, b) })
	views = slices.CompactFunc(views, slices.Equal)
	slices.Sort(unknown)
	return views, unknown
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
	views, unknown := r.reportedViewsLocked(o, now)
	r.loadMu.Unlock()
	bounded := on && now.Sub(since) > r.silentBound() && !sabotage.On(sabotage.ViewsDisagreeHoldsForever)

	cur := r.ring.Load()
	switch {
	case bounded:
		next := &evictionRing{views: views, unknown: unknown}
		if sabotage.On(sabotage.ViewsDisagreeUnionRing) {
			// The rule before: one ring of this node's members and the
			// strangers, whatever their own views.
			ring := slices.Clone(o.members)
			for _, s := range strangers {
				if !slices.Contains(ring, s) {
					ring = append(ring, s)
				}
			}
			slices.Sort(ring)
			next = &evictionRing{views: [][]string{ring}}
		}
		if cur.same(next) {
			return
		}
		next.since = r.cfg.Clock.Now()
		r.ring.Store(next)
		if cur == nil {
			r.log.Warn("views disagree for longer than the bound: evicting only what every reporting member's view says this node owns",
				"strangers", strings.Join(strangers, ","), "for", now.Sub(since).Round(time.Millisecond), "bound", r.silentBound(),
				"views", len(next.views), "without view", strings.Join(unknown, ","))
		}
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
	return ring.since, ring.owns(self, app)
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
		ring := r.ring.Load()
		if ring == nil {
			// The bound passed, but the ring takes effect only at the next
			// check: until then this node's narrow view would decide
			// alone, so the hold goes on for that moment.
			return EvictionHold{Reason: HoldViewsDisagree, Members: slices.Clone(strangers), Since: since,
				Until: now.Add(r.cfg.LoadInterval),
				Detail: fmt.Sprintf("eviction held: %s still report(s) but are not alive in this node's view; "+
					"the bound passed and the views that decide what this node evicts take effect within %v",
					strings.Join(strangers, ", "), r.cfg.LoadInterval)}, true
		}
		if len(ring.unknown) == 0 {
			return EvictionHold{}, false
		}
		// Members of the previous release send no view: this node cannot
		// tell what they forward where, and holds as that release did.
		return EvictionHold{Reason: HoldViewsDisagree, Members: slices.Clone(strangers), Since: since,
			Detail: fmt.Sprintf("eviction held: %s still report(s) but are not alive in this node's view, and %s "+
				"(the previous release) send(s) no view of who owns what; held until membership agrees or they are upgraded",
				strings.Join(strangers, ", "), strings.Join(ring.unknown, ", "))}, true
	}
	h := EvictionHold{Reason: HoldViewsDisagree, Members: slices.Clone(strangers), Since: since}
	if forever {
		h.Detail = fmt.Sprintf("eviction held: %s still report(s) but are not alive in this node's view; held until membership agrees",
			strings.Join(strangers, ", "))
		return h, true
	}
	h.Until = since.Add(bound)
	h.Detail = fmt.Sprintf("eviction held: %s still report(s) but are not alive in this node's view (it may be cut off one way) for %v; "+
		"held at most %v, then this node evicts only the applications that its view and every reporting member's name it the owner of",
		strings.Join(strangers, ", "), now.Sub(since).Round(time.Millisecond), bound)
	return h, true
}
