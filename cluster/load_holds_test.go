package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/wire"
)

// holdsLease is the lease of the silent-member tests' clients.
const holdsLease = time.Second

// silentMemberCluster starts a, b and c on the bus, registers 10 clients
// of an application a owns on b (b forwards their renewals to a), keeps
// 9 renewing and lets one die, then mutes c: its reports stop reaching
// anyone while it stays alive in every view. It returns a, the dead
// client's id and the application, and stops the renewers at cleanup.
func silentMemberCluster(t *testing.T) (a *testNode, app, dead string) {
	t.Helper()
	bus := newFakeBus()
	a = bus.start(t, "a", false)
	b := bus.start(t, "b", false)
	bus.start(t, "c", false)
	app = ownedBy(t, a, "a")
	require.Eventually(t, func() bool { return len(a.repl.MemberLoads()) == 2 }, waitFor, tick, "b and c report")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	var ids []string
	for i := range 10 {
		in := inst(app, fmt.Sprintf("i-%d", i))
		in.LeaseInfo.DurationSecs = int(holdsLease / time.Second)
		require.NoError(t, b.reg.Register(ctx, in, false))
		ids = append(ids, in.ID())
	}
	dead = ids[0]
	go func() {
		defer close(done)
		tk := time.NewTicker(holdsLease / 5)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				for _, id := range ids[1:] {
					_, _ = b.reg.Renew(ctx, actors.RenewRequest{App: app, ID: id})
				}
			}
		}
	}()
	require.Eventually(t, func() bool { return a.has(app, dead) }, waitFor, tick, "a holds every client")
	bus.mu.Lock()
	bus.muted["c"] = true
	bus.mu.Unlock()
	return a, app, dead
}

// A member whose reports stop (here: its sends are lost, it stays alive in
// every view) holds eviction only for SilentMemberBound: then it counts as
// failed for ownership and the owner evicts the dead client, while the
// renewing ones stay (with silent-member-holds-forever on, the dead client
// is never evicted: see the sabotage test).
func TestSilentMemberHoldIsBounded(t *testing.T) {
	a, app, dead := silentMemberCluster(t)
	require.Eventually(t, func() bool {
		for _, h := range a.repl.EvictionHolds() {
			if h.Reason == HoldSilentMember {
				return true
			}
		}
		return false
	}, waitFor, tick, "the silent member's hold shows")
	bound := holdsLease + a.repl.silentBound()
	require.Eventually(t, func() bool { return !a.has(app, dead) }, 4*bound, tick, "the dead client is evicted within its bound plus the silent-member bound")
	require.Eventually(t, func() bool { return len(a.repl.silentMembers()) == 1 }, waitFor, tick, "c counts as failed")
	assert.NotContains(t, a.repl.own.Load().members, "c", "c owns nothing")
	for i := 1; i < 10; i++ {
		assert.True(t, a.has(app, fmt.Sprintf("i-%d", i)), "renewing client i-%d is kept", i)
	}
	for _, h := range a.repl.EvictionHolds() {
		assert.NotEqual(t, HoldSilentMember, h.Reason, "no silent-member hold once the bound passed")
	}
}

// A member silent past its bound that reports again is an owner again.
func TestSilentMemberBackWhenItReports(t *testing.T) {
	a, _, _ := silentMemberCluster(t)
	require.Eventually(t, func() bool { return len(a.repl.silentMembers()) == 1 }, waitFor, tick, "c counts as failed")
	a.repl.onLoad(&wire.Load{Node: "c", WindowMillis: 1000, Renewals: 1})
	require.Eventually(t, func() bool { return len(a.repl.silentMembers()) == 0 }, waitFor, tick, "c is back")
	// checkSilent recomputes ownership just after it clears the set.
	require.Eventually(t, func() bool { return slices.Contains(a.repl.own.Load().members, "c") }, waitFor, tick,
		"c owns applications again")
}

// A member that left gracefully keeps its last report counting for a
// window, less and less; one that failed counts only until its report is
// stale (TestFailedReportCountsWhileFresh).
func TestLeftReportFades(t *testing.T) {
	p := peerLoad{msg: &wire.Load{Node: "x", WindowMillis: 2000, Renewals: 100}, at: time.Now(), left: time.Now()}
	every := 500 * time.Millisecond
	assert.InDelta(t, 1, p.leftShare(p.left.Add(2*every), every), 1e-9, "all of it for two LoadIntervals")
	assert.InDelta(t, 0.5, p.leftShare(p.left.Add(2*every+time.Second), every), 1e-9, "half a window later, half")
	assert.InDelta(t, 0, p.leftShare(p.left.Add(2*every+2*time.Second), every), 1e-9, "one window later, nothing")

	bus := newFakeBus()
	a := bus.start(t, "a", false)
	bus.start(t, "b", false)
	bus.start(t, "c", false)
	require.Eventually(t, func() bool { return len(a.repl.MemberLoads()) == 2 }, waitFor, tick, "b and c report")
	bus.mu.Lock()
	bus.left = map[string]bool{"b": true}
	bus.muted["b"], bus.muted["c"] = true, true // stopped processes send nothing
	bus.mu.Unlock()
	bus.kill("b") // leaves gracefully: leftTeller says so
	bus.kill("c") // fails
	assert.Contains(t, a.repl.MemberLoads(), "b", "b's report stays after its graceful leave")
	require.Eventually(t, func() bool {
		a.repl.PeerRenewals(time.Second)
		return !hasKey(a.repl.MemberLoads(), "c")
	}, waitFor, tick, "c's report is dropped once stale: it failed")
	assert.Contains(t, a.repl.MemberLoads(), "b", "b's report still fades")
	for _, h := range a.repl.EvictionHolds() {
		assert.NotEqual(t, HoldSilentMember, h.Reason, "a departed member holds nothing")
	}
}

func TestSilentMemberBoundValidated(t *testing.T) {
	c := testReplicatorConfig()
	c.SilentMemberBound = -time.Second
	require.ErrorIs(t, c.Validate(), ErrInvalidReplicatorConfig)
	c.SilentMemberBound = 3 * c.LoadInterval
	require.ErrorIs(t, c.Validate(), ErrInvalidReplicatorConfig)
	c.SilentMemberBound = 4 * c.LoadInterval
	require.NoError(t, c.Validate())
}

// hasKey reports whether m has k.
func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// failedReportCluster starts a (reports count for three seconds there)
// and b, gives a a fresh report of b's with 10 renewals a second, and
// declares b dead (its sends lost from then on).
func failedReportCluster(t *testing.T) *testNode {
	t.Helper()
	bus := newFakeBus()
	a := bus.start(t, "a", false, func(c *ReplicatorConfig, _ *actors.Config) { c.LoadInterval = time.Second })
	bus.start(t, "b", false)
	require.Eventually(t, func() bool { return hasKey(a.repl.MemberLoads(), "b") }, waitFor, tick, "b reports")
	bus.mu.Lock()
	bus.muted["b"] = true // a dead process sends nothing
	bus.mu.Unlock()
	a.repl.onLoad(&wire.Load{Node: "b", WindowMillis: 1000, Renewals: 10})
	bus.kill("b")
	return a
}

// A member declared dead keeps its report counting while it is fresh, as
// one that went quiet does: a death declared by a member that was cut off
// itself, and refuted a moment later, dips nothing. Once stale, it is
// gone (with failed-report-dropped on, it is gone at once: see the
// sabotage test).
func TestFailedReportCountsWhileFresh(t *testing.T) {
	a := failedReportCluster(t)
	sum, n := a.repl.PeerRenewals(time.Second)
	assert.Equal(t, int64(10), sum, "b's fresh report still counts")
	assert.Equal(t, 1, n)
	for _, h := range a.repl.EvictionHolds() {
		assert.NotEqual(t, HoldViewsDisagree, h.Reason, "a kept report of a dead member is no disagreement")
	}
	require.Eventually(t, func() bool {
		_, n := a.repl.PeerRenewals(time.Second)
		return n == 0 && !hasKey(a.repl.MemberLoads(), "b")
	}, waitFor, tick, "b's report is dropped once stale")
}

// A member declared dead that reports again (the death was false and its
// refutation has not reached this node yet) keeps counting: its next report
// is a stranger's, fresh, and its clients' renewals are real.
func TestStrangerReportCounts(t *testing.T) {
	a := failedReportCluster(t)
	a.repl.onLoad(&wire.Load{Node: "b", WindowMillis: 1000, Renewals: 12})
	sum, n := a.repl.PeerRenewals(time.Second)
	assert.Equal(t, int64(12), sum, "b's new report counts though b is dead in a's view")
	assert.Equal(t, 1, n)
}
