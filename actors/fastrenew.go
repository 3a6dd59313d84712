package actors

// Renewal fast path
//
// A client's renewal usually changes nothing anyone can see: the lease's
// status stays what it is, its lastDirtyTimestamp is the one stored, and
// only the lease's last-renewal time moves (spec §4.4). Sending such a
// renewal to the application actor costs a message, a goroutine that
// protoactor starts for an idle mailbox, and a reply: most of a renewal's
// server time. So the actor publishes, for each lease whose renewal would
// be invisible ("plain": statusFor keeps its status, which is not
// UNKNOWN), a fastLease in its appEntry, and Registry.Renew answers a
// client renewal of such a lease on the caller's goroutine: it records the
// renewal time in the fastLease, queues the fastLease for the actor, counts
// the renewal and calls OnRenew, exactly as the actor would have.
//
// The actor stays the only writer of its leases: it applies the queued
// renewal times (touch and clientRenewed, as appState.renew does) at the
// start of every message it handles, before anything reads a lease's
// times. Every reader of those times (get, expiry and eviction, records
// for peers, registration) runs in the actor, so none sees a lease older
// than a renewal that was answered before the reader's message was
// handled: the same order as if the renewal had been a message sent just
// before the 200.
//
// What takes the slow path (a message, as before): a renewal from a peer
// (Replicated, or with overriddenstatus), one with a lastDirtyTimestamp
// newer than the stored one (404, maybe a status change), one of a lease
// that is not plain or not (yet) in the table, and any renewal once the
// registry is closed.
//
// Races. The actor refreshes a lease's table entry after every event it
// emits for it (every visible change is an event), so a renewal that
// finds an entry found a lease that was plain when last changed. A
// renewal that loads an entry just before a cancel, an eviction or a
// re-registration removes or replaces it is applied to the old lease
// object only if it is still the lease held (it is dropped otherwise): the
// renewal is ordered before that change, whose outcome it does not alter
// (a removed lease stays removed; a new registration is newer than the
// renewal). A renewal time older than the lease's last client renewal
// (the caller was descheduled between reading the clock and storing it) is
// ignored, so a lease's time never goes back.

import (
	"sync"
	"sync/atomic"

	"github.com/heureka/heureka/internal/sabotage"
)

// fastLease is a plain lease as the fast path sees it. The actor creates it
// and owns lease; the fast path only reads dirty and writes renewedAt and
// queued.
type fastLease struct {
	id    string
	lease *lease // the lease object it renews; read by the actor only
	// dirty is the stored lastDirtyTimestamp: a renewal sending a newer
	// one takes the slow path.
	dirty int64
	// renewedAt is the latest renewal time recorded by the fast path
	// (lease clock, see leaseClock; 0: none yet).
	renewedAt atomic.Int64
	// queued is true while the fastLease is in its entry's pending list.
	queued atomic.Bool
}

// fastTable is one application's fast-path state, held by its appEntry.
type fastTable struct {
	leases sync.Map // instance id → *fastLease

	mu      sync.Mutex
	pending []*fastLease // renewed since the actor last applied them
}

// renew records a renewal at now and queues l for the actor.
func (t *fastTable) renew(l *fastLease, now int64) {
	for {
		old := l.renewedAt.Load()
		if now <= old || l.renewedAt.CompareAndSwap(old, now) {
			break
		}
	}
	// Sequentially consistent atomics: if the CAS fails, the actor has not
	// yet reset queued, and it loads renewedAt after that reset, so it
	// sees this renewal.
	if l.queued.CompareAndSwap(false, true) {
		t.mu.Lock()
		t.pending = append(t.pending, l)
		t.mu.Unlock()
	}
}

// takePending returns the queued fastLeases and empties the queue.
func (t *fastTable) takePending(buf []*fastLease) []*fastLease {
	t.mu.Lock()
	buf = append(buf[:0], t.pending...)
	clear(t.pending)
	t.pending = t.pending[:0]
	t.mu.Unlock()
	return buf
}

// fastRenew answers req on the caller's goroutine when it may (see the file
// comment); ok is false when req must go to the actor.
func (r *Registry) fastRenew(req RenewRequest) (res RenewResult, ok bool) {
	if req.Replicated || req.OverriddenStatus != "" {
		return RenewResult{}, false
	}
	v, found := r.apps.Load(req.App)
	if !found {
		return RenewResult{}, false
	}
	t := &v.(*appEntry).fast
	fv, found := t.leases.Load(req.ID)
	if !found {
		return RenewResult{}, false
	}
	l := fv.(*fastLease)
	if req.LastDirtyTimestamp != nil && *req.LastDirtyTimestamp > l.dirty {
		return RenewResult{}, false
	}
	select {
	case <-r.closed:
		return RenewResult{}, false
	default:
	}
	t.renew(l, r.leaseClock.now())
	r.countRenewal(req.App)
	if r.cfg.OnRenew != nil {
		r.cfg.OnRenew(req.App, req.ID)
	}
	return RenewResult{Outcome: RenewOK}, true
}

// applyFastRenewals applies the renewals the fast path recorded since the
// last call: the actor calls it before handling any message.
func (a *appActor) applyFastRenewals() {
	if a.entry == nil {
		return
	}
	a.pending = a.entry.fast.takePending(a.pending)
	if len(a.pending) == 0 || sabotage.On(sabotage.FastRenewNotApplied) {
		return
	}
	// The wall-clock time of a renewal (lastRenewalTimestamp) is its
	// lease-clock age taken back from the wall clock now.
	now, mono := a.state.now(), a.state.leaseNow()
	for i, l := range a.pending {
		l.queued.Store(false)
		at := l.renewedAt.Load()
		if a.state.leases[l.id] == l.lease && at > l.lease.clientRenewed {
			a.state.touch(l.lease, now-(mono-at), at)
			l.lease.clientRenewed = at
		}
		a.pending[i] = nil
	}
}

// refreshFast makes the fast-path entry of id match its lease after a
// change: a plain lease gets an entry (a new one when its lease object or
// lastDirtyTimestamp changed), any other lease or a removed one none.
func (a *appActor) refreshFast(id string) {
	if a.entry == nil {
		return
	}
	t := &a.entry.fast
	l := a.state.leases[id]
	if l == nil || l.inst.Status == StatusUnknown || statusFor(l.inst, l, false) != l.inst.Status {
		t.leases.Delete(id)
		return
	}
	if v, ok := t.leases.Load(id); ok {
		if old := v.(*fastLease); old.lease == l && old.dirty == l.inst.LastDirtyTimestamp {
			return
		}
	}
	t.leases.Store(id, &fastLease{id: id, lease: l, dirty: l.inst.LastDirtyTimestamp})
}
