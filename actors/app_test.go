package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testEpoch is the ManualClock start of the plain-core tests.
var testEpoch = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// newTestApp returns an appState named APP driven by a ManualClock and an HLC
// on that clock, with a one-minute tombstone TTL.
func newTestApp(t *testing.T, doubling bool) (*appState, *ManualClock) {
	t.Helper()
	clock := NewManualClock(testEpoch)
	opts := &appOptions{node: "node-a", clock: clock, hlc: NewHLC(clock),
		leaseDurationDoubling: doubling, tombstoneTTL: time.Minute}
	return newAppState("APP", opts), clock
}

// testInstance returns a normalized instance of APP with a 10 s lease.
func testInstance(id string, st Status) *Instance {
	in := &Instance{
		InstanceID: id,
		HostName:   id + ".example.org",
		App:        "app",
		IPAddr:     "10.0.0.1",
		Status:     st,
		VIPAddress: "app",
		LeaseInfo:  LeaseInfo{DurationSecs: 10},
		Metadata:   map[string]string{"zone": "a"},
	}
	in.Normalize()
	return in
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func ptr[T any](v T) *T { return &v }

// mustGet returns the live state of id, failing the test if it is unknown.
func mustGet(t *testing.T, a *appState, id string) (*Instance, bool) {
	t.Helper()
	inst, expired, ok := a.get(id, 0)
	require.True(t, ok, "instance %s should exist", id)
	return inst, expired
}

func TestRegisterNewInstance(t *testing.T) {
	a, clock := newTestApp(t, false)
	in := testInstance("i-1", StatusUp)

	ev := a.register(in, false)

	now := ms(clock.Now())
	assert.Equal(t, ActionAdded, ev.Action)
	assert.Equal(t, CauseRegister, ev.Cause)
	assert.True(t, ev.NewLease)
	assert.False(t, ev.Replicated)
	assert.Equal(t, Key{App: "APP", ID: "i-1"}, ev.Key())
	assert.Equal(t, "node-a", ev.Version.Node)
	assert.Equal(t, now, HLCMillis(ev.Version.Clock))

	got := ev.Instance
	assert.Equal(t, StatusUp, got.Status)
	assert.Equal(t, StatusUnknown, got.OverriddenStatus)
	assert.Equal(t, ActionAdded, got.ActionType)
	assert.Equal(t, now, got.LastUpdatedTimestamp)
	assert.Equal(t, now, got.LastDirtyTimestamp, "a missing lastDirtyTimestamp becomes now")
	assert.Equal(t, now, got.LeaseInfo.RegistrationTimestamp)
	assert.Equal(t, now, got.LeaseInfo.LastRenewalTimestamp)
	assert.Equal(t, now, got.LeaseInfo.ServiceUpTimestamp)
	assert.Zero(t, got.LeaseInfo.EvictionTimestamp)

	// The struct is copied (the registry takes ownership of the maps).
	in.IPAddr = "10.9.9.9"
	stored, expired := mustGet(t, a, "i-1")
	assert.False(t, expired)
	assert.Equal(t, "a", stored.Metadata["zone"])
	assert.Equal(t, "10.0.0.1", stored.IPAddr)

	// A second registration is not a new lease and gets a later version.
	clock.Advance(time.Second)
	ev2 := a.register(testInstance("i-1", StatusUp), true)
	assert.False(t, ev2.NewLease)
	assert.False(t, ev2.Replicated, "a Eureka peer's registration still goes to the Heureka members")
	assert.True(t, ev.Version.Less(ev2.Version))
	assert.Len(t, a.leases, 1)
}

func TestRegisterServiceUpTimestamp(t *testing.T) {
	a, clock := newTestApp(t, false)

	ev := a.register(testInstance("i-1", StatusStarting), false)
	assert.Zero(t, ev.Instance.LeaseInfo.ServiceUpTimestamp, "not UP yet")

	clock.Advance(time.Second)
	upAt := ms(clock.Now())
	ev = a.register(testInstance("i-1", StatusUp), false)
	assert.Equal(t, upAt, ev.Instance.LeaseInfo.ServiceUpTimestamp)

	// Carried over by a later registration, so it precedes the new
	// registration timestamp.
	clock.Advance(time.Second)
	ev = a.register(testInstance("i-1", StatusUp), false)
	assert.Equal(t, upAt, ev.Instance.LeaseInfo.ServiceUpTimestamp)
	assert.Equal(t, ms(clock.Now()), ev.Instance.LeaseInfo.RegistrationTimestamp)
}

// Checklist 13: a registration carrying an older lastDirtyTimestamp keeps the
// stored data but still resets the lease.
func TestReRegisterDirtyTimestamp(t *testing.T) {
	tests := []struct {
		name      string
		incoming  int64 // registrant's lastDirtyTimestamp relative to the stored 5000
		keepsData bool
	}{
		{"older keeps stored data", 4000, true},
		{"equal takes incoming data", 5000, false},
		{"newer takes incoming data", 6000, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, clock := newTestApp(t, false)
			first := testInstance("i-1", StatusUp)
			first.LastDirtyTimestamp = 5000
			first.Metadata = map[string]string{"v": "stored"}
			a.register(first, false)

			clock.Advance(7 * time.Second)
			second := testInstance("i-1", StatusUp)
			second.LastDirtyTimestamp = tc.incoming
			second.IPAddr = "10.0.0.2"
			second.Metadata = map[string]string{"v": "incoming"}
			ev := a.register(second, false)

			now := ms(clock.Now())
			if tc.keepsData {
				assert.Equal(t, "stored", ev.Instance.Metadata["v"])
				assert.Equal(t, "10.0.0.1", ev.Instance.IPAddr)
				assert.Equal(t, int64(5000), ev.Instance.LastDirtyTimestamp)
			} else {
				assert.Equal(t, "incoming", ev.Instance.Metadata["v"])
				assert.Equal(t, "10.0.0.2", ev.Instance.IPAddr)
				assert.Equal(t, tc.incoming, ev.Instance.LastDirtyTimestamp)
			}
			assert.Equal(t, ActionAdded, ev.Action)
			assert.False(t, ev.NewLease)
			// The lease is reset in every case.
			assert.Equal(t, now, ev.Instance.LeaseInfo.RegistrationTimestamp)
			assert.Equal(t, now, ev.Instance.LeaseInfo.LastRenewalTimestamp)
			got, _ := mustGet(t, a, "i-1")
			assert.Equal(t, now, got.LeaseInfo.LastRenewalTimestamp)
			clock.Advance(10 * time.Second)
			_, expired := mustGet(t, a, "i-1")
			assert.False(t, expired, "the reset lease runs from the re-registration")
		})
	}
}

// The rule chain (spec §4.5) as a pure function.
func TestStatusFor(t *testing.T) {
	leaseWith := func(st Status) *lease { return &lease{inst: &Instance{Status: st, OverriddenStatus: StatusUnknown}} }
	tests := []struct {
		name       string
		status     Status
		override   Status
		lease      *lease
		replicated bool
		want       Status
	}{
		{"DOWN beats an OOS override", StatusDown, StatusOutOfService, leaseWith(StatusUp), false, StatusDown},
		{"STARTING beats an OOS override", StatusStarting, StatusOutOfService, nil, false, StatusStarting},
		{"UNKNOWN is the client's word", StatusUnknown, StatusOutOfService, leaseWith(StatusUp), false, StatusUnknown},
		{"override wins over UP", StatusUp, StatusOutOfService, leaseWith(StatusUp), false, StatusOutOfService},
		{"override wins for replicas too", StatusUp, StatusOutOfService, nil, true, StatusOutOfService},
		{"override UP wins over client OOS", StatusOutOfService, StatusUp, nil, false, StatusUp},
		{"existing OOS lease holds", StatusUp, StatusUnknown, leaseWith(StatusOutOfService), false, StatusOutOfService},
		{"existing UP lease holds against client OOS", StatusOutOfService, StatusUnknown, leaseWith(StatusUp), false, StatusUp},
		{"lease rule skipped for replicas", StatusOutOfService, StatusUnknown, leaseWith(StatusUp), true, StatusOutOfService},
		{"lease DOWN does not hold", StatusUp, StatusUnknown, leaseWith(StatusDown), false, StatusUp},
		{"no lease: client status", StatusUp, StatusUnknown, nil, false, StatusUp},
		{"empty override counts as none", StatusUp, "", nil, false, StatusUp},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Instance{Status: tc.status, OverriddenStatus: tc.override}
			assert.Equal(t, tc.want, statusFor(r, tc.lease, tc.replicated))
		})
	}
}

// Checklist 10: an OUT_OF_SERVICE override sticks through a re-registration
// reporting UP and through renewals.
func TestOverrideSticksThroughRegisterAndRenew(t *testing.T) {
	a, clock := newTestApp(t, false)
	a.register(testInstance("i-1", StatusUp), false)

	clock.Advance(time.Second)
	ev, changed, ok := a.setStatus("i-1", StatusOutOfService, ptr(int64(9_000_000_000_000)), false)
	require.True(t, ok)
	require.True(t, changed)
	assert.Equal(t, ActionModified, ev.Action)
	assert.Equal(t, CauseStatusUpdate, ev.Cause)
	assert.Equal(t, StatusOutOfService, ev.Instance.Status)
	assert.Equal(t, StatusOutOfService, ev.Instance.OverriddenStatus)
	assert.Equal(t, int64(9_000_000_000_000), ev.Instance.LastDirtyTimestamp, "dirty = max(stored, param)")

	clock.Advance(time.Second)
	ev = a.register(testInstance("i-1", StatusUp), false)
	assert.Equal(t, StatusOutOfService, ev.Instance.Status)
	assert.Equal(t, StatusOutOfService, ev.Instance.OverriddenStatus)

	res, evs, renewed := a.renew(RenewRequest{App: "APP", ID: "i-1"})
	assert.Equal(t, RenewOK, res.Outcome)
	assert.Empty(t, evs)
	assert.True(t, renewed)
	got, _ := mustGet(t, a, "i-1")
	assert.Equal(t, StatusOutOfService, got.Status)
}

func TestSetStatus(t *testing.T) {
	t.Run("unknown instance", func(t *testing.T) {
		a, _ := newTestApp(t, false)
		_, changed, ok := a.setStatus("nope", StatusOutOfService, nil, false)
		assert.False(t, ok)
		assert.False(t, changed)
	})
	t.Run("current status records nothing but renews the lease", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		a.register(testInstance("i-1", StatusUp), false)
		clock.Advance(3 * time.Second)
		_, changed, ok := a.setStatus("i-1", StatusUp, nil, false)
		assert.True(t, ok)
		assert.False(t, changed)
		got, _ := mustGet(t, a, "i-1")
		assert.Equal(t, StatusUnknown, got.OverriddenStatus, "no override recorded")
		// The lease counts from now here, but its last renewal, the
		// client evidence that goes on the wire, stays the client's.
		assert.Equal(t, ms(clock.Now())-3000, got.LeaseInfo.LastRenewalTimestamp)
		assert.Equal(t, ms(clock.Now()), a.leases["i-1"].renewed)
	})
	t.Run("older dirty timestamp keeps stored", func(t *testing.T) {
		a, _ := newTestApp(t, false)
		in := testInstance("i-1", StatusUp)
		in.LastDirtyTimestamp = 5000
		a.register(in, false)
		ev, changed, _ := a.setStatus("i-1", StatusDown, ptr(int64(10)), true)
		require.True(t, changed)
		assert.False(t, ev.Replicated, "a Eureka peer's change still goes to the Heureka members")
		assert.Equal(t, int64(5000), ev.Instance.LastDirtyTimestamp)
	})
	t.Run("UP sets serviceUp", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		a.register(testInstance("i-1", StatusStarting), false)
		clock.Advance(time.Second)
		ev, changed, _ := a.setStatus("i-1", StatusUp, nil, false)
		require.True(t, changed)
		assert.Equal(t, ms(clock.Now()), ev.Instance.LeaseInfo.ServiceUpTimestamp)
	})
}

// Checklist 11: deleting an override.
func TestDeleteOverride(t *testing.T) {
	t.Run("UNKNOWN then renew 404 then re-register UP", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		a.register(testInstance("i-1", StatusUp), false)
		a.setStatus("i-1", StatusOutOfService, nil, false)

		clock.Advance(time.Second)
		ev, changed, ok := a.deleteOverride("i-1", StatusUnknown, nil, false)
		require.True(t, ok)
		require.True(t, changed)
		assert.Equal(t, ActionModified, ev.Action)
		assert.Equal(t, CauseDeleteOverride, ev.Cause)
		assert.Equal(t, StatusUnknown, ev.Instance.Status)
		assert.Equal(t, StatusUnknown, ev.Instance.OverriddenStatus)
		got, _ := mustGet(t, a, "i-1")
		assert.Equal(t, ms(clock.Now()), a.leases["i-1"].renewed, "delete renews the lease here")
		assert.Equal(t, ms(clock.Now())-1000, got.LeaseInfo.LastRenewalTimestamp, "not the client's last renewal")

		clock.Advance(time.Second)
		res, evs, renewed := a.renew(RenewRequest{App: "APP", ID: "i-1"})
		assert.Equal(t, RenewNotFound, res.Outcome)
		assert.Empty(t, evs)
		assert.False(t, renewed, "a 404 for UNKNOWN is not a renewal")

		ev = a.register(testInstance("i-1", StatusUp), false)
		assert.Equal(t, StatusUp, ev.Instance.Status)
		assert.Equal(t, StatusUnknown, ev.Instance.OverriddenStatus)
		res, _, _ = a.renew(RenewRequest{App: "APP", ID: "i-1"})
		assert.Equal(t, RenewOK, res.Outcome)
	})
	t.Run("value UP applies at once", func(t *testing.T) {
		a, _ := newTestApp(t, false)
		a.register(testInstance("i-1", StatusUp), false)
		a.setStatus("i-1", StatusOutOfService, nil, false)
		ev, changed, _ := a.deleteOverride("i-1", StatusUp, ptr(int64(1)), false)
		require.True(t, changed)
		assert.Equal(t, StatusUp, ev.Instance.Status)
		res, _, _ := a.renew(RenewRequest{App: "APP", ID: "i-1"})
		assert.Equal(t, RenewOK, res.Outcome)
		// Re-registering UP stays UP: the override is gone.
		assert.Equal(t, StatusUp, a.register(testInstance("i-1", StatusUp), false).Instance.Status)
	})
	t.Run("no override records nothing", func(t *testing.T) {
		a, _ := newTestApp(t, false)
		a.register(testInstance("i-1", StatusUp), false)
		_, changed, ok := a.deleteOverride("i-1", StatusUnknown, nil, false)
		assert.True(t, ok)
		assert.False(t, changed)
		got, _ := mustGet(t, a, "i-1")
		assert.Equal(t, StatusUp, got.Status)
	})
	t.Run("unknown instance", func(t *testing.T) {
		a, _ := newTestApp(t, false)
		_, _, ok := a.deleteOverride("nope", StatusUnknown, nil, false)
		assert.False(t, ok)
	})
}

// Checklist 12: a client reporting DOWN or STARTING beats an OUT_OF_SERVICE
// override; the override is kept and applies again once it reports UP.
func TestClientDownOrStartingBeatsOverride(t *testing.T) {
	for _, st := range []Status{StatusDown, StatusStarting} {
		t.Run(string(st), func(t *testing.T) {
			a, _ := newTestApp(t, false)
			a.register(testInstance("i-1", StatusUp), false)
			a.setStatus("i-1", StatusOutOfService, nil, false)

			ev := a.register(testInstance("i-1", st), false)
			assert.Equal(t, st, ev.Instance.Status)
			assert.Equal(t, StatusOutOfService, ev.Instance.OverriddenStatus)
			res, evs, _ := a.renew(RenewRequest{App: "APP", ID: "i-1"})
			assert.Equal(t, RenewOK, res.Outcome)
			assert.Empty(t, evs)

			ev = a.register(testInstance("i-1", StatusUp), false)
			assert.Equal(t, StatusOutOfService, ev.Instance.Status)
		})
	}
}

// Checklist 7: renewal outcomes; the lease is renewed even on 404/409.
func TestRenewOutcomes(t *testing.T) {
	const stored = int64(5000)
	tests := []struct {
		name       string
		id         string
		dirty      *int64
		replicated bool
		want       RenewOutcome
		renewed    bool
	}{
		{"unknown instance", "nope", nil, false, RenewNotFound, false},
		{"no dirty timestamp", "i-1", nil, false, RenewOK, true},
		{"client newer", "i-1", ptr(stored + 1), false, RenewNotFound, true},
		{"replica newer", "i-1", ptr(stored + 1), true, RenewNotFound, true},
		{"client older", "i-1", ptr(stored - 1), false, RenewOK, true},
		{"replica older", "i-1", ptr(stored - 1), true, RenewConflict, true},
		{"client equal", "i-1", ptr(stored), false, RenewOK, true},
		{"replica equal", "i-1", ptr(stored), true, RenewOK, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, clock := newTestApp(t, false)
			in := testInstance("i-1", StatusUp)
			in.LastDirtyTimestamp = stored
			a.register(in, false)

			clock.Advance(4 * time.Second)
			res, evs, renewed := a.renew(RenewRequest{App: "APP", ID: tc.id, LastDirtyTimestamp: tc.dirty, Replicated: tc.replicated})
			assert.Equal(t, tc.want, res.Outcome)
			assert.Equal(t, tc.renewed, renewed)
			assert.Empty(t, evs)
			if tc.want == RenewConflict {
				require.NotNil(t, res.Instance)
				assert.Equal(t, stored, res.Instance.LastDirtyTimestamp)
				assert.Equal(t, "i-1", res.Instance.ID())
			} else {
				assert.Nil(t, res.Instance)
			}
			if tc.renewed {
				got, _ := mustGet(t, a, "i-1")
				assert.Equal(t, ms(clock.Now()), got.LeaseInfo.LastRenewalTimestamp, "lease renewed")
			}
		})
	}
}

func TestRenewReplicaNewerStoresOverride(t *testing.T) {
	a, _ := newTestApp(t, false)
	in := testInstance("i-1", StatusUp)
	in.LastDirtyTimestamp = 5000
	a.register(in, false)

	res, evs, renewed := a.renew(RenewRequest{App: "APP", ID: "i-1", LastDirtyTimestamp: ptr(int64(6000)),
		OverriddenStatus: StatusOutOfService, Replicated: true})
	assert.Equal(t, RenewNotFound, res.Outcome)
	assert.True(t, renewed)
	require.Len(t, evs, 1)
	assert.Equal(t, ActionModified, evs[0].Action)
	assert.Equal(t, StatusOutOfService, evs[0].Instance.OverriddenStatus)

	// A client's overriddenstatus parameter is ignored.
	a2, _ := newTestApp(t, false)
	a2.register(in, false)
	_, evs, _ = a2.renew(RenewRequest{App: "APP", ID: "i-1", LastDirtyTimestamp: ptr(int64(6000)),
		OverriddenStatus: StatusOutOfService})
	assert.Empty(t, evs)
}

// A stored instance whose status disagrees with the rule chain (here a peer's
// copy with an override) is corrected by the next renewal.
func TestRenewCorrectsStatusByRuleChain(t *testing.T) {
	a, clock := newTestApp(t, false)
	in := testInstance("i-1", StatusUp)
	in.OverriddenStatus = StatusOutOfService
	_, ok := applyRec(a, Record{App: "APP", ID: "i-1", Version: Version{Clock: 1 << hlcLogicalBits, Node: "peer"}, Instance: in,
		LastRenewal: ms(clock.Now())})
	require.True(t, ok)

	res, evs, renewed := a.renew(RenewRequest{App: "APP", ID: "i-1"})
	assert.Equal(t, RenewOK, res.Outcome)
	assert.True(t, renewed)
	require.Len(t, evs, 1)
	assert.Equal(t, ActionModified, evs[0].Action)
	assert.Equal(t, StatusOutOfService, evs[0].Instance.Status)
	assert.Equal(t, StatusUp, in.Status, "the applied record is not mutated")
}

// Spec §4.2: a lease expires durationInSecs after its last renewal, or twice
// that with LeaseDurationDoubling (Eureka's quirk); a never-renewed lease
// expires after 1× in both modes.
func TestLeaseExpiry(t *testing.T) {
	const d = 10 * time.Second
	tests := []struct {
		name     string
		doubling bool
		renewAt  time.Duration // 0: never renewed
		expiry   time.Duration // from registration: expired strictly after this
		lastRen  time.Duration // reported lastRenewalTimestamp, from registration
	}{
		{"never renewed", false, 0, d, 0},
		{"never renewed, doubling", true, 0, d, 0},
		{"renewed", false, 5 * time.Second, 5*time.Second + d, 5 * time.Second},
		{"renewed, doubling", true, 5 * time.Second, 5*time.Second + 2*d, 5*time.Second + d},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, clock := newTestApp(t, tc.doubling)
			a.register(testInstance("i-1", StatusUp), false)
			if tc.renewAt > 0 {
				clock.Advance(tc.renewAt)
				res, _, _ := a.renew(RenewRequest{App: "APP", ID: "i-1"})
				require.Equal(t, RenewOK, res.Outcome)
			}
			got, _ := mustGet(t, a, "i-1")
			assert.Equal(t, ms(testEpoch.Add(tc.lastRen)), got.LeaseInfo.LastRenewalTimestamp)

			clock.Advance(testEpoch.Add(tc.expiry).Sub(clock.Now()))
			_, expired := mustGet(t, a, "i-1")
			assert.False(t, expired, "not expired at exactly the limit")
			assert.Empty(t, a.expiredIDs(0, 0))

			clock.Advance(time.Millisecond)
			_, expired = mustGet(t, a, "i-1")
			assert.True(t, expired)
			assert.Equal(t, []string{"i-1"}, a.expiredIDs(0, 0))
			assert.Empty(t, a.expiredIDs(time.Second, 0), "eviction compensation adds slack")
		})
	}
}

func TestLeaseDurationDefault(t *testing.T) {
	a, clock := newTestApp(t, false)
	in := &Instance{HostName: "h1", App: "app"}
	in.Normalize()
	a.register(in, false)
	clock.Advance(DefaultDurationSecs * time.Second)
	assert.Empty(t, a.expiredIDs(0, 0))
	clock.Advance(time.Millisecond)
	assert.Equal(t, []string{"h1"}, a.expiredIDs(0, 0), "id falls back to the host name")
}

// Checklist 9: cancel gives DELETED with evictionTimestamp, leaves a
// tombstone and removes the override.
func TestCancel(t *testing.T) {
	a, clock := newTestApp(t, false)
	a.register(testInstance("i-1", StatusUp), false)
	a.setStatus("i-1", StatusOutOfService, nil, false)
	clock.Advance(2 * time.Second)

	ev, ok := a.remove("i-1", CauseCancel, true)
	require.True(t, ok)
	now := ms(clock.Now())
	assert.Equal(t, ActionDeleted, ev.Action)
	assert.Equal(t, CauseCancel, ev.Cause)
	assert.False(t, ev.Replicated, "a Eureka peer's cancel still goes to the Heureka members")
	assert.Equal(t, ActionDeleted, ev.Instance.ActionType)
	assert.Equal(t, now, ev.Instance.LeaseInfo.EvictionTimestamp)
	assert.Equal(t, now, ev.Instance.LastUpdatedTimestamp)

	_, _, found := a.get("i-1", 0)
	assert.False(t, found)
	assert.False(t, a.empty(), "the tombstone keeps the app")
	recs := a.records()
	require.Len(t, recs, 1)
	assert.True(t, recs[0].Deleted)
	assert.Nil(t, recs[0].Instance)
	assert.Equal(t, ev.Version, recs[0].Version)

	_, ok = a.remove("i-1", CauseCancel, false)
	assert.False(t, ok, "second cancel finds nothing")
	res, _, _ := a.renew(RenewRequest{App: "APP", ID: "i-1"})
	assert.Equal(t, RenewNotFound, res.Outcome)

	// The override went with the lease.
	ev = a.register(testInstance("i-1", StatusUp), false)
	assert.Equal(t, StatusUp, ev.Instance.Status)
	assert.True(t, ev.NewLease)
	assert.Zero(t, ev.Instance.LeaseInfo.EvictionTimestamp)
	assert.Len(t, a.records(), 1, "registration replaces the tombstone")
}

// Checklist 14: metadata merges keys and re-registers (ADDED) without
// touching lastDirtyTimestamp; published instances are never mutated.
func TestUpdateMetadata(t *testing.T) {
	a, clock := newTestApp(t, false)
	in := testInstance("i-1", StatusUp)
	in.LastDirtyTimestamp = 4242
	first := a.register(in, false)

	clock.Advance(time.Second)
	ev, ok := a.updateMetadata("i-1", map[string]string{"zone": "b", "extra": "x"}, false)
	require.True(t, ok)
	assert.Equal(t, ActionAdded, ev.Action)
	assert.Equal(t, CauseMetadata, ev.Cause)
	assert.False(t, ev.NewLease)
	assert.Equal(t, map[string]string{"zone": "b", "extra": "x"}, ev.Instance.Metadata)
	assert.Equal(t, int64(4242), ev.Instance.LastDirtyTimestamp)
	assert.Equal(t, map[string]string{"zone": "a"}, first.Instance.Metadata, "earlier state untouched")

	nilMeta := testInstance("i-2", StatusUp)
	nilMeta.Metadata = nil
	a.register(nilMeta, false)
	ev, ok = a.updateMetadata("i-2", map[string]string{"k": "v"}, true)
	require.True(t, ok)
	assert.False(t, ev.Replicated)
	assert.Equal(t, map[string]string{"k": "v"}, ev.Instance.Metadata)

	_, ok = a.updateMetadata("nope", map[string]string{"k": "v"}, false)
	assert.False(t, ok)
}

func TestExpiredIDsAndEvictRecheck(t *testing.T) {
	a, clock := newTestApp(t, false)
	a.register(testInstance("i-1", StatusUp), false)
	a.register(testInstance("i-2", StatusUp), false)
	a.register(testInstance("i-3", StatusUp), false)
	clock.Advance(6 * time.Second)
	a.renew(RenewRequest{App: "APP", ID: "i-3"})
	clock.Advance(5 * time.Second)

	assert.ElementsMatch(t, []string{"i-1", "i-2"}, a.expiredIDs(0, 0))

	// i-1 renews between the sweep and the eviction: it survives.
	a.renew(RenewRequest{App: "APP", ID: "i-1"})
	_, ok := a.evict("i-1", 0, 0)
	assert.False(t, ok)
	_, ok = a.evict("i-3", 0, 0)
	assert.False(t, ok, "not expired")
	_, ok = a.evict("i-2", 2*time.Second, 0)
	assert.False(t, ok, "not expired with the sweep's slack")
	_, ok = a.evict("nope", 0, 0)
	assert.False(t, ok)

	ev, ok := a.evict("i-2", 0, 0)
	require.True(t, ok)
	assert.Equal(t, ActionDeleted, ev.Action)
	assert.Equal(t, CauseEvict, ev.Cause)
	assert.False(t, ev.Replicated)
	assert.Equal(t, ms(clock.Now()), ev.Instance.LeaseInfo.EvictionTimestamp)
	assert.Len(t, a.leases, 2)
	assert.Contains(t, a.tombstones.ids(), "i-2")
}

func TestTombstonesCollectedAfterTTL(t *testing.T) {
	a, clock := newTestApp(t, false)
	a.register(testInstance("i-1", StatusUp), false)
	a.remove("i-1", CauseCancel, false)

	clock.Advance(time.Minute)
	a.collectTombstones()
	assert.False(t, a.empty(), "kept up to the TTL")

	clock.Advance(time.Millisecond)
	a.collectTombstones()
	assert.True(t, a.empty())
	assert.Empty(t, a.records())
}

// applyRecord is last-writer-wins by Version.
func TestApplyRecord(t *testing.T) {
	peer := func(clock uint64) Version { return Version{Clock: clock, Node: "node-b"} }
	live := func(id string, st Status) Record {
		return Record{App: "APP", ID: id, Instance: testInstance(id, st)}
	}

	t.Run("new record creates a lease", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		rec := live("i-1", StatusUp)
		rec.Instance.ActionType = ActionModified
		rec.Instance.LeaseInfo.RegistrationTimestamp = 1234
		rec.Version = peer(uint64(ms(clock.Now())) << hlcLogicalBits)
		ev, ok := applyRec(a, rec)
		require.True(t, ok)
		assert.True(t, ev.Replicated)
		assert.True(t, ev.NewLease)
		assert.Equal(t, ActionModified, ev.Action, "keeps the peer's action")
		assert.Equal(t, rec.Version, ev.Version)
		assert.NotSame(t, rec.Instance, ev.Instance, "not retained")
		assert.Equal(t, int64(1234), ev.Instance.LeaseInfo.RegistrationTimestamp)
		got, expired := mustGet(t, a, "i-1")
		assert.Equal(t, int64(1234), got.LeaseInfo.LastRenewalTimestamp, "a copy is not born fresh")
		assert.Equal(t, int64(1234), a.records()[0].LastRenewal, "and is not passed on as fresh")
		assert.False(t, expired, "an owner that learns of a lease late gives it one lease from then")
		clock.Advance(10*time.Second + time.Millisecond) // the test instance's lease
		_, expired = mustGet(t, a, "i-1")
		assert.True(t, expired, "then it expires: nothing renewed it")
		rec.Version.Clock++
		rec.LastRenewal = ms(clock.Now()) - 1000
		_, ok = applyRec(a, rec)
		require.True(t, ok)
		got, expired = mustGet(t, a, "i-1")
		assert.False(t, expired, "the sender's last renewal is kept")
		assert.Equal(t, rec.LastRenewal, got.LeaseInfo.LastRenewalTimestamp)
	})

	t.Run("older and equal ignored, newer applied", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		local := a.register(testInstance("i-1", StatusUp), false)

		older := live("i-1", StatusDown)
		older.Version = peer(local.Version.Clock - 1)
		_, ok := applyRec(a, older)
		assert.False(t, ok)

		same := live("i-1", StatusDown)
		same.Version = local.Version
		_, ok = applyRec(a, same)
		assert.False(t, ok, "equal version is not newer")

		got, _ := mustGet(t, a, "i-1")
		assert.Equal(t, StatusUp, got.Status)

		clock.Advance(time.Second)
		newer := live("i-1", StatusDown)
		newer.Version = peer(local.Version.Clock + 1)
		ev, ok := applyRec(a, newer)
		require.True(t, ok)
		assert.False(t, ev.NewLease)
		assert.Equal(t, ActionAdded, ev.Action)
		got, _ = mustGet(t, a, "i-1")
		assert.Equal(t, StatusDown, got.Status)

		// Same clock, node name breaks the tie.
		tie := live("i-1", StatusStarting)
		tie.Version = Version{Clock: newer.Version.Clock, Node: "node-c"}
		_, ok = applyRec(a, tie)
		assert.True(t, ok)
	})

	t.Run("tombstone deletes and prevents resurrection", func(t *testing.T) {
		a, _ := newTestApp(t, false)
		local := a.register(testInstance("i-1", StatusUp), false)

		del := Record{App: "APP", ID: "i-1", Deleted: true, Version: peer(local.Version.Clock + 10)}
		ev, ok := applyRec(a, del)
		require.True(t, ok)
		assert.Equal(t, ActionDeleted, ev.Action)
		assert.True(t, ev.Replicated)
		assert.NotZero(t, ev.Instance.LeaseInfo.EvictionTimestamp)
		_, _, found := a.get("i-1", 0)
		assert.False(t, found)

		stale := live("i-1", StatusUp)
		stale.Version = peer(local.Version.Clock + 5)
		_, ok = applyRec(a, stale)
		assert.False(t, ok, "older live copy must not resurrect")
		_, _, found = a.get("i-1", 0)
		assert.False(t, found)

		_, ok = applyRec(a, del)
		assert.False(t, ok, "duplicate tombstone")

		fresh := live("i-1", StatusUp)
		fresh.Version = peer(local.Version.Clock + 11)
		ev, ok = applyRec(a, fresh)
		require.True(t, ok)
		assert.True(t, ev.NewLease)
		_, _, found = a.get("i-1", 0)
		assert.True(t, found)
	})

	t.Run("tombstone for an unknown instance is remembered", func(t *testing.T) {
		a, _ := newTestApp(t, false)
		_, ok := applyRec(a, Record{App: "APP", ID: "i-9", Deleted: true, Version: peer(100 << hlcLogicalBits)})
		assert.False(t, ok, "no event without a lease")
		stale := live("i-9", StatusUp)
		stale.Version = peer(99 << hlcLogicalBits)
		_, ok = applyRec(a, stale)
		assert.False(t, ok)
		assert.False(t, a.empty())
	})

	t.Run("local register after a newer tombstone wins", func(t *testing.T) {
		a, _ := newTestApp(t, false)
		// The peer's clock runs far ahead of ours.
		future := peer(uint64(ms(testEpoch.Add(time.Hour))) << hlcLogicalBits)
		_, ok := applyRec(a, Record{App: "APP", ID: "i-1", Deleted: true, Version: future})
		require.False(t, ok)

		ev := a.register(testInstance("i-1", StatusUp), false)
		assert.True(t, future.Less(ev.Version), "the HLC observed the tombstone")
		_, ok = applyRec(a, Record{App: "APP", ID: "i-1", Deleted: true, Version: future})
		assert.False(t, ok, "the old tombstone no longer applies")
		_, _, found := a.get("i-1", 0)
		assert.True(t, found)
	})
}

// An owner's eviction tombstone loses to a lease renewed here since; an
// expired lease is deleted by it, and the tombstone stays marked evicted.
func TestApplyEvictedTombstone(t *testing.T) {
	peer := Version{Node: "node-b"}
	t.Run("renewed lease wins", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		local := a.register(testInstance("i-1", StatusUp), false)
		clock.Advance(8 * time.Second)
		a.renew(RenewRequest{App: "APP", ID: "i-1"})

		tomb := Record{App: "APP", ID: "i-1", Deleted: true, Evicted: true, Version: peer}
		tomb.Version.Clock = local.Version.Clock + 100
		ev, ok := applyRec(a, tomb)
		require.True(t, ok)
		assert.Equal(t, ActionAdded, ev.Action)
		assert.False(t, ev.Replicated, "the survival is news for the peers")
		assert.True(t, tomb.Version.Less(ev.Version), "a newer version supersedes the tombstone")
		_, _, found := a.get("i-1", 0)
		assert.True(t, found)
		assert.Empty(t, a.tombstones.ids())

		// A cancel tombstone is not overruled by a renewal.
		cancel := Record{App: "APP", ID: "i-1", Deleted: true, Version: ev.Version}
		cancel.Version.Clock++
		cancel.Version.Node = "node-b"
		ev, ok = applyRec(a, cancel)
		require.True(t, ok)
		assert.Equal(t, ActionDeleted, ev.Action)
	})
	t.Run("expired lease is deleted", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		local := a.register(testInstance("i-1", StatusUp), false)
		clock.Advance(11 * time.Second)
		tomb := Record{App: "APP", ID: "i-1", Deleted: true, Evicted: true, Version: peer}
		tomb.Version.Clock = local.Version.Clock + 100
		ev, ok := applyRec(a, tomb)
		require.True(t, ok)
		assert.Equal(t, ActionDeleted, ev.Action)
		assert.True(t, ev.Replicated)
		recs := a.records()
		require.Len(t, recs, 1)
		assert.True(t, recs[0].Evicted)
		assert.Equal(t, tomb.Version, recs[0].Version)
	})
	t.Run("a copy received from a peer does not overrule the eviction", func(t *testing.T) {
		// BUG-1 of the simulations: a replica that merely received the
		// instance recently used to re-publish it after the owner evicted it.
		a, clock := newTestApp(t, false)
		inst := testInstance("i-1", StatusUp)
		inst.Normalize()
		copyV := Version{Clock: uint64(ms(clock.Now())) << hlcLogicalBits, Node: "node-c"}
		_, ok := applyRec(a, Record{App: "APP", ID: "i-1", Version: copyV, Instance: inst, LastRenewal: ms(clock.Now())})
		require.True(t, ok)
		clock.Advance(time.Second) // well within the lease duration
		tomb := Record{App: "APP", ID: "i-1", Deleted: true, Evicted: true, Version: peer}
		tomb.Version.Clock = copyV.Clock + 100
		ev, ok := applyRec(a, tomb)
		require.True(t, ok)
		assert.Equal(t, ActionDeleted, ev.Action)
		_, _, found := a.get("i-1", 0)
		assert.False(t, found, "an eviction must win over a copy no client renewed here")
	})
	t.Run("local eviction marks its tombstone", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		a.register(testInstance("i-1", StatusUp), false)
		a.register(testInstance("i-2", StatusUp), false)
		clock.Advance(11 * time.Second)
		_, ok := a.evict("i-1", 0, 0)
		require.True(t, ok)
		_, ok = a.remove("i-2", CauseCancel, false)
		require.True(t, ok)
		evicted := map[string]bool{}
		for _, r := range a.records() {
			evicted[r.ID] = r.Evicted
		}
		assert.Equal(t, map[string]bool{"i-1": true, "i-2": false}, evicted)
	})
}

func TestRecords(t *testing.T) {
	a, _ := newTestApp(t, false)
	r1 := a.register(testInstance("i-1", StatusUp), false)
	a.register(testInstance("i-2", StatusUp), false)
	del, _ := a.remove("i-2", CauseCancel, false)

	recs := a.records()
	require.Len(t, recs, 2)
	byID := map[string]Record{}
	for _, r := range recs {
		assert.Equal(t, "APP", r.App)
		byID[r.ID] = r
	}
	assert.False(t, byID["i-1"].Deleted)
	assert.Equal(t, r1.Version, byID["i-1"].Version)
	assert.Same(t, r1.Instance, byID["i-1"].Instance)
	assert.True(t, byID["i-2"].Deleted)
	assert.Equal(t, del.Version, byID["i-2"].Version)

	// Records round-trip into another node.
	b, _ := newTestApp(t, false)
	for _, r := range recs {
		applyRec(b, r)
	}
	assert.Len(t, b.leases, 1)
	assert.Len(t, b.tombstones.ids(), 1)
}

func TestHLC(t *testing.T) {
	clock := NewManualClock(testEpoch)
	h := NewHLC(clock)
	first := h.Now()
	assert.Equal(t, ms(testEpoch), HLCMillis(first))
	second := h.Now()
	assert.Greater(t, second, first, "frozen wall clock still moves forward")

	h.Observe(first) // older: ignored
	assert.Greater(t, h.Now(), second)

	remote := uint64(ms(testEpoch.Add(time.Minute))) << hlcLogicalBits
	h.Observe(remote)
	assert.Greater(t, h.Now(), remote)

	clock.Advance(2 * time.Minute)
	assert.Equal(t, ms(clock.Now()), HLCMillis(h.Now()))
}

// applyRec applies a record outside an initial sync and reports whether it
// changed the registry.
func applyRec(a *appState, r Record) (Event, bool) {
	ev, res := a.applyRecord(r, false)
	return ev, res == ApplyInstalled
}
