package actors

// Renewal fast path
//
// A client's renewal usually changes nothing anyone can see: the lease's
// status stays what it is, its lastDirtyTimestamp is the one stored, and
// only the lease's last-renewal time moves (spec §4.4). Sending such a
// renewal to the application actor costs a message, a goroutine that
// protoactor starts for an idle mailbox, and a reply: most of a renewal's
// server time. So the actor marks each lease whose renewal would be
// invisible ("plain": statusFor keeps its status, which is not UNKNOWN),
// and Registry.Renew answers a client renewal of such a lease on the
// caller's goroutine: it finds the lease in the application's leases map
// (under the map's read lock; the actor writes the map under its write
// lock), records the renewal time in the lease's fastState, queues the
// lease for the actor, counts the renewal and calls OnRenew, exactly as the
// actor would have. The fast path keeps no table of its own: a map entry
// and a record per instance, at 1M instances, were 150 MB.
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
// that is not plain or not (yet) marked, and any renewal once the registry
// is closed.
//
// Races. The actor refreshes a lease's mark after every event it emits for
// it (every visible change is an event; a new lease object starts
// unmarked), so a renewal that finds a marked lease found one that was
// plain when last changed. A renewal that loads a lease just before a
// cancel, an eviction or a re-registration removes or replaces it is
// applied to that lease object only if it is still the lease held (it is
// dropped otherwise): the renewal is ordered before that change, whose
// outcome it does not alter (a removed lease stays removed; a new
// registration is newer than the renewal). A renewal time older than the
// lease's last client renewal (the caller was descheduled between reading
// the clock and storing it) is ignored, so a lease's time never goes back.

import (
	"sync"
	"sync/atomic"

	"github.com/heureka/heureka/internal/sabotage"
)

// fastState is the part of a lease the fast path reads and writes; the rest
// of the lease is the actor's alone.
type fastState struct {
	// plain is true while the lease may be renewed by the fast path (see
	// the file comment); the actor sets it after every event of the lease.
	plain atomic.Bool
	// queued is true while the lease is in its table's pending list.
	queued atomic.Bool
	// dirty is the stored lastDirtyTimestamp: a renewal sending a newer
	// one takes the slow path.
	dirty atomic.Int64
	// renewedAt is the latest renewal time recorded by the fast path
	// (lease clock, see leaseClock; 0: none yet).
	renewedAt atomic.Int64
}

// fastTable is one application's fast-path state, held by its appEntry:
// the application's leases (its actor's appState, whose leases map the
// fast path reads under the read lock) and the leases renewed since the
// actor last applied them.
type fastTable struct {
	state *appState

	mu      sync.Mutex
	pending []*lease
}

// lease returns id's lease if the fast path may renew it, or nil.
func (t *fastTable) lease(id string) *lease {
	st := t.state
	st.leasesMu.RLock()
	l := st.leases[id]
	st.leasesMu.RUnlock()
	if l == nil || !l.fast.plain.Load() {
		return nil
	}
	return l
}

// renew records a renewal of l at now and queues l for the actor.
func (t *fastTable) renew(l *lease, now int64) {
	f := &l.fast
	for {
		old := f.renewedAt.Load()
		if now <= old || f.renewedAt.CompareAndSwap(old, now) {
			break
		}
	}
	// Sequentially consistent atomics: if the CAS fails, the actor has not
	// yet reset queued, and it loads renewedAt after that reset, so it
	// sees this renewal.
	if f.queued.CompareAndSwap(false, true) {
		t.mu.Lock()
		t.pending = append(t.pending, l)
		t.mu.Unlock()
	}
}

// takePending returns the queued leases and empties the queue.
func (t *fastTable) takePending(buf []*lease) []*lease {
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
	l := t.lease(req.ID)
	if l == nil {
		return RenewResult{}, false
	}
	if req.LastDirtyTimestamp != nil && *req.LastDirtyTimestamp > l.fast.dirty.Load() {
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
		l.fast.queued.Store(false)
		at := l.fast.renewedAt.Load()
		if a.state.leases[l.inst.ID()] == l && at > l.clientRenewed {
			a.state.touch(l, now-(mono-at), at)
			l.clientRenewed = at
		}
		a.pending[i] = nil
	}
}

// refreshFast makes the fast path's view of id's lease match it after a
// change: a plain lease is renewable there with its lastDirtyTimestamp,
// any other is not (a removed lease is gone from the map already).
func (a *appActor) refreshFast(id string) {
	l := a.state.leases[id]
	if l == nil {
		return
	}
	if l.inst.Status == StatusUnknown || statusFor(l.inst, l, false) != l.inst.Status {
		l.fast.plain.Store(false)
		return
	}
	l.fast.dirty.Store(l.inst.LastDirtyTimestamp)
	l.fast.plain.Store(true)
}
