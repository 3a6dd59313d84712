package cluster

// Ownership handoff
//
// When an application moves from this node to another member while this
// node is alive to say so (a member joined and takes some of this node's
// applications, or this node is leaving gracefully), this node hands the
// new owner each lease's age since its last renewal here (wire.Handoff),
// so the new owner evicts a dead client a lease after its last renewal
// instead of a lease after the takeover (actors/handoff.go). A member that
// fails hands nothing over; its successor grants the takeover grace.
//
// Renewals that other members forward here after an application moved
// (they have not seen the move yet) are forwarded on to its new owner,
// once, with this node's own renewals.
//
// A graceful stop calls HandOff before it leaves: this node gives up its
// applications at once (it evicts nothing more), hands them to the members
// that own them without it, tells every member that it leaves (its renewal
// report then fades out there as a departed member's, load.go, even when
// it is back before they see it go), and the peer links' drain at Stop
// sends the handoffs and the last forwarded renewals.

import (
	"context"
	"slices"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/wire"
)

// maxHandoffLeases bounds the leases of one Handoff message: a large
// application is split over several.
const maxHandoffLeases = 4096

// handoffQueue is how many membership changes' handoffs may wait for the
// handoff goroutine; more are dropped (their new owners grant the grace).
const handoffQueue = 16

// moves are applications moving away from this node, by their new owner.
type moves map[string][]string

// queueHandoffs hands mv to the handoff goroutine without blocking.
func (r *Replicator) queueHandoffs(mv moves) {
	if len(mv) == 0 {
		return
	}
	select {
	case r.handoffQ <- mv:
	default:
		r.log.Warn("handoff queue full: the new owners grant their leases a lease of grace", "owners", len(mv))
	}
}

// handoffLoop sends the queued handoffs.
func (r *Replicator) handoffLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case mv := <-r.handoffQ:
			r.sendHandoffs(ctx, mv, false)
		}
	}
}

// HandOff gives up every application this node owns before it leaves
// gracefully: from now on it owns nothing (it evicts nothing, and forwards
// the renewals it still gets to the new owners), and each member that owns
// one of its applications without it gets the leases' ages. It returns once
// the handoffs are queued on the peer links (Stop's drain sends them), or
// when ctx ends.
func (r *Replicator) HandOff(ctx context.Context) {
	r.membersMu.Lock()
	old := r.own.Load()
	if r.leaving.Swap(true) || old.self == "" {
		r.membersMu.Unlock()
		return
	}
	others := slices.DeleteFunc(slices.Clone(old.members), func(m string) bool { return m == old.self })
	next := &ownership{self: old.self, members: others, base: old.base, changedAt: r.cfg.Clock.Now(), changedRT: time.Now(),
		takenAt: map[string]time.Time{}, known: map[string]bool{}}
	if len(others) == 0 {
		next.members = nil
	}
	mv := moves{}
	if r.snaps != nil && len(others) > 0 {
		r.snaps.Snapshot().Apps(func(a *view.App) bool {
			if name := a.Name(); old.owner(name) == old.self {
				to := next.owner(name)
				mv[to] = append(mv[to], name)
			}
			return true
		})
	}
	if len(others) > 0 {
		r.own.Store(next)
	}
	r.membersMu.Unlock()
	if r.store != nil {
		r.store.OwnershipChanged()
	}
	for _, m := range others {
		if _, ok := mv[m]; !ok {
			mv[m] = nil // told that this node leaves, with nothing to take
		}
	}
	r.sendHandoffs(ctx, mv, true)
}

// sendHandoffs reads each moving application's lease ages and queues them
// for its new owner, in messages of at most maxHandoffLeases leases, marked
// leaving when this node hands over to leave (then every member gets one,
// with or without applications). A new owner that speaks no protocol with
// handoffs, or has no link, is skipped.
func (r *Replicator) sendHandoffs(ctx context.Context, mv moves, leaving bool) {
	for owner, apps := range mv {
		if r.peerProtocol(owner) < wire.TypeHandoff.Since() {
			r.log.Debug("no handoff: the new owner speaks an older protocol", "owner", owner, "apps", len(apps))
			continue
		}
		l := r.link(owner)
		if l == nil {
			continue
		}
		msg := &wire.Handoff{Node: r.localName(), Leaving: leaving}
		n, total, sent := 0, 0, false
		flush := func() {
			if len(msg.Apps) > 0 || (leaving && !sent) {
				l.pushControl(msg)
				r.stats.handoffs.Add(1)
				sent = true
			}
			msg, n = &wire.Handoff{Node: r.localName(), Leaving: leaving}, 0
		}
		for _, app := range apps {
			if r.store == nil {
				break
			}
			ages, err := r.store.LeaseAges(ctx, app)
			if err != nil {
				r.log.Debug("no handoff of an application", "app", app, "err", err)
				continue
			}
			for len(ages) > 0 {
				k := min(len(ages), maxHandoffLeases-n)
				msg.Apps = append(msg.Apps, wire.HandoffApp{App: app, Leases: leaseAgesToWire(ages[:k])})
				ages, n, total = ages[k:], n+k, total+k
				if n >= maxHandoffLeases {
					flush()
				}
			}
		}
		flush()
		r.log.Debug("handed applications over", "owner", owner, "apps", len(apps), "leases", total)
	}
}

// onHandoff adopts the lease ages a previous owner handed over, and, when
// the sender is leaving, keeps its renewal report as a departed member's
// (markLeaving).
func (r *Replicator) onHandoff(m *wire.Handoff) {
	if m.Leaving {
		r.markLeaving(m.Node)
	}
	if r.store == nil {
		return
	}
	for _, a := range m.Apps {
		ages := make([]actors.LeaseAge, len(a.Leases))
		for i, g := range a.Leases {
			ages[i] = actors.LeaseAge{ID: g.ID, Age: time.Duration(max(g.AgeMillis, 0)) * time.Millisecond}
		}
		r.store.AdoptLeaseAges(a.App, ages)
	}
}

func leaseAgesToWire(ages []actors.LeaseAge) []wire.LeaseAge {
	out := make([]wire.LeaseAge, len(ages))
	for i, g := range ages {
		out[i] = wire.LeaseAge{ID: g.ID, AgeMillis: g.Age.Milliseconds()}
	}
	return out
}
