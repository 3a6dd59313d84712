package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/memnet"
)

// handoffCluster starts a, b and c on the in-memory network and returns an
// application that a owns in every view and b owns without a, with
// APP/i-1 (a one-second lease) registered on c and renewed there, so that
// its renewals reach a forwarded, and b knows only the registration; and
// the function that renews it once on c.
func handoffCluster(t *testing.T) (a, b *testNode, ma *Membership, app string, renew func()) {
	t.Helper()
	hc := startHandoffCluster(t)
	return hc.a, hc.b, hc.ma, hc.app, hc.renew
}

// handoffNodes is what startHandoffCluster started.
type handoffNodes struct {
	n       *memnet.Network
	a, b, c *testNode
	ma      *Membership
	app     string
	renew   func()
}

// startHandoffCluster does handoffCluster and returns every part.
func startHandoffCluster(t *testing.T) handoffNodes {
	t.Helper()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	a, ma := startMemReplNode(t, n, nil, "a")
	b, mb := startMemReplNode(t, n, nil, "b", "a")
	c, mc := startMemReplNode(t, n, nil, "c", "a")
	for _, m := range []*Membership{ma, mb, mc} {
		waitView(t, m, allAre(StateAlive, "a", "b", "c"))
	}
	require.Eventually(t, func() bool {
		return len(a.repl.own.Load().members) == 3 && len(b.repl.own.Load().members) == 3 && len(c.repl.own.Load().members) == 3
	}, waitFor, tick)
	var app string
	for i := 0; app == ""; i++ {
		name := fmt.Sprintf("HANDED-%d", i)
		if a.repl.OwnerOf(name) == "a" && b.repl.OwnerOf(name) == "a" && c.repl.OwnerOf(name) == "a" &&
			rendezvous([]string{"b", "c"}, name) == "b" {
			app = name
		}
	}
	in := inst(app, "i-1")
	in.LeaseInfo.DurationSecs = int(fwdLease / time.Second)
	ctx := context.Background()
	require.NoError(t, c.reg.Register(ctx, in, false))
	require.Eventually(t, func() bool { return a.has(app, "i-1") && b.has(app, "i-1") }, waitFor, tick)
	renew := func() {
		res, err := c.reg.Renew(ctx, actors.RenewRequest{App: app, ID: "i-1"})
		require.NoError(t, err)
		require.Equal(t, actors.RenewOK, res.Outcome)
	}
	return handoffNodes{n: n, a: a, b: b, c: c, ma: ma, app: app, renew: renew}
}

// age is how long ago n last saw app/i-1 renewed, by its LeaseAges.
func age(t *testing.T, n *testNode, app string) time.Duration {
	t.Helper()
	ages, err := n.reg.LeaseAges(context.Background(), app)
	require.NoError(t, err)
	require.Len(t, ages, 1)
	return ages[0].Age
}

// An owner leaving gracefully hands its leases' ages to the members that own
// its applications next: b, which saw only the registration, learns the
// renewals that c forwarded to a, and a owns nothing from then on.
func TestLeavingOwnerHandsLeaseAgesOver(t *testing.T) {
	a, b, _, app, renew := handoffCluster(t)
	registered := time.Now()
	for range 12 { // three leases of renewals, forwarded to a
		time.Sleep(fwdRenew)
		renew()
	}
	require.Eventually(t, func() bool { return age(t, a, app) < fwdLease }, waitFor, tick, "a gets the forwarded renewals")
	require.Greater(t, age(t, b, app), 2*fwdLease, "b has not seen them")

	time.Sleep(10 * testReplicatorConfig().RenewFlushInterval) // nothing in flight to a: the handoff alone tells b
	a.repl.HandOff(context.Background())
	assert.False(t, a.repl.Owns(app), "a owns nothing once it has handed over")
	require.Eventually(t, func() bool { return age(t, b, app) < time.Since(registered)-2*fwdLease }, waitFor, tick,
		"b takes the renewal a handed over")
	assert.Positive(t, a.repl.Stats().HandoffMessages)
}

// Renewals forwarded to a member that no longer owns the application (the
// sender has not seen the move) go on to the new owner.
func TestRenewalsForwardedOnAfterAMove(t *testing.T) {
	a, b, _, app, renew := handoffCluster(t)
	a.repl.HandOff(context.Background())
	// a is still alive in c's view: c forwards to a, which forwards to b.
	start := time.Now()
	require.Eventually(t, func() bool {
		renew()
		return b.lastRenewal(t, app) > start.UnixMilli()
	}, waitFor, fwdRenew, "b gets the renewals c sends to a")
	_ = a
}

// A member that joins and takes applications from an owner gets their
// leases' ages from it (the owner is alive to say them).
func TestJoiningMemberGetsAHandoff(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	b, mb := startMemReplNode(t, n, nil, "b")
	c, mc := startMemReplNode(t, n, nil, "c", "b")
	for _, m := range []*Membership{mb, mc} {
		waitView(t, m, allAre(StateAlive, "b", "c"))
	}
	var app string
	for i := 0; app == ""; i++ {
		name := fmt.Sprintf("MOVING-%d", i)
		if rendezvous([]string{"b", "c"}, name) == "b" && rendezvous([]string{"a", "b", "c"}, name) == "a" {
			app = name
		}
	}
	require.NoError(t, c.reg.Register(context.Background(), inst(app, "i-1"), false))
	require.Eventually(t, func() bool { return b.has(app, "i-1") }, waitFor, tick)
	require.Zero(t, b.repl.Stats().HandoffMessages)

	_, ma := startMemReplNode(t, n, nil, "a", "b")
	waitView(t, ma, allAre(StateAlive, "a", "b", "c"))
	require.Eventually(t, func() bool { return b.repl.Stats().HandoffMessages > 0 }, waitFor, tick,
		"b hands %s to a", app)
}

// Renewals held for an owner that then leaves (c and a could not reach each
// other) go to the application's new owner instead of being dropped.
func TestHeldRenewalsRerouteWhenTheOwnerLeaves(t *testing.T) {
	hc := startHandoffCluster(t)
	hc.n.BlockOneWay([]string{"c"}, []string{"a"})
	hc.n.BlockOneWay([]string{"a"}, []string{"c"}) // nor may a pull them from c
	start := time.Now()
	hc.renew()
	require.Eventually(t, func() bool {
		for _, q := range hc.c.repl.PeerQueues() {
			if q.Peer == "a" && q.Renewals > 0 {
				return true
			}
		}
		return false
	}, waitFor, tick, "c holds the renewal it cannot send to a")
	require.NoError(t, hc.ma.Leave(time.Second))
	require.Eventually(t, func() bool { return hc.b.lastRenewal(t, hc.app) >= start.UnixMilli() }, waitFor, tick,
		"b, the new owner, gets the renewal c held for a")
}

// A member that leaves gracefully tells every member so, with or without
// applications to hand over: each keeps its last renewal report as a
// departed member's (fading out), even before membership shows it gone.
func TestLeavingMemberReportFades(t *testing.T) {
	hc := startHandoffCluster(t)
	require.Eventually(t, func() bool {
		hc.c.repl.loadMu.Lock()
		defer hc.c.repl.loadMu.Unlock()
		_, ok := hc.c.repl.loads["a"]
		return ok
	}, waitFor, tick, "c has a's report")
	hc.a.repl.HandOff(context.Background())
	require.Eventually(t, func() bool {
		hc.c.repl.loadMu.Lock()
		defer hc.c.repl.loadMu.Unlock()
		return !hc.c.repl.loads["a"].left.IsZero()
	}, waitFor, tick, "c keeps a's report as a departed member's")
}
