package cluster

// Ownership
//
// Every application has one owner among the alive members: the member with
// the highest rendezvous hash of (member, application). Only the owner
// evicts an application's expired leases, so two nodes never race to evict
// and a node that misses renewals does not evict what the owner sees
// renewed. Renewals are forwarded to the owner (forward.go).
//
// Ownership is computed over the alive members less those silent for
// longer than ReplicatorConfig.SilentMemberBound (load.go): a member that
// answers memberlist's probes but whose reports stopped reaching this node
// would otherwise keep its applications, and hold their eviction, for as
// long as the fault lasts.
//
// When membership changes, ownership moves. A lease is evicted only after it
// has been silent for its whole duration after the moment this node came to
// own its application (its start, or the change that moved the application
// here): the renewals now forwarded to the new owner get one lease to arrive
// (actors.Ownership.OwnedSince; the grace is per lease, not a fixed period).

import (
	"hash/fnv"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/sabotage"
)

// ownership is an immutable assignment of applications to members.
type ownership struct {
	self      string
	members   []string             // alive members, sorted
	base      time.Time            // this node's start
	changedAt time.Time            // the membership change that made this value
	changedRT time.Time            // the same instant by time.Now (runtime clock, for bounds)
	takenAt   map[string]time.Time // owned apps that moved here, by when
	known     map[string]bool      // the apps this node held at changedAt
	cache     sync.Map             // app → owner
}

// rendezvous returns the member with the highest hash of (member, app).
func rendezvous(members []string, app string) string {
	var best string
	var bestH uint64
	for _, m := range members {
		h := fnv.New64a()
		_, _ = h.Write([]byte(m))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(app))
		if v := mix64(h.Sum64()); best == "" || v > bestH {
			best, bestH = m, v
		}
	}
	return best
}

// mix64 is a finalizer that spreads FNV's output over all bits.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (o *ownership) owner(app string) string {
	if len(o.members) == 0 {
		return o.self
	}
	if v, ok := o.cache.Load(app); ok {
		return v.(string)
	}
	w := rendezvous(o.members, app)
	o.cache.Store(app, w)
	return w
}

// since is when this node came to own app (it must own it).
func (o *ownership) since(app string) time.Time {
	if t, ok := o.takenAt[app]; ok {
		return t
	}
	if o.known != nil && !o.known[app] {
		// Unknown at the last change: it may have been owned elsewhere
		// until then, so count from the change.
		return o.changedAt
	}
	return o.base
}

// OwnerOf returns the member that owns app.
func (r *Replicator) OwnerOf(app string) string { return r.own.Load().owner(app) }

// Owns implements actors.Ownership.
func (r *Replicator) Owns(app string) bool {
	o := r.own.Load()
	return o.owner(app) == o.self
}

// OwnedSince implements actors.Ownership: the later of when this node came
// to own app, evictionGraceFrom and when the eviction ring took effect
// (false when a stranger owns app on it; disagree.go).
func (r *Replicator) OwnedSince(app string) (time.Time, bool) {
	o := r.own.Load()
	if o.owner(app) != o.self {
		return time.Time{}, false
	}
	since := o.since(app)
	if g := r.evictionGraceFrom(); g.After(since) {
		since = g
	}
	rs, ok := r.ringOwns(o.self, app)
	if !ok {
		// A stranger owns it once the views-disagree hold ran out.
		return time.Time{}, false
	}
	if rs.After(since) {
		since = rs
	}
	return since, true
}

// OwnedCount implements actors.Ownership.
func (r *Replicator) OwnedCount() int {
	if r.snaps == nil {
		return 0
	}
	n := 0
	o := r.own.Load()
	r.snaps.Snapshot().Apps(func(a *view.App) bool {
		if o.owner(a.Name()) == o.self {
			n += a.Len()
		}
		return true
	})
	return n
}

// OwnedShare returns, per alive member, the share of applications it owns
// (every member is listed, with 0 when it owns none).
func (r *Replicator) OwnedShare() map[string]float64 {
	o := r.own.Load()
	out := map[string]float64{}
	for _, m := range o.members {
		out[m] = 0
	}
	if r.snaps == nil {
		return out
	}
	total := 0
	r.snaps.Snapshot().Apps(func(a *view.App) bool {
		out[o.owner(a.Name())]++
		total++
		return true
	})
	for k := range out {
		if total > 0 {
			out[k] /= float64(total)
		}
	}
	return out
}

// MembersChanged recomputes ownership and the peer links after a
// membership change, and starts an anti-entropy exchange with new members.
// The membership layer calls it on every join, leave and update; it is safe
// for concurrent use: calls run one at a time, each reading the members
// afresh, so the last one applies the newest list. (Unserialized, the
// membership's event goroutine and Start could read the list in one order
// and apply it in the other: a joining node then kept the list from before
// its join, with no links and no anti-entropy peer, and never became ready
// until the next membership change.)
func (r *Replicator) MembersChanged() {
	peers := r.getPeers()
	if peers == nil {
		return
	}
	if !sabotage.On(sabotage.MembersAppliedOutOfOrder) {
		r.membersMu.Lock()
		defer r.membersMu.Unlock()
	}
	self := peers.LocalName()
	alive := append([]string(nil), peers.AliveMembers()...)
	sort.Strings(alive)
	// A member silent for longer than its bound owns nothing (load.go):
	// its applications get a live owner. It keeps its link: it may still
	// hear this node.
	members := alive
	if r.leaving.Load() {
		// HandOff gave everything away: this node owns nothing until it
		// stops.
		members = slices.DeleteFunc(slices.Clone(alive), func(m string) bool { return m == self })
	}
	if silent := r.silentMembers(); len(silent) > 0 {
		members = make([]string, 0, len(alive))
		for _, m := range alive {
			if _, ok := silent[m]; !ok || m == self {
				members = append(members, m)
			}
		}
	}

	r.ownMu.Lock()
	old := r.own.Load()
	now := r.cfg.Clock.Now()
	next := &ownership{self: self, members: members, base: old.base, changedAt: now, changedRT: time.Now(),
		takenAt: map[string]time.Time{}, known: map[string]bool{}}
	mv := moves{}
	if r.snaps != nil {
		r.snaps.Snapshot().Apps(func(a *view.App) bool {
			name := a.Name()
			next.known[name] = true
			if to := next.owner(name); to != self {
				if old.self != "" && old.owner(name) == self && !r.leaving.Load() {
					mv[to] = append(mv[to], name)
				}
				return true
			}
			if old.self != "" && old.owner(name) != self {
				next.takenAt[name] = now
			} else if old.self != "" {
				next.takenAt[name] = old.since(name)
			}
			return true
		})
	}
	if old.self == "" {
		next.known = nil // the first assignment: everything counts from the start
	}
	r.own.Store(next)
	r.ownMu.Unlock()
	if r.store != nil && old.self != "" {
		r.store.OwnershipChanged()
	}
	r.updateLinks(self, alive)
	r.queueHandoffs(mv)
	if old.self != "" {
		for _, m := range alive {
			if m != self && !slices.Contains(old.members, m) {
				// A member joined: it hears this node's renewal count now,
				// not up to a LoadInterval later, so that a fresh node's
				// first windows do not count the cluster's renewals as its
				// own alone (a collapse, to its self-preservation).
				r.sendLoad()
				break
			}
		}
	}
}
