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

import (
	"context"
	"time"

	"github.com/heureka/heureka/actors"
)

// OnRenew is the registry's renewal hook: a renewal of an application owned
// by another member is coalesced for forwarding to it.
func (r *Replicator) OnRenew(app, id string) {
	o := r.own.Load()
	owner := o.owner(app)
	if owner == o.self || owner == "" {
		return
	}
	r.renewMu.Lock()
	m := r.renews[owner]
	if m == nil {
		m = map[actors.Key]uint32{}
		r.renews[owner] = m
	}
	m[actors.Key{App: app, ID: id}]++
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
// renewals of an owner with no link (it left) are dropped: its applications
// have a new owner, which gives their leases a full lease of grace.
func (r *Replicator) flushRenewals() {
	r.renewMu.Lock()
	renews := r.renews
	r.renews = map[string]map[actors.Key]uint32{}
	r.renewMu.Unlock()
	for owner, keys := range renews {
		if l := r.link(owner); l != nil {
			l.addRenewals(keys)
		}
	}
}

// maxRenewalHold bounds how long renewals whose forward failed wait for the
// owner (see peerLink.dropStaleHeldLocked): two anti-entropy rounds, in which
// an owner that can dial this node pulls them (it pulls every round from a
// member whose reports stopped), a small part of any lease.
func (r *Replicator) maxRenewalHold() time.Duration { return 2 * r.cfg.AntiEntropyInterval }
