package cluster

// Renewal forwarding
//
// Renewals are the hot path and are not broadcast: a renewal is applied
// where it arrives and, if that node is not the application's owner,
// coalesced into a per-owner set that is handed to the owner's peer link
// every RenewFlushInterval and sent as one wire.Renewals message. A renewal
// therefore costs at most one message (to one node), whatever the cluster
// size. A forward that fails is not lost: the link holds its renewals for
// the next try, and the owner takes them with the answer to its next pull
// from this node, which it makes every anti-entropy round once this node's
// reports stop reaching it (an owner this node cannot dial, BUG-7; see
// peerlink.go and antientropy.go).
//
// The owner stamps a forwarded renewal with its own clock when it arrives,
// so a renewal must not arrive late: one delivered after a partition would
// renew a lease whose client has cancelled or died since, and overrule the
// eviction that deletes it (long-partition seeds 1, 5 and 11). Each entry of
// a coalesced set therefore remembers when its latest renewal came in here,
// and an entry older than maxRenewalHold is dropped instead of sent, however
// often its send was retried.

import (
	"context"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// OnRenew is the registry's renewal hook: a renewal of an application owned
// by another member is coalesced for forwarding to it.
func (r *Replicator) OnRenew(app, id string) {
	o := r.own.Load()
	owner := o.owner(app)
	if owner == o.self || owner == "" {
		return
	}
	now := time.Now()
	r.renewMu.Lock()
	m := r.renews[owner]
	if m == nil {
		m = renewalSet{}
		r.renews[owner] = m
	}
	m.add(actors.Key{App: app, ID: id}, 1, now)
	r.renewMu.Unlock()
}

func (r *Replicator) renewLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.RenewFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.flushRenewals()
		}
	}
}

// flushRenewals hands each owner's coalesced renewals to its link. The
// renewals of an owner with no link (it left or failed) go to their
// applications' owners now (reroute): a new owner that a handoff spared the
// takeover grace needs them.
func (r *Replicator) flushRenewals() {
	r.renewMu.Lock()
	renews := r.renews
	r.renews = map[string]renewalSet{}
	r.renewMu.Unlock()
	for owner, keys := range renews {
		if l := r.link(owner); l != nil {
			l.addRenewals(keys)
		} else {
			r.reroute(owner, keys)
		}
	}
}

// reroute queues renewals coalesced for gone, a member that is no longer
// linked, for their applications' owners now, keeping when each came in
// (so maxRenewalHold still bounds them); those that gone still owns here
// (the membership has not caught up), this node owns, or that are too old
// are dropped.
func (r *Replicator) reroute(gone string, set renewalSet) {
	if sabotage.On(sabotage.RenewalsToGoneOwnerDropped) {
		return
	}
	o := r.own.Load()
	cutoff := time.Now().Add(-r.maxRenewalHold())
	r.renewMu.Lock()
	defer r.renewMu.Unlock()
	for k, p := range set {
		owner := o.owner(k.App)
		if owner == gone || owner == o.self || owner == "" || p.last.Before(cutoff) {
			continue
		}
		m := r.renews[owner]
		if m == nil {
			m = renewalSet{}
			r.renews[owner] = m
		}
		m.add(k, p.count, p.last)
	}
}

// maxRenewalHold bounds how long after it came in here a renewal may still
// be forwarded: two anti-entropy rounds, in which an owner that can dial
// this node pulls it (it pulls every round from a member whose reports
// stopped), a small part of any lease.
func (r *Replicator) maxRenewalHold() time.Duration {
	if sabotage.On(sabotage.StaleRenewalsForwarded) {
		return time.Duration(1<<63 - 1)
	}
	return 2 * r.cfg.AntiEntropyInterval
}

// pendingRenewal is one instance's entry in a coalesced set: how many
// renewals were merged into it and when the latest came in on this node.
type pendingRenewal struct {
	count uint32
	last  time.Time
}

// renewalSet is a coalesced set of renewals: one entry per instance, so it
// is bounded by the instances this node forwards renewals of, however long
// sends fail.
type renewalSet map[actors.Key]pendingRenewal

// add merges count renewals of k, the latest at at.
func (s renewalSet) add(k actors.Key, count uint32, at time.Time) {
	p := s[k]
	p.count += count
	if at.After(p.last) {
		p.last = at
	}
	s[k] = p
}

// merge adds every entry of o.
func (s renewalSet) merge(o renewalSet) {
	for k, p := range o {
		s.add(k, p.count, p.last)
	}
}

// dropOlder removes the entries whose latest renewal came in before
// cutoff and returns how many it removed.
func (s renewalSet) dropOlder(cutoff time.Time) int {
	n := 0
	for k, p := range s {
		if p.last.Before(cutoff) {
			delete(s, k)
			n++
		}
	}
	return n
}

// renewalsMessage is the wire form of a coalesced set.
func renewalsMessage(ren renewalSet) *wire.Renewals {
	msg := &wire.Renewals{Renewals: make([]wire.Renewal, 0, len(ren))}
	for k, p := range ren {
		msg.Renewals = append(msg.Renewals, wire.Renewal{App: k.App, ID: k.ID, Count: p.count})
	}
	return msg
}
