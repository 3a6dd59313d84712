package actors

import (
	"fmt"
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
	installed int64
	// fast is what the renewal fast path reads and writes (fastrenew.go).
	fast fastState
}

// renewedByClient reports whether a client renewed l on this node within its
// lease duration before now (lease clock).
func (l *lease) renewedByClient(now int64) bool {
	return l.clientRenewed > 0 && now-l.clientRenewed <= l.duration.Milliseconds()
}

// tombstone remembers a deleted instance so that a stale copy from a peer
// cannot bring it back. It is aged by its version: the HLC time of the
// deletion, which every node agrees on, so it expires at the same moment
// everywhere and no node can re-seed another with a tombstone that has
// already expired there.
//
// It is kept small (24 bytes, with the node as a number): under churn a
// node holds one per deletion of the last TombstoneTTL, millions at a few
// thousand deletions a second.
type tombstone struct {
	clock uint64 // the deletion's version: its HLC reading
	// dirty is the lastDirtyTimestamp of the record the deletion removed,
	// as this node held it (0 when it held none). For a cancel it is what
	// a later registration must exceed to outrank the tombstone (see
	// cancelOutranks).
	dirty   int64
	node    nodeID // the deletion's version: the node that made it
	evicted bool   // removed by eviction rather than a cancel
}

// newTombstone is the tombstone of a deletion at version v.
func (a *appState) newTombstone(v Version, evicted bool, dirty int64) tombstone {
	return tombstone{clock: v.Clock, node: a.opts.nodes.id(v.Node), evicted: evicted, dirty: dirty}
}

// version is the version of t's deletion.
func (a *appState) version(t tombstone) Version {
	return Version{Clock: t.clock, Node: a.opts.nodes.name(t.node)}
}

// deletedAt is when t's instance was deleted (epoch ms). received is when
// the tombstone arrived here (epoch ms; 0 if unknown): it ages the
// tombstone only under the sabotage switch TombstoneReceiptAge.
func (t tombstone) deletedAt(received int64) int64 {
	if sabotage.On(sabotage.TombstoneReceiptAge) && received != 0 {
		return received
	}
	return HLCMillis(t.clock)
}

// putTombstone stores t as id's tombstone, received now. A tombstone
// stamped further ahead of this node's clock than the HLC tolerance (a
// peer whose clock runs ahead) ages from now plus the tolerance instead:
// it must not outlive the others by however far that clock is off.
func (a *appState) putTombstone(id string, t tombstone, now int64) {
	a.tombstones.put(id, t, now)
	if limit := now + a.opts.hlc.maxAhead.Milliseconds(); HLCMillis(t.clock) > limit && !sabotage.On(sabotage.TombstoneAgedFromFuture) {
		if a.ahead == nil {
			a.ahead = map[string]int64{}
		}
		a.ahead[id] = limit
	} else if a.ahead != nil {
		delete(a.ahead, id)
	}
	if sabotage.Enabled {
		if a.received == nil {
			a.received = map[string]int64{}
		}
		a.received[id] = now
	}
}

// dropTombstone forgets id's tombstone.
func (a *appState) dropTombstone(id string) {
	a.tombstones.drop(id)
	if a.ahead != nil {
		delete(a.ahead, id)
	}
	if sabotage.Enabled {
		delete(a.received, id)
	}
}

// receivedAt is when id's tombstone arrived (epoch ms), known only in a
// sabotage build (0 otherwise).
func (a *appState) receivedAt(id string) int64 {
	if !sabotage.Enabled {
		return 0
	}
	return a.received[id]
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
}

// noteLease makes d count for how long the application's tombstones are
// kept.
func (a *appState) noteLease(d time.Duration) { a.maxLease = max(a.maxLease, d) }

// tombstoneTTL is how long the application keeps a tombstone (ms): see
// tombstoneTTLFor, for the longest lease it has held.
func (a *appState) tombstoneTTL() int64 { return a.tombstoneTTLFor(a.maxLease) }

// tombstoneTTLFor is how long a tombstone of a lease of duration d is
// kept (ms): the configured TTL, or the lease plus a renewal window and an
// eviction interval when that is longer. A client picks its lease; a
// tombstone that went before the lease could run out, evicted, on a side
// of a partition would let that side's copy back (its last renewal is then
// younger than the lease, so the stale rule cannot refuse it). Tombstones
// are kept by application, for its longest lease, since a tombstone
// received without its lease does not say how long it was.
func (a *appState) tombstoneTTLFor(d time.Duration) int64 {
	ttl := a.opts.tombstoneTTL.Milliseconds()
	if d <= 0 || sabotage.On(sabotage.TombstoneOutlivedByLease) {
		return ttl // no lease held here: none known to outlive
	}
	return max(ttl, (d + a.opts.tombstoneSlack).Milliseconds())
}

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
func (a *appState) empty() bool { return len(a.leases) == 0 && a.tombstones.len() == 0 }

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
	// private copy would be retained per cancel (issue 9).
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
	if sabotage.On(sabotage.NoTakeoverGrace) {
		since = 0
	} else {
		since = max(since, l.installed)
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

// tombstoneExpired reports whether t's deletion is older than the
// tombstone TTL at now; received is as for deletedAt.
func (a *appState) tombstoneExpired(t tombstone, received, now int64) bool {
	return t.deletedAt(received) < now-a.tombstoneTTL()
}

// tombstoneAgedFrom is the instant id's stored tombstone t ages from
// (epoch ms): its deletion time, or its receipt plus the HLC tolerance
// when that is earlier (see putTombstone).
func (a *appState) tombstoneAgedFrom(id string, t tombstone) int64 {
	d := t.deletedAt(a.receivedAt(id))
	if v, ok := a.ahead[id]; ok && v < d {
		d = v
	}
	return d
}

// storedExpired reports whether id's stored tombstone t has expired at now.
func (a *appState) storedExpired(id string, t tombstone, now int64) bool {
	return a.tombstoneAgedFrom(id, t) < now-a.tombstoneTTL()
}

// collectTombstones forgets tombstones older than the configured TTL (a
// packed one goes with its pack, when the pack's newest expires; until
// then it reads as expired). It returns when the next one is due to go
// (wall clock, epoch ms; math.MaxInt64 when it keeps none).
func (a *appState) collectTombstones() int64 {
	due, ok := a.tombstones.collect(a.now(), a.tombstoneTTL())
	if sabotage.Enabled {
		for id := range a.received {
			if _, kept := a.tombstones.get(id); !kept {
				delete(a.received, id)
			}
		}
	}
	for id := range a.ahead {
		if _, kept := a.tombstones.get(id); !kept {
			delete(a.ahead, id)
		}
	}
	if !ok {
		return math.MaxInt64
	}
	return due
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

// Record is an instance's replicated state: the instance (nil for a
// tombstone), the version that produced it and when its lease was last
// renewed as far as the sender knows.
type Record struct {
	App     string
	ID      string
	Version Version
	Deleted bool
	// Evicted marks a tombstone left by eviction (not by a cancel).
	Evicted bool
	// LastRenewal is the sender's last renewal of the lease (epoch ms; 0
	// for a tombstone). A copy keeps it: it is never born fresh.
	LastRenewal int64
	Instance    *Instance
	// Offset is this node's wall clock minus the sender's when the record
	// arrived (ms; 0 when the sender did not say): the sender's times
	// (LastRenewal, the version's HLC time) plus Offset are times on this
	// node's clock, so a copy's age does not depend on how far the two
	// clocks disagree (BUG-17).
	Offset int64
}

// MaxLeaseDurationSecs is the longest lease (durationInSecs) a client or
// a peer's record may carry: one day. Eureka sets no bound (its lease is
// a Java long of milliseconds), but here a lease must fit time.Duration
// (about 9.2e9 s), and every tombstone is kept at least as long as the
// lease it deleted (see tombstoneTTLFor), so a longer lease would keep an
// application's tombstones for as long. A client that means "never
// expire" is served by a day as well as by a century.
const MaxLeaseDurationSecs = 24 * 60 * 60

// ValidateRecord reports why a peer's record cannot be applied (nil when
// it can): a record names an instance, and a live one carries it with a
// lease of at most MaxLeaseDurationSecs. The wire accepts what this
// refuses; the receiver skips such a record, and applyRecord never sees
// one.
func ValidateRecord(r Record) error {
	switch {
	case r.ID == "":
		return fmt.Errorf("record of %q names no instance", r.App)
	case r.Deleted:
		return nil
	case r.Instance == nil:
		if sabotage.On(sabotage.EmptyRecordApplied) {
			return nil
		}
		return fmt.Errorf("live record %s/%s carries no instance", r.App, r.ID)
	case r.Instance.LeaseInfo.DurationSecs > MaxLeaseDurationSecs || r.Instance.LeaseInfo.DurationSecs < 0:
		if sabotage.On(sabotage.LeaseDurationUnbounded) {
			return nil
		}
		return fmt.Errorf("live record %s/%s has durationInSecs %d outside [0, %d]", r.App, r.ID,
			r.Instance.LeaseInfo.DurationSecs, MaxLeaseDurationSecs)
	}
	return nil
}

// ApplyResult is what applying a peer's record did.
type ApplyResult uint8

// The outcomes of applyRecord.
const (
	// ApplyIgnored: the record was not newer than what this node holds.
	ApplyIgnored ApplyResult = iota
	// ApplyInstalled: the record changed the registry.
	ApplyInstalled
	// ApplyRefused: a stale record (see applyRecord) was refused and
	// answered with an eviction tombstone that goes to every member.
	ApplyRefused
	// ApplyRefusedLate: a live record that a cancel here outranks (see
	// cancelOutranks) was refused and answered with a cancel tombstone
	// newer than it, which goes to every member.
	ApplyRefusedLate
)

// applyRecord installs a peer's record if it is newer than what this node
// holds (last writer wins by Version). A newer tombstone deletes the lease;
// an older copy of a deleted instance is ignored, so it never comes back.
//
// Tombstones live for the TTL only, so "older than my tombstone" cannot
// protect against a copy that outlived it (a side of a partition that lasted
// longer than the TTL, where self-preservation kept the instance). Such a
// copy is recognisable: its version is older than the TTL, this node holds
// neither the instance nor a tombstone, and the lease it carries has run out
// (no client renewed it for a whole lease as far as the sender knows). It
// is refused, and this node answers with an eviction tombstone of its own,
// which deletes the copy everywhere; a client that is in fact still renewing
// overrules that eviction on the node it renews on, as it overrules any
// eviction, or registers again on its next 404. initial exempts a node's
// initial sync: it holds nothing yet, so it cannot be the side that deleted
// the instance, and whatever it copies the others judge when they meet it.
//
// A live record newer than this node's cancel tombstone that the cancel
// outranks all the same (its lastDirtyTimestamp is no newer than the
// cancelled record's, see cancelOutranks) is refused and answered with a
// cancel tombstone newer than it: the node that served the late
// registration deletes it on receipt, and every node converges on the
// deletion by plain last-writer-wins. A tombstone's record carries no
// instance, so each node knows the cancelled record's lastDirtyTimestamp
// from the lease it deleted (or its earlier tombstone); one that held
// neither installs the late record, and the nodes that do know refuse it.
//
// A tombstone that has already expired by its HLC age is not stored (it
// still deletes an older lease): nodes cannot re-seed each other with
// tombstones they have all collected.
func (a *appState) applyRecord(r Record, initial bool) (Event, ApplyResult) {
	maker := r.Version.Node
	if maker == a.opts.node {
		maker = "" // this node's own record, come back
	}
	a.opts.hlc.ObserveFrom(maker, r.Version.Clock)
	cur := a.currentVersion(r.ID)
	if !cur.Less(r.Version) {
		return Event{}, ApplyIgnored
	}
	now, mono := a.now(), a.leaseNow()
	l := a.leases[r.ID]
	if l != nil {
		a.noteLease(l.duration)
	}
	if r.Deleted {
		if r.Evicted && l != nil && a.overrulesEviction(r.ID, l, mono) {
			// The owner gave up on this lease, but a client renewed it here
			// within a lease duration: the renewal wins, and a new version
			// (above the tombstone's) tells everyone. A copy merely received
			// from a peer does not count, or every fresh replica would
			// resurrect evictions.
			l.version = r.Version
			return a.publish(l, l.inst.Clone(), ActionAdded, CauseRegister, false, now), ApplyInstalled
		}
		t := a.newTombstone(r.Version, r.Evicted, a.deletedDirty(r, l))
		if !a.tombstoneExpired(t, now, now) && !sabotage.On(sabotage.TombstonesDropped) {
			a.putTombstone(r.ID, t, now)
		}
		if l == nil {
			return Event{}, ApplyIgnored
		}
		a.deleteLease(r.ID)
		inst := l.inst.Clone()
		inst.LeaseInfo.EvictionTimestamp = now
		inst.ActionType = ActionDeleted
		inst.LastUpdatedTimestamp = now
		l.version = r.Version
		return Event{Action: ActionDeleted, Cause: CauseCancel, Instance: inst, Version: r.Version, Replicated: true}, ApplyInstalled
	}
	inst := r.Instance.Clone()
	// The sender's times, on this node's clock.
	off := r.Offset
	if sabotage.On(sabotage.CopyAgedByReceiverClock) {
		off = 0
	}
	lastRenewal := max(r.LastRenewal, inst.LeaseInfo.LastRenewalTimestamp, inst.LeaseInfo.RegistrationTimestamp)
	if lastRenewal > 0 {
		lastRenewal += off
	}
	duration := time.Duration(inst.LeaseInfo.DurationSecs) * time.Second
	if l == nil && cur.IsZero() && !initial && !sabotage.On(sabotage.StaleRecordsAccepted) &&
		a.stale(r, inst, off, lastRenewal, duration, now) {
		return a.refuseStale(r, inst, now), ApplyRefused
	}
	a.noteLease(duration)
	if l == nil {
		if t, ok := a.cancelOutranks(r.ID, inst.LastDirtyTimestamp, now); ok {
			return a.refuseLate(r, inst, t, now), ApplyRefusedLate
		}
	}
	// The copy's age at receipt is the sender's last renewal against this
	// node's wall clock, at most a lease; from then on it ages on the
	// lease clock.
	nl := &lease{registered: inst.LeaseInfo.RegistrationTimestamp, lastUpdate: lastRenewal,
		renewed:  a.leaseTime(lastRenewal, now, mono, duration),
		duration: duration, serviceUp: inst.LeaseInfo.ServiceUpTimestamp, installed: mono}
	if sabotage.On(sabotage.CopiedLeaseFresh) {
		nl.lastUpdate, nl.renewed = now, mono
	}
	if nl.registered == 0 {
		nl.registered = now
	}
	if l != nil {
		// A replicated change never moves the local lease clock back.
		nl.lastUpdate = max(l.lastUpdate, nl.lastUpdate)
		nl.renewed = max(l.renewed, nl.renewed)
		nl.clientRenewed = l.clientRenewed
		nl.installed = l.installed
	}
	a.share(inst)
	nl.inst = inst
	nl.version = r.Version
	a.setLease(r.ID, nl)
	if sabotage.Enabled {
		if a.copied == nil {
			a.copied = map[string]int64{}
		}
		a.copied[r.ID] = mono
	}
	a.dropTombstone(r.ID)
	action := inst.ActionType
	if action == "" || action == ActionDeleted {
		action = ActionAdded
	}
	return Event{Action: action, Cause: CauseRegister, Instance: inst, Version: r.Version, Replicated: true, NewLease: l == nil}, ApplyInstalled
}

// stale reports whether a live record r (its instance inst, its times
// on this node's clock off ms after the sender's, its lease's last renewal
// lastRenewal on this node's clock, its lease duration) that this node
// neither holds nor remembers is a copy that outlived its tombstone (see
// applyRecord). It is judged on client evidence only, the record's
// LastRenewal: a client's last registration or renewal, which operators'
// writes (a status change, an override's removal, a metadata update) do
// not move. Those make a new version and touch the lease where they are
// made, but a copy that no client has renewed since longer than a
// tombstone lives is stale however recently an operator wrote to it.
func (a *appState) stale(r Record, inst *Instance, off, lastRenewal int64, duration time.Duration, now int64) bool {
	ttl := max(a.tombstoneTTL(), a.tombstoneTTLFor(duration))
	if sabotage.On(sabotage.StaleJudgedByOperatorWrites) {
		return HLCMillis(r.Version.Clock)+off < now-ttl && now > lastRenewal+duration.Milliseconds()
	}
	evidence := lastRenewal
	if r.LastRenewal > 0 {
		evidence = r.LastRenewal + off
	}
	if now <= evidence+duration.Milliseconds() {
		return false // a client renewed it within its lease
	}
	return HLCMillis(r.Version.Clock)+off < now-ttl || (r.LastRenewal > 0 && evidence < now-ttl)
}

// overrulesEviction reports whether the lease l, held here, survives a
// peer's eviction tombstone: a client renewed it on this node within a lease
// duration before now (lease clock).
func (a *appState) overrulesEviction(id string, l *lease, now int64) bool {
	if sabotage.On(sabotage.ReplicaOverrulesEviction) {
		// BUG-1 as it was: a copy received less than a lease ago counted
		// as renewed here, and overruled the owner's eviction.
		received := a.copied[id]
		return l.renewedByClient(now) || (received > 0 && now-received <= l.duration.Milliseconds())
	}
	return l.renewedByClient(now)
}

// refuseStale answers a stale record (see applyRecord) with an eviction
// tombstone newer than it. The event goes to every member (it is not marked
// replicated) but changes nothing here but the tombstone.
func (a *appState) refuseStale(r Record, inst *Instance, now int64) Event {
	v := a.nextVersion(r.Version)
	a.putTombstone(r.ID, a.newTombstone(v, true, 0), now)
	inst.LeaseInfo.EvictionTimestamp = now
	inst.ActionType = ActionDeleted
	inst.LastUpdatedTimestamp = now
	return Event{Action: ActionDeleted, Cause: CauseRefuseStale, Instance: inst, Version: v}
}

// deletedDirty is the lastDirtyTimestamp of what the peer's tombstone r
// deletes here: the lease l (nil if none), else the tombstone it replaces,
// or r's instance when it carries one.
func (a *appState) deletedDirty(r Record, l *lease) int64 {
	var d int64
	if l != nil {
		d = l.inst.LastDirtyTimestamp
	} else if t, ok := a.tombstones.get(r.ID); ok {
		d = t.dirty
	}
	if r.Instance != nil {
		d = max(d, r.Instance.LastDirtyTimestamp)
	}
	return d
}

// refuseLate answers a live record that the cancel tombstone t outranks
// (see cancelOutranks) with a cancel tombstone newer than the record. The
// event goes to every member (it is not marked replicated) but changes
// nothing here but the tombstone.
func (a *appState) refuseLate(r Record, inst *Instance, t tombstone, now int64) Event {
	v := a.nextVersion(r.Version)
	a.putTombstone(r.ID, a.newTombstone(v, false, t.dirty), now)
	inst.LeaseInfo.EvictionTimestamp = now
	inst.ActionType = ActionDeleted
	inst.LastUpdatedTimestamp = now
	return Event{Action: ActionDeleted, Cause: CauseRefuseLate, Instance: inst, Version: v}
}

// currentVersion is the version of id's lease or tombstone (zero if none).
func (a *appState) currentVersion(id string) Version {
	if l := a.leases[id]; l != nil {
		return l.version
	}
	if t, ok := a.tombstones.get(id); ok {
		return a.version(t)
	}
	return Version{}
}

// records returns every lease and every unexpired tombstone of the
// application as records.
func (a *appState) records() []Record {
	out := make([]Record, 0, len(a.leases)+a.tombstones.len())
	for id, l := range a.leases {
		out = append(out, a.leaseRecord(id, l))
	}
	now := a.now()
	for id, t := range a.tombstones.all() {
		if !a.storedExpired(id, t, now) {
			out = append(out, Record{App: a.name, ID: id, Version: a.version(t), Deleted: true, Evicted: t.evicted})
		}
	}
	return out
}

func (a *appState) leaseRecord(id string, l *lease) Record {
	return Record{App: a.name, ID: id, Version: l.version, LastRenewal: l.lastUpdate, Instance: l.inst}
}

// RecordVersion is one record's identity and version, what anti-entropy
// compares before it moves any record.
type RecordVersion struct {
	ID      string
	Version Version
}

// versions returns the version of every lease and unexpired tombstone.
func (a *appState) versions() []RecordVersion {
	out := make([]RecordVersion, 0, len(a.leases)+a.tombstones.len())
	for id, l := range a.leases {
		out = append(out, RecordVersion{ID: id, Version: l.version})
	}
	now := a.now()
	for id, t := range a.tombstones.all() {
		if !a.storedExpired(id, t, now) {
			out = append(out, RecordVersion{ID: id, Version: a.version(t)})
		}
	}
	return out
}

// recordsNewerThan returns the records (leases and unexpired tombstones)
// whose version is newer than the one the asker listed in theirs, or that
// the asker lacks: exactly what the asker needs from this node.
func (a *appState) recordsNewerThan(theirs []RecordVersion) []Record {
	known := make(map[string]Version, len(theirs))
	for _, rv := range theirs {
		known[rv.ID] = rv.Version
	}
	var out []Record
	for id, l := range a.leases {
		if v, ok := known[id]; !ok || v.Less(l.version) {
			out = append(out, a.leaseRecord(id, l))
		}
	}
	now := a.now()
	for id, t := range a.tombstones.all() {
		tv := a.version(t)
		if v, ok := known[id]; (!ok || v.Less(tv)) && !a.storedExpired(id, t, now) {
			out = append(out, Record{App: a.name, ID: id, Version: tv, Deleted: true, Evicted: t.evicted})
		}
	}
	return out
}
