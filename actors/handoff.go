package actors

// Ownership handoff
//
// Only an application's owner sees all its renewals (the other members
// forward theirs to it), so a member that comes to own an application knows
// only the renewals clients sent to it directly. Without more, it grants
// every lease a whole lease of grace from the takeover (expiredSince), and
// a client that died just before the move stays listed up to a lease late:
// in a rolling restart every stop and every return moves applications, and
// a dead client was evicted only after the roll.
//
// When the old owner is alive to say it (a member joined and takes some of
// its applications, or it is leaving gracefully), it hands the new owner
// each lease's age since its last renewal (LeaseAges on the old owner,
// AdoptLeaseAges on the new). The new owner takes the later of its own and
// the handed renewal, and marks the lease handed: a handed lease expires a
// lease after its last renewal, with no takeover grace, when the handoff
// belongs to the current takeover (it came after it, or at most
// handoffLead before it: a leaving owner hands over just before the
// members see it go). A lease the new owner does not hold yet (it is still
// syncing, after a restart) keeps its handed renewal until its record
// arrives, for one lease. A kill -9 hands nothing over: the new owner
// grants the grace, as before.

import (
	"context"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
)

// LeaseAge is one lease's time since its last renewal, as handed from an
// application's owner to the next (see the file comment).
type LeaseAge struct {
	ID  string
	Age time.Duration
}

type (
	leaseAgesCmd struct {
		appCmd
	}
	adoptAgesCmd struct {
		appCmd
		ages []LeaseAge
	}
)

// handedRenewal is a handed renewal of a lease this node does not hold yet.
type handedRenewal struct {
	renewed int64 // the last renewal (lease clock)
	at      int64 // when it was handed (lease clock)
}

// LeaseAges returns how long ago each live lease of app was last renewed
// here, for handing the application to its next owner.
func (r *Registry) LeaseAges(ctx context.Context, app string) ([]LeaseAge, error) {
	rep, err := r.call(ctx, &leaseAgesCmd{appCmd: appCmd{app: app}})
	return rep.ages, err
}

// AdoptLeaseAges takes the lease ages app's previous owner handed over (see
// the file comment). It does not wait for the result.
func (r *Registry) AdoptLeaseAges(app string, ages []LeaseAge) {
	if sabotage.On(sabotage.NoOwnershipHandoff) {
		return
	}
	cmd := &adoptAgesCmd{appCmd: appCmd{app: app}, ages: ages}
	if v, ok := r.apps.Load(app); ok && v.(*appEntry).tryRoute() {
		r.root.Send(v.(*appEntry).pid, cmd)
		return
	}
	r.root.Send(r.front, cmd)
}

// leaseAges lists every live lease's age at the lease clock's now (never
// negative: a lease counted from ahead of its renewal, as with Eureka's
// duration doubling, is handed as just renewed).
func (a *appState) leaseAges() []LeaseAge {
	now := a.leaseNow()
	out := make([]LeaseAge, 0, len(a.leases))
	for id, l := range a.leases {
		out = append(out, LeaseAge{ID: id, Age: time.Duration(max(now-l.renewed, 0)) * time.Millisecond})
	}
	return out
}

// adoptAges takes handed lease ages: a held lease renewed longer ago here
// takes the handed renewal, and every held lease is marked handed; a lease
// not held yet keeps its handed renewal for its record (takeHanded).
func (a *appState) adoptAges(ages []LeaseAge) {
	mono, now := a.leaseNow(), a.now()
	for _, g := range ages {
		age := max(g.Age.Milliseconds(), 0)
		l := a.leases[g.ID]
		if l == nil {
			if a.handed == nil {
				a.handed = map[string]handedRenewal{}
			}
			a.handed[g.ID] = handedRenewal{renewed: mono - age, at: mono}
			continue
		}
		if mono-age > l.renewed {
			l.renewed = mono - age
			l.lastUpdate = max(l.lastUpdate, now-age)
		}
		l.setHanded(mono)
	}
}

// holdsHanded drops the handed renewals older than a lease (their records
// never came) and reports whether any is left; an application actor that
// holds one is not idle.
func (a *appState) holdsHanded() bool {
	if len(a.handed) == 0 {
		return false
	}
	mono := a.leaseNow()
	for id, h := range a.handed {
		if mono-h.at > max(a.maxLease, maxHandedWait).Milliseconds() {
			delete(a.handed, id)
		}
	}
	return len(a.handed) > 0
}

// maxHandedWait is how long a handed renewal waits for its record when
// the application's lease length is not known here yet.
const maxHandedWait = 90 * time.Second

// takeHanded gives a lease installed from a peer's record the renewal its
// previous owner handed over before the record came, if that is at most a
// lease old.
func (a *appState) takeHanded(id string, l *lease, mono int64) {
	h, ok := a.handed[id]
	if !ok {
		return
	}
	delete(a.handed, id)
	if mono-h.at > l.duration.Milliseconds() {
		return
	}
	l.renewed = max(l.renewed, h.renewed)
	l.setHanded(h.at)
}

// handedFor reports whether l was handed over for an ownership that began
// at since (lease clock): at most handoffLead before it, or after it.
func (l *lease) handedFor(since int64) bool {
	return l.installed < 0 && -l.installed-1 >= since-handoffLead(l.duration).Milliseconds()
}

// setHanded marks l handed over at at (lease clock, never negative): its
// installed word holds −(1 + at) from then on.
func (l *lease) setHanded(at int64) { l.installed = -(at + 1) }

// installedAt is when this node first held l, or, for a handed lease, when
// it was handed over (lease clock).
func (l *lease) installedAt() int64 {
	if l.installed < 0 {
		return -l.installed - 1
	}
	return l.installed
}

// handoffLead is how long before a takeover a handoff may have come and
// still belong to it: a leaving owner hands its applications over, then
// tells the members it leaves. A third of the lease (Eureka's renewal
// interval by default), so that it scales with the lease.
func handoffLead(d time.Duration) time.Duration { return d / 3 }
