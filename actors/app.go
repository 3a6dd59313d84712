package actors

import (
	"math"
	"sync"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
)

// lease is one instance's lease, owned by its application's actor.
//
// Its wall-clock times (registered, lastUpdate, serviceUp) are what goes on
// the wire; its age is measured on the lease clock (renewed, clientRenewed,
// installed: see leaseClock), so a wall clock set back or forward neither
// keeps a dead lease alive nor expires a renewing one (BUG-10). It is kept
// within 112 bytes (a size class): a million instances hold a million.
type lease struct {
	inst    *Instance // current published state; immutable
	version Version
	// registered is when the lease was created (epoch ms).
	registered int64
	// lastUpdate is Eureka's lease.lastUpdateTimestamp (epoch ms): the time
	// of the last renewal, plus the duration when LeaseDurationDoubling
	// reproduces Java's quirk.
	lastUpdate int64
	// renewed is lastUpdate on the lease clock: the instant expiry counts
	// from (for a peer's copy, its age at receipt taken back from then).
	renewed   int64
	duration  time.Duration
	serviceUp int64
	// clientRenewed is when a client last renewed or registered this lease
	// on this node (lease clock; 0 if only peers ever told us of it). Only
	// such a renewal can overrule a peer's eviction.
	clientRenewed int64
	// installed is when this node first held the lease (lease clock). An
	// owner that learns of a lease late (it was cut off when the client
	// registered) gives it one lease duration from then before evicting:
	// the renewals forwarded to it meanwhile are on their way. It is a
	// grace for eviction here only; records still carry lastUpdate, so no
	// copy is born fresh elsewhere.
	//
	// A negative value marks a lease handed over by the application's
	// previous owner: −(1 + when it was handed) (see handoff.go, which
	// alone reads and writes it that way). It shares this word so that a
	// lease stays in its size class (tombstones_test.go).
	installed int64
	// fast is what the renewal fast path reads and writes (fastrenew.go).
	fast fastState
}

// renewedByClient reports whether a client renewed l on this node within its
// lease duration before now (lease clock).
func (l *lease) renewedByClient(now int64) bool {
	return l.clientRenewed > 0 && now-l.clientRenewed <= l.duration.Milliseconds()
}

// appOptions are the settings an appState needs from the registry.
type appOptions struct {
	node  string
	clock Clock
	// leaseClock measures lease ages; nil: clock does (appState tests).
	leaseClock            *leaseClock
	hlc                   *HLC
	leaseDurationDoubling bool
	tombstoneTTL          time.Duration
	// tombstoneSlack is what a tombstone is kept beyond the longest lease
	// of its application: a renewal window and an eviction interval (see
	// tombstoneTTLFor).
	tombstoneSlack time.Duration
	// nodes numbers the node names of tombstones' versions.
	nodes nodeTable
}

// appState is the plain, single-threaded core of one application: its leases,
// the status override rules and the register/renew/cancel semantics of
// Eureka (spec §4). The application actor is its only caller; tests drive it
// directly. Every method that changes the registry returns the events it
// produced, in order.
type appState struct {
	name string
	opts *appOptions
	// leases is written by the application's actor only, with leasesMu
	// held: the renewal fast path reads it from other goroutines (under
	// leasesMu's read lock); the actor reads it without the lock.
	leases     map[string]*lease
	leasesMu   sync.RWMutex
	tombstones tombstoneSet
	// received is when each tombstone arrived (epoch ms), kept in a
	// sabotage build only: the switch TombstoneReceiptAge ages by it.
	received map[string]int64
	// ahead is, for the few tombstones stamped further ahead of this
	// node's clock than the HLC tolerance when they arrived, the receipt
	// time plus the tolerance (epoch ms): they age from it (putTombstone).
	ahead map[string]int64
	// copied is when the last peer record of each lease arrived (lease
	// clock), kept in a sabotage build only: the switch
	// ReplicaOverrulesEviction reads it, to put BUG-1 back.
	copied map[string]int64
	// shared is the canonical copies of the values the application's
	// instances repeat, as last stored (see share).
	shared sharedValues
	// maxLease is the longest lease this application has held here, which
	// keeps its tombstones (see tombstoneTTLFor).
	maxLease time.Duration
	// handed holds the renewals a previous owner handed over for leases
	// this node does not hold yet (handoff.go).
	handed map[string]handedRenewal
}

// noteLease makes d count for how long the application's tombstones are
// kept.
func (a *appState) noteLease(d time.Duration) { a.maxLease = max(a.maxLease, d) }

// setLease installs l as id's lease.
func (a *appState) setLease(id string, l *lease) {
	a.leasesMu.Lock()
	a.leases[id] = l
	a.leasesMu.Unlock()
	if sabotage.Enabled {
		delete(a.copied, id)
	}
}

// deleteLease removes id's lease.
func (a *appState) deleteLease(id string) {
	a.leasesMu.Lock()
	delete(a.leases, id)
	a.leasesMu.Unlock()
	if sabotage.Enabled {
		delete(a.copied, id)
	}
}

func newAppState(name string, opts *appOptions) *appState {
	a := &appState{name: intern(name), opts: opts, leases: map[string]*lease{}}
	a.tombstones.packAge = max(1, opts.tombstoneTTL.Milliseconds()/10)
	a.tombstones.deletedAt = a.tombstoneAgedFrom
	return a
}

func (a *appState) now() int64 { return a.opts.clock.Now().UnixMilli() }

// leaseNow is the lease clock's reading (see leaseClock).
func (a *appState) leaseNow() int64 {
	if a.opts.leaseClock == nil {
		return a.now()
	}
	return a.opts.leaseClock.now()
}

// leaseTime converts a wall-clock instant to the lease clock (see
// leaseClock.fromWall) given the readings of both clocks now.
func (a *appState) leaseTime(wallMillis, wallNow, leaseNow int64, maxAge time.Duration) int64 {
	if a.opts.leaseClock == nil {
		return wallMillis
	}
	return a.opts.leaseClock.fromWall(wallMillis, wallNow, leaseNow, maxAge.Milliseconds())
}

// empty reports whether the application holds nothing worth keeping.
func (a *appState) empty() bool {
	return len(a.leases) == 0 && a.tombstones.len() == 0 && !a.holdsHanded()
}

// nextVersion returns a new version for a change of a record that is at
// version after (zero for a new record): always above after, so a local
// change supersedes the state it changed even when that state came from a
// peer whose clock runs ahead (the HLC does not follow such a peer all the
// way; see HLC.Observe).
func (a *appState) nextVersion(after Version) Version {
	c := a.opts.hlc.Now()
	if c <= after.Clock {
		c = after.Clock + 1
	}
	return Version{Clock: c, Node: a.opts.node}
}

// publish stamps inst with the lease's timestamps and a new version, stores
// it and returns the event.
func (a *appState) publish(l *lease, inst *Instance, action ActionType, cause Cause, newLease bool, now int64) Event {
	a.share(inst) // a registration's values, or a clone's fresh metadata maps
	inst.ActionType = action
	inst.LastUpdatedTimestamp = now
	inst.LeaseInfo.RegistrationTimestamp = l.registered
	inst.LeaseInfo.LastRenewalTimestamp = l.lastUpdate
	inst.LeaseInfo.ServiceUpTimestamp = l.serviceUp
	l.inst = inst
	l.version = a.nextVersion(l.version)
	return Event{Action: action, Cause: cause, Instance: inst, Version: l.version, NewLease: newLease}
}

// statusFor runs Eureka's overridden-status rule chain (spec §4.5) for the
// instance r given the existing lease l (nil when none).
func statusFor(r *Instance, l *lease, replicated bool) Status {
	switch r.Status {
	case StatusUp, StatusOutOfService:
	default:
		return r.Status // DownOrStarting: the client's own word wins.
	}
	if r.OverriddenStatus != StatusUnknown && r.OverriddenStatus != "" {
		return r.OverriddenStatus // OverrideExists
	}
	if !replicated && l != nil {
		if s := l.inst.Status; s == StatusUp || s == StatusOutOfService {
			return s // LeaseExists
		}
	}
	return r.Status
}

// register adds or replaces an instance (spec §4.3). in must be normalized;
// the registry takes ownership of it (its maps are kept, not copied).
func (a *appState) register(in *Instance, replicated bool) Event {
	c := *in
	return a.registerOwned(&c, replicated)
}

// registerOwned is register for an instance that nothing else holds: it is
// stamped and stored as it is, without a copy.
func (a *appState) registerOwned(r *Instance, replicated bool) Event {
	now, mono := a.now(), a.leaseNow()
	existing := a.leases[r.ID()]
	if r.LastDirtyTimestamp == 0 {
		r.LastDirtyTimestamp = now
	}
	if existing != nil && existing.inst.LastDirtyTimestamp > r.LastDirtyTimestamp {
		// The registry holds newer data than the registrant: keep it, but
		// the lease is renewed as a new registration all the same.
		r = existing.inst.Clone()
	}
	// Overrides: an override already held wins over what the client sends.
	if existing != nil && existing.inst.OverriddenStatus != StatusUnknown {
		r.OverriddenStatus = existing.inst.OverriddenStatus
	}
	r.Status = statusFor(r, existing, replicated)
	r.LeaseInfo.EvictionTimestamp = 0
	r.IsCoordinatingDiscoveryServer = false

	l := &lease{registered: now, lastUpdate: now, renewed: mono, duration: time.Duration(r.LeaseInfo.DurationSecs) * time.Second,
		version: a.currentVersion(r.ID()), installed: mono}
	if existing != nil {
		l.serviceUp = existing.serviceUp
		l.installed = existing.installed
	}
	if r.Status == StatusUp && l.serviceUp == 0 {
		l.serviceUp = now
	}
	// A registration relayed by a Eureka peer is a client's all the same.
	l.clientRenewed = mono
	a.noteLease(l.duration)
	a.setLease(r.ID(), l)
	a.dropTombstone(r.ID())
	return a.publish(l, r, ActionAdded, CauseRegister, existing == nil, now)
}

// tryRegister registers in (see register) unless the tombstone of a cancel
// outranks it (see cancelOutranks); it reports whether it registered.
func (a *appState) tryRegister(in *Instance, replicated bool) (Event, bool) {
	return a.tryRegisterOwned(in, replicated, false)
}

// tryRegisterOwned is tryRegister; owned says that nothing else holds in,
// so that it is stored without a copy (see registerOwned).
func (a *appState) tryRegisterOwned(in *Instance, replicated, owned bool) (Event, bool) {
	if a.leases[in.ID()] == nil {
		if _, ok := a.cancelOutranks(in.ID(), in.LastDirtyTimestamp, a.now()); ok {
			return Event{}, false
		}
	}
	if owned {
		return a.registerOwned(in, replicated), true
	}
	return a.register(in, replicated), true
}

// cancelOutranks reports whether id's tombstone is a cancel's that outranks
// a registration (or a peer's live record) carrying lastDirtyTimestamp
// dirty, and returns the tombstone.
//
// Eureka's rule is that a registration older than the stored record (by
// lastDirtyTimestamp) does not replace its data; a cancel is the client's
// latest word, so a registration no newer than the record it cancelled
// was sent before the cancel: it arrives late (a node frozen by SIGSTOP
// serves a registration its kernel queued long after the client failed
// over, registered elsewhere and cancelled) and must not bring the
// instance back. A client that registers again afterwards in earnest
// sends a newer lastDirtyTimestamp: the Java client stamps one whenever it
// (re)registers after a 404 or a status change, and a new process starts
// with a new one; clients that send none get the receipt time. Only a
// client that cancels and re-registers the same id with the same explicit
// lastDirtyTimestamp is refused until the tombstone expires (TombstoneTTL).
//
// Eviction tombstones never outrank a registration: a client that still
// runs after an eviction re-registers on its next 404, often with the same
// lastDirtyTimestamp, and must win.
func (a *appState) cancelOutranks(id string, dirty, now int64) (tombstone, bool) {
	if sabotage.On(sabotage.LateRegistrationOutranksCancel) {
		return tombstone{}, false
	}
	t, ok := a.tombstones.get(id)
	if !ok || t.evicted || t.dirty == 0 || dirty == 0 || dirty > t.dirty || a.storedExpired(id, t, now) {
		return tombstone{}, false
	}
	return t, true
}

// RenewOutcome is the result of a renewal.
type RenewOutcome uint8

// The renewal outcomes (spec §2 Renew).
const (
	// RenewOK means 200.
	RenewOK RenewOutcome = iota
	// RenewNotFound means 404: unknown instance, a deleted override that
	// asks the client to re-register, or a client holding newer data.
	RenewNotFound
	// RenewConflict means 409 (replicas only): the registry holds newer
	// data, returned with the result.
	RenewConflict
)

// RenewRequest carries a renewal's optional parameters.
type RenewRequest struct {
	App, ID string
	// LastDirtyTimestamp is the client's lastDirtyTimestamp, if it sent one.
	LastDirtyTimestamp *int64
	// OverriddenStatus is a replica's overriddenstatus parameter ("" if none).
	OverriddenStatus Status
	Replicated       bool
}

// RenewResult is what a renewal produced.
type RenewResult struct {
	Outcome RenewOutcome
	// Instance is the stored instance when Outcome is RenewConflict.
	Instance *Instance
}

// renew renews a lease (spec §4.4). It returns the result, a MODIFIED event
// when the rule chain changed the stored status, and whether the lease was
// renewed (which Eureka counts for self-preservation even when the answer is
// 404 or 409).
func (a *appState) renew(req RenewRequest) (RenewResult, []Event, bool) {
	l := a.leases[req.ID]
	if l == nil {
		return RenewResult{Outcome: RenewNotFound}, nil, false
	}
	st := statusFor(l.inst, l, req.Replicated)
	if st == StatusUnknown {
		return RenewResult{Outcome: RenewNotFound}, nil, false
	}
	now, mono := a.now(), a.leaseNow()
	var events []Event
	if st != l.inst.Status {
		// Eureka overwrites silently; we publish the change so that cached
		// reads and peers never disagree with the lease holder.
		inst := l.inst.Clone()
		inst.Status = st
		events = append(events, a.publish(l, inst, ActionModified, CauseStatusUpdate, false, now))
	}
	a.touch(l, now, mono)
	// Every renewal here is a client's: sent to this node, relayed by a
	// Eureka peer or forwarded by the Heureka member the client sent it to.
	l.clientRenewed = mono
	if req.LastDirtyTimestamp == nil {
		return RenewResult{Outcome: RenewOK}, events, true
	}
	stored := l.inst.LastDirtyTimestamp
	switch in := *req.LastDirtyTimestamp; {
	case in > stored:
		if req.Replicated && req.OverriddenStatus != "" && req.OverriddenStatus != StatusUnknown {
			inst := l.inst.Clone()
			inst.OverriddenStatus = req.OverriddenStatus
			inst.Status = req.OverriddenStatus
			events = append(events, a.publish(l, inst, ActionModified, CauseStatusUpdate, false, now))
		}
		return RenewResult{Outcome: RenewNotFound}, events, true
	case in < stored && req.Replicated:
		return RenewResult{Outcome: RenewConflict, Instance: l.inst}, events, true
	}
	return RenewResult{Outcome: RenewOK}, events, true
}

// touch renews l at now (wall clock) and mono (lease clock).
func (a *appState) touch(l *lease, now, mono int64) {
	l.lastUpdate, l.renewed = now, mono
	if a.opts.leaseDurationDoubling {
		l.lastUpdate += l.duration.Milliseconds()
		l.renewed += l.duration.Milliseconds()
	}
}

// operatorTouch renews l for an operator's write (a status change or an
// override's removal): as Eureka does, the lease here counts from now
// (mono, lease clock), but its last renewal, which goes on the wire as
// client evidence (Record.LastRenewal, lastRenewalTimestamp), stays the
// client's: an operator's write is no sign that the client lives (see
// stale).
func (a *appState) operatorTouch(l *lease, now, mono int64) {
	if sabotage.On(sabotage.StaleJudgedByOperatorWrites) {
		a.touch(l, now, mono)
		return
	}
	l.renewed = max(l.renewed, mono)
	if a.opts.leaseDurationDoubling {
		l.renewed = max(l.renewed, mono+l.duration.Milliseconds())
	}
}

// remove deletes the lease of id (cancel or eviction, spec §4.6).
func (a *appState) remove(id string, cause Cause, replicated bool) (Event, bool) {
	l := a.leases[id]
	if l == nil {
		return Event{}, false
	}
	now := a.now()
	a.deleteLease(id)
	// The deleted state shares the record's maps (a published state's maps
	// are never written): the delta shows it for minutes, so under churn a
	// private copy would be retained per cancel (the memory goals).
	c := *l.inst
	inst := &c
	inst.LeaseInfo.EvictionTimestamp = now
	ev := a.publish(l, inst, ActionDeleted, cause, false, now)
	if !sabotage.On(sabotage.TombstonesDropped) {
		// Keyed by the instance's own id string when it is the key (the
		// delta's deleted state shares it), not the request's copy.
		if own := l.inst.ID(); own == id {
			id = own
		}
		a.putTombstone(id, a.newTombstone(ev.Version, cause == CauseEvict, l.inst.LastDirtyTimestamp), now)
	}
	return ev, true
}

// setStatus records a status override (PUT …/status, spec §4.5). It reports
// false when the instance is unknown.
func (a *appState) setStatus(id string, s Status, lastDirty *int64, replicated bool) (Event, bool, bool) {
	l := a.leases[id]
	if l == nil {
		return Event{}, false, false
	}
	now := a.now()
	a.operatorTouch(l, now, a.leaseNow())
	if l.inst.Status == s {
		return Event{}, false, true // Eureka records nothing when already s.
	}
	inst := l.inst.Clone()
	if s == StatusUp && l.serviceUp == 0 {
		l.serviceUp = now
	}
	inst.OverriddenStatus = s
	inst.Status = s
	if lastDirty != nil && *lastDirty > inst.LastDirtyTimestamp {
		inst.LastDirtyTimestamp = *lastDirty
	}
	return a.publish(l, inst, ActionModified, CauseStatusUpdate, false, now), true, true
}

// deleteOverride removes a status override (DELETE …/status, spec §4.5);
// the instance's status becomes s. It reports false when the instance is
// unknown.
func (a *appState) deleteOverride(id string, s Status, lastDirty *int64, replicated bool) (Event, bool, bool) {
	l := a.leases[id]
	if l == nil {
		return Event{}, false, false
	}
	now := a.now()
	a.operatorTouch(l, now, a.leaseNow())
	if l.inst.OverriddenStatus == StatusUnknown {
		return Event{}, false, true
	}
	inst := l.inst.Clone()
	inst.OverriddenStatus = StatusUnknown
	inst.Status = s
	if lastDirty != nil && *lastDirty > inst.LastDirtyTimestamp {
		inst.LastDirtyTimestamp = *lastDirty
	}
	return a.publish(l, inst, ActionModified, CauseDeleteOverride, false, now), true, true
}

// updateMetadata merges kv into the instance's metadata and re-registers it
// (spec §2 Metadata). It reports false when the instance is unknown.
func (a *appState) updateMetadata(id string, kv map[string]string, replicated bool) (Event, bool) {
	l := a.leases[id]
	if l == nil {
		return Event{}, false
	}
	inst := l.inst.Clone()
	if inst.Metadata == nil {
		inst.Metadata = make(map[string]string, len(kv))
	}
	for k, v := range kv {
		inst.Metadata[k] = v
	}
	ev := a.register(inst, replicated)
	ev.Cause = CauseMetadata
	if !sabotage.On(sabotage.StaleJudgedByOperatorWrites) {
		// An operator's write, not a client's registration: the lease
		// keeps the client's times (see operatorTouch), its expiry here
		// counts from now.
		nl := a.leases[id]
		nl.registered, nl.lastUpdate, nl.clientRenewed = l.registered, l.lastUpdate, l.clientRenewed
		ev.Instance.LeaseInfo.RegistrationTimestamp = l.registered
		ev.Instance.LeaseInfo.LastRenewalTimestamp = l.lastUpdate
	}
	return ev, true
}

// get returns the live state of id with its lease timestamps as of now, and
// whether the lease has expired for an owner that has held the application
// since since (lease clock; see expiredSince).
func (a *appState) get(id string, since int64) (*Instance, bool, bool) {
	l := a.leases[id]
	if l == nil {
		return nil, false, false
	}
	inst := *l.inst
	inst.LeaseInfo.LastRenewalTimestamp = l.lastUpdate
	return &inst, a.expiredSince(l, a.leaseNow(), 0, since), true
}

// expiredSince reports whether l has run out at now for an owner that has
// held the application since since (both on the lease clock): the grace of one lease
// duration after start or takeover is per lease, counted from the later of
// the last renewal and since, so the renewals now forwarded to this node
// have one whole lease to arrive.
func (a *appState) expiredSince(l *lease, now int64, extra time.Duration, since int64) bool {
	switch {
	case sabotage.On(sabotage.NoTakeoverGrace):
		since = 0
	case l.handedFor(since):
		// The previous owner handed its renewals over (handoff.go).
		since = 0
	default:
		since = max(since, l.installedAt())
	}
	return now > max(l.renewed, since)+l.duration.Milliseconds()+extra.Milliseconds()
}

// expiredIDs lists the leases expired at now with extra slack, for an owner
// since since (lease clock).
func (a *appState) expiredIDs(extra time.Duration, since int64) []string {
	now := a.leaseNow()
	var ids []string
	for id, l := range a.leases {
		if a.expiredSince(l, now, extra, since) {
			ids = append(ids, id)
		}
	}
	return ids
}

// evict removes id if its lease is still expired (it may have been renewed
// since the sweep that chose it).
func (a *appState) evict(id string, extra time.Duration, since int64) (Event, bool) {
	l := a.leases[id]
	if l == nil || !a.expiredSince(l, a.leaseNow(), extra, since) {
		return Event{}, false
	}
	return a.remove(id, CauseEvict, false)
}

// leasesDue returns an instant (lease clock) up to which no lease can run
// out: the earliest last renewal plus duration, which is no later than
// expiredSince's expiry whatever the grace and slack (math.MaxInt64 when
// there are no leases). A lease already run out counts, so an application
// whose eviction was capped is swept again.
func (a *appState) leasesDue() int64 {
	due := int64(math.MaxInt64)
	for _, l := range a.leases {
		due = min(due, l.renewed+l.duration.Milliseconds())
	}
	return due
}
