package actors

// The application's replication records: a peer's copy validated, applied
// or refused (stale, outranked by a tombstone, late), and the records and
// versions anti-entropy exchanges.

import (
	"fmt"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
)

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
		cause := CauseCancel
		if r.Evicted {
			cause = CauseEvict
		}
		return Event{Action: ActionDeleted, Cause: cause, Instance: inst, Version: r.Version, Replicated: true}, ApplyInstalled
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
	} else if a.handed != nil {
		a.takeHanded(r.ID, nl, mono)
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
	return Event{Action: action, Cause: CauseRegister, Instance: inst, Version: r.Version, Replicated: true, NewLease: l == nil,
		LeaseExpired: l == nil && now > lastRenewal+duration.Milliseconds()}, ApplyInstalled
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
