package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A registration that a client sent before its cancel may reach a node
// long after the cancel (the node was frozen and its kernel queued the
// request). These tests play every order of the cancel, the late
// registration and their replication on appStates that share a clock, and
// carry events between them as the cluster does (a tombstone's record
// carries no instance).

// lateNodes is a few appStates of one application, one per node, on one
// clock.
type lateNodes struct {
	clock *ManualClock
	nodes map[string]*appState
}

func newLateNodes(names ...string) *lateNodes {
	c := &lateNodes{clock: NewManualClock(testEpoch), nodes: map[string]*appState{}}
	for _, n := range names {
		c.nodes[n] = newAppState("APP", &appOptions{node: n, clock: c.clock, hlc: NewHLC(c.clock),
			tombstoneTTL: time.Minute})
	}
	return c
}

// record is what the cluster sends for ev (cluster/peerlink.go and toWire).
func record(ev Event) Record {
	r := Record{App: "APP", ID: ev.Instance.ID(), Version: ev.Version, Deleted: ev.Action == ActionDeleted,
		Evicted: ev.Cause == CauseEvict || ev.Cause == CauseRefuseStale}
	if !r.Deleted {
		r.Instance = ev.Instance
		r.LastRenewal = ev.Instance.LeaseInfo.LastRenewalTimestamp
	}
	return r
}

// send applies ev at each of the named nodes and returns the events they
// emitted for everyone (refusals), failing on anything unexpected.
func (c *lateNodes) send(t *testing.T, ev Event, to ...string) []Event {
	t.Helper()
	var out []Event
	for _, n := range to {
		got, res := c.nodes[n].applyRecord(record(ev), false)
		if res == ApplyRefusedLate || res == ApplyRefused {
			require.False(t, got.Replicated)
			out = append(out, got)
		}
	}
	return out
}

// live reports which nodes hold a lease of id.
func (c *lateNodes) live(id string) []string {
	var out []string
	for n, a := range c.nodes {
		if a.leases[id] != nil {
			out = append(out, n)
		}
	}
	return out
}

// converged asserts that every node holds the same version of id.
func (c *lateNodes) converged(t *testing.T, id string) {
	t.Helper()
	var first Version
	for n, a := range c.nodes {
		v := a.currentVersion(id)
		if first.IsZero() {
			first = v
		}
		assert.Equal(t, first, v, "node %s", n)
	}
}

func dirtyInstance(id string, dirty int64) *Instance {
	in := testInstance(id, StatusUp)
	in.LastDirtyTimestamp = dirty
	return in
}

// On one node: a registration no newer than the cancelled record loses to
// the cancel; a newer one wins; so does any registration after an
// eviction.
func TestCancelOutranksLateRegistration(t *testing.T) {
	const dirty = 5000
	for _, tc := range []struct {
		name     string
		incoming int64
		cause    Cause
		wins     bool
	}{
		{"same dirty after a cancel loses", dirty, CauseCancel, false},
		{"older dirty after a cancel loses", dirty - 1, CauseCancel, false},
		{"newer dirty after a cancel wins (the client registers again)", dirty + 1, CauseCancel, true},
		{"same dirty after an eviction wins (a renewing client's 404 re-registration)", dirty, CauseEvict, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, clock := newTestApp(t, false)
			a.register(dirtyInstance("i-1", dirty), false)
			clock.Advance(time.Second)
			_, ok := a.remove("i-1", tc.cause, false)
			require.True(t, ok)
			clock.Advance(time.Second)
			ev, ok := a.tryRegister(dirtyInstance("i-1", tc.incoming), false)
			assert.Equal(t, tc.wins, ok)
			_, _, found := a.get("i-1", 0)
			assert.Equal(t, tc.wins, found)
			if tc.wins {
				assert.True(t, ev.NewLease)
				assert.Empty(t, a.tombstones.ids())
			} else {
				assert.Len(t, a.tombstones.ids(), 1, "the cancel stands")
			}
		})
	}
	t.Run("a registration without lastDirtyTimestamp gets the receipt time and wins", func(t *testing.T) {
		a, clock := newTestApp(t, false)
		a.register(dirtyInstance("i-1", ms(clock.Now())), false)
		clock.Advance(time.Second)
		a.remove("i-1", CauseCancel, false)
		clock.Advance(time.Second)
		_, ok := a.tryRegister(dirtyInstance("i-1", 0), false)
		assert.True(t, ok)
	})
	t.Run("the cancel outranks only while its tombstone lives", func(t *testing.T) {
		a, clock := newTestApp(t, false) // TombstoneTTL one minute
		a.register(dirtyInstance("i-1", dirty), false)
		a.remove("i-1", CauseCancel, false)
		clock.Advance(61 * time.Second)
		_, ok := a.tryRegister(dirtyInstance("i-1", dirty), false)
		assert.True(t, ok)
	})
}

// The netns pause scenario: the client registers on B with dirty T (A is
// frozen), cancels on B; A wakes and serves the registration its kernel
// queued. Whatever the order in which A serves it and hears of the
// cancel, the instance ends deleted on every node.
func TestLateRegistrationEveryOrder(t *testing.T) {
	const dirty = 7000
	orders := []struct {
		name string
		// aHadLease: A received B's registration before freezing (so it
		// knows the cancelled record's dirty when the tombstone comes).
		aHadLease bool
		// tombstoneFirst: A hears of the cancel before serving the late
		// registration.
		tombstoneFirst bool
	}{
		{"A held the lease; cancel reaches A first", true, true},
		{"A held the lease; late registration served first", true, false},
		{"A never held it; cancel reaches A first", false, true},
		{"A never held it; late registration served first", false, false},
	}
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			c := newLateNodes("a", "b", "c")
			a, b := c.nodes["a"], c.nodes["b"]
			reg := b.register(dirtyInstance("i-1", dirty), false)
			to := []string{"c"}
			if o.aHadLease {
				to = append(to, "a")
			}
			c.send(t, reg, to...)
			c.clock.Advance(2 * time.Second)
			cancel, ok := b.remove("i-1", CauseCancel, false)
			require.True(t, ok)
			c.clock.Advance(time.Second)

			var broadcast []Event
			if o.tombstoneFirst {
				broadcast = append(broadcast, c.send(t, cancel, "a", "c")...)
			}
			late, ok := a.tryRegister(dirtyInstance("i-1", dirty), false)
			if o.tombstoneFirst && o.aHadLease {
				assert.False(t, ok, "A knows the cancel and the cancelled record: refused at once")
			}
			if ok {
				broadcast = append(broadcast, c.send(t, late, "b", "c")...)
				require.NotEmpty(t, broadcast, "the nodes that know the cancel refuse the late copy")
			}
			if !o.tombstoneFirst {
				broadcast = append(broadcast, c.send(t, cancel, "a", "c")...)
			}
			// The refusals go to every member, until nobody answers.
			for len(broadcast) > 0 {
				ev := broadcast[0]
				broadcast = broadcast[1:]
				var others []string
				for n := range c.nodes {
					if n != ev.Version.Node {
						others = append(others, n)
					}
				}
				broadcast = append(broadcast, c.send(t, ev, others...)...)
			}
			assert.Empty(t, c.live("i-1"), "the cancelled instance stays deleted everywhere")
			c.converged(t, "i-1")

			// Its client registering again in earnest (a new lastDirtyTimestamp)
			// brings it back everywhere.
			c.clock.Advance(time.Second)
			again, ok := a.tryRegister(dirtyInstance("i-1", dirty+5000), false)
			require.True(t, ok)
			assert.Empty(t, c.send(t, again, "b", "c"))
			assert.ElementsMatch(t, []string{"a", "b", "c"}, c.live("i-1"))
			c.converged(t, "i-1")
		})
	}
}

// A node that learned of the cancel only as a tombstone (it never held the
// record) cannot judge the late copy and installs it; a node that knows
// refuses it, and its refusal deletes the copy there too.
func TestLateCopyAtUninformedNode(t *testing.T) {
	const dirty = 7000
	c := newLateNodes("a", "b", "c")
	a, b, cn := c.nodes["a"], c.nodes["b"], c.nodes["c"]
	reg := b.register(dirtyInstance("i-1", dirty), false)
	c.clock.Advance(time.Second)
	cancel, _ := b.remove("i-1", CauseCancel, false)
	c.send(t, cancel, "c") // c never had the lease
	c.clock.Advance(time.Second)
	late, ok := a.tryRegister(dirtyInstance("i-1", dirty), false)
	require.True(t, ok)
	assert.Empty(t, c.send(t, late, "c"), "c cannot tell: it installs the copy")
	assert.NotNil(t, cn.leases["i-1"])
	refusals := c.send(t, late, "b")
	require.Len(t, refusals, 1)
	assert.Equal(t, CauseRefuseLate, refusals[0].Cause)
	assert.True(t, late.Version.Less(refusals[0].Version))
	c.send(t, refusals[0], "a", "c")
	assert.Empty(t, c.live("i-1"))
	c.converged(t, "i-1")
	// c now knows the cancelled record's dirty from the copy it deleted.
	assert.Equal(t, int64(dirty), mustTombstone(t, cn, "i-1").dirty)
	_ = reg
}

// An eviction never outranks a registration: a client that still renews
// after the owner evicted it re-registers on its next 404, with the same
// lastDirtyTimestamp, and its instance comes back everywhere.
func TestEvictionDoesNotOutrankRenewingClient(t *testing.T) {
	const dirty = 7000
	c := newLateNodes("a", "b")
	a, b := c.nodes["a"], c.nodes["b"]
	reg := a.register(dirtyInstance("i-1", dirty), false)
	c.send(t, reg, "b")
	c.clock.Advance(11 * time.Second) // the 10 s lease ran out at the owner b
	ev, ok := b.evict("i-1", 0, 0)
	require.True(t, ok)
	c.send(t, ev, "a")
	require.Empty(t, c.live("i-1"), "a did not hear from its client within the lease")
	res, _, _ := a.renew(RenewRequest{App: "APP", ID: "i-1", LastDirtyTimestamp: ptr(int64(dirty))})
	require.Equal(t, RenewNotFound, res.Outcome)
	again, ok := a.tryRegister(dirtyInstance("i-1", dirty), false)
	require.True(t, ok)
	assert.Empty(t, c.send(t, again, "b"))
	assert.ElementsMatch(t, []string{"a", "b"}, c.live("i-1"))
	c.converged(t, "i-1")
}

// A peer's modification of the record newer than the cancel by version but
// not by lastDirtyTimestamp (a concurrent status change) loses to the
// cancel as well.
func TestCancelOutranksConcurrentModification(t *testing.T) {
	const dirty = 7000
	c := newLateNodes("a", "b")
	a, b := c.nodes["a"], c.nodes["b"]
	reg := b.register(dirtyInstance("i-1", dirty), false)
	c.send(t, reg, "a")
	c.clock.Advance(time.Second)
	cancel, _ := b.remove("i-1", CauseCancel, false)
	c.clock.Advance(time.Millisecond)
	mod, changed, ok := a.setStatus("i-1", StatusOutOfService, nil, false)
	require.True(t, changed && ok)
	require.True(t, cancel.Version.Less(mod.Version), "the modification is newer by version")
	refusals := c.send(t, mod, "b")
	require.Len(t, refusals, 1)
	c.send(t, cancel, "a")
	c.send(t, refusals[0], "a")
	assert.Empty(t, c.live("i-1"))
	c.converged(t, "i-1")
}
