package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/memnet"
)

// Test timers, scaled together: a one-second lease (the shortest Eureka
// allows), renewals every quarter lease, and the replicator's timers of
// testReplicatorConfig (flush 20ms, anti-entropy 100ms, reports 50ms) and
// an eviction pass every 50ms (startMemReplNode).
const (
	fwdLease = time.Second
	fwdRenew = fwdLease / 4
)

// renewedThroughBlock is the rest of BUG-7: a, b and c, where b cannot dial
// or send to a (the owner of the application) nor c, while both still reach
// b; a client registered and renewing on b. It returns a, the instance's
// application, and a function that renews on b until the test ends.
func renewedThroughBlock(t *testing.T) (a *testNode, app string, n *memnet.Network) {
	t.Helper()
	n = memnet.New(1)
	t.Cleanup(n.Shutdown)
	a, ma := startMemReplNode(t, n, nil, "a")
	b, mb := startMemReplNode(t, n, nil, "b", "a")
	_, mc := startMemReplNode(t, n, nil, "c", "a")
	for _, m := range []*Membership{ma, mb, mc} {
		waitView(t, m, allAre(StateAlive, "a", "b", "c"))
	}
	require.Eventually(t, func() bool {
		return len(a.repl.own.Load().members) == 3 && len(b.repl.own.Load().members) == 3
	}, waitFor, tick)
	for i := 0; app == ""; i++ {
		if c := fmt.Sprintf("RENEWED-%d", i); b.repl.own.Load().owner(c) == "a" && a.repl.own.Load().owner(c) == "a" {
			app = c
		}
	}
	in := inst(app, "i-1")
	in.LeaseInfo.DurationSecs = int(fwdLease / time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, b.reg.Register(ctx, in, false))
	require.Eventually(t, func() bool { return a.has(app, "i-1") }, waitFor, tick)
	go func() { // the client, renewing on b
		tk := time.NewTicker(fwdRenew)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				_, _ = b.reg.Renew(ctx, actors.RenewRequest{App: app, ID: "i-1"})
			}
		}
	}()
	// Reports from every member before the block (a hears b's).
	require.Eventually(t, func() bool { return len(a.repl.MemberLoads()) == 2 }, waitFor, tick)
	n.BlockOneWay([]string{"b"}, []string{"a", "c"})
	return a, app, n
}

// lastRenewal is the last renewal of app/i-1 on n (epoch ms), 0 if absent.
func (n *testNode) lastRenewal(t *testing.T, app string) int64 {
	recs, err := n.reg.RecordsNewerThan(context.Background(), app, nil)
	require.NoError(t, err)
	for _, r := range recs {
		if r.ID == "i-1" && !r.Deleted {
			return r.LastRenewal
		}
	}
	return 0
}

// The owner keeps the lease of a client renewing on a member that cannot
// dial it: the renewals reach it in the answers to its pulls from that
// silent member, and the lease never lapses there, during the block nor
// after it lifts (when, before the fix, the owner evicted the client at
// once: it had had no renewal for the whole block).
func TestRenewalsReachOwnerThroughOneWayBlock(t *testing.T) {
	a, app, n := renewedThroughBlock(t)
	blocked := time.Now()
	require.Eventually(t, func() bool {
		return a.lastRenewal(t, app) > blocked.Add(2*fwdLease).UnixMilli()
	}, 10*fwdLease, tick, "the owner gets renewals two leases into the block")
	require.True(t, a.has(app, "i-1"))
	n.UnblockOneWay([]string{"b"}, []string{"a", "c"})
	assert.Never(t, func() bool { return !a.has(app, "i-1") }, 3*fwdLease, tick,
		"the owner does not evict the renewing client after the block")
}

// counts turns a coalesced set into its counts, for comparing.
func counts(s renewalSet) map[actors.Key]uint32 {
	if s == nil {
		return nil
	}
	out := map[actors.Key]uint32{}
	for k, p := range s {
		out[k] = p.count
	}
	return out
}

// Renewals whose forward failed stay on the link, merged with newer ones,
// until the owner takes them with its pull; the set holds one entry per
// instance however often the forward fails.
func TestHeldRenewalsMergeAndAreTaken(t *testing.T) {
	r, err := NewReplicator(testReplicatorConfig())
	require.NoError(t, err)
	defer r.Stop()
	l := newPeerLink(r, "owner")
	k1, k2 := actors.Key{App: "A", ID: "1"}, actors.Key{App: "A", ID: "2"}
	now := time.Now()
	l.addRenewals(renewalSet{k1: {1, now}})
	ren := l.takeRenewals()
	require.Equal(t, map[actors.Key]uint32{k1: 1}, counts(ren))
	l.holdRenewals(ren) // the send failed
	assert.True(t, l.renewHeld, "held: the link does not retry until a flush or a send that works")
	l.addRenewals(renewalSet{k1: {2, now}, k2: {1, now}})
	assert.False(t, l.renewHeld, "a flush tries again")
	l.holdRenewals(renewalSet{k2: {1, now}})
	assert.Equal(t, map[actors.Key]uint32{k1: 3, k2: 2}, counts(l.takeRenewals()), "one entry per instance, counts merged")
	assert.Nil(t, l.takeRenewals(), "taken once")
}

// A member whose reports stopped is pulled from every round; one whose
// reports come, or that never reported, is not.
func TestSilentPeers(t *testing.T) {
	r, err := NewReplicator(testReplicatorConfig())
	require.NoError(t, err)
	defer r.Stop()
	now := time.Now()
	r.loadMu.Lock()
	r.loads["fresh"] = peerLoad{at: now}
	r.loads["silent"] = peerLoad{at: now.Add(-4 * r.cfg.LoadInterval)}
	r.loadMu.Unlock()
	assert.Equal(t, []string{"silent"}, r.silentPeers([]string{"fresh", "silent", "never"}))
}

// A renewal that came in longer than two anti-entropy rounds ago is
// dropped rather than forwarded, however often its send was retried: the
// owner would stamp it with its clock on arrival and renew a lease whose
// client may be gone (long-partition seeds 1, 5 and 11 brought a cancelled
// instance back that way). Newer renewals of the same set still go.
func TestHeldRenewalsTooOldAreDropped(t *testing.T) {
	r := &Replicator{cfg: ReplicatorConfig{AntiEntropyInterval: time.Second}, log: slog.New(slog.DiscardHandler)}
	l := &peerLink{r: r, name: "owner", renewals: renewalSet{}, wake: make(chan struct{}, 1)}
	old, young := actors.Key{App: "ORDERS", ID: "o-1"}, actors.Key{App: "ORDERS", ID: "o-2"}
	now := time.Now()
	l.holdRenewals(renewalSet{old: {1, now}})
	assert.Equal(t, map[actors.Key]uint32{old: 1}, counts(l.takeRenewals()), "fresh held renewals go on the owner's pull")

	// Held since long ago, retried (taken and held again) every round: the
	// retries do not make it young.
	l.holdRenewals(renewalSet{old: {1, now.Add(-3 * time.Second)}})
	for range 3 {
		l.holdRenewals(l.takeRenewalsLocked(now.Add(-3 * time.Second)))
	}
	l.holdRenewals(renewalSet{young: {1, now}})
	assert.Equal(t, map[actors.Key]uint32{young: 1}, counts(l.takeRenewals()),
		"the renewal from 3 s ago is dropped, the one from now goes")
	l.addRenewals(renewalSet{old: {1, time.Now()}})
	assert.Equal(t, map[actors.Key]uint32{old: 1}, counts(l.takeRenewals()), "a new renewal of the same instance goes again")
}

// renewalHeldThroughPartition partitions a (the owner of the application)
// from b, has the client renew once more on b (its last renewal: b cannot
// forward it and holds it), waits three holds (maxRenewalHold), heals, and
// returns a, the application and the moment of the heal.
func renewalHeldThroughPartition(t *testing.T) (a *testNode, app string, healed time.Time) {
	t.Helper()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	a, ma := startMemReplNode(t, n, nil, "a")
	b, mb := startMemReplNode(t, n, nil, "b", "a")
	for _, m := range []*Membership{ma, mb} {
		waitView(t, m, allAre(StateAlive, "a", "b"))
	}
	require.Eventually(t, func() bool {
		return len(a.repl.own.Load().members) == 2 && len(b.repl.own.Load().members) == 2
	}, waitFor, tick)
	for i := 0; app == ""; i++ {
		if c := fmt.Sprintf("HELD-%d", i); b.repl.own.Load().owner(c) == "a" {
			app = c
		}
	}
	ctx := context.Background()
	in := inst(app, "i-1")
	in.LeaseInfo.DurationSecs = int(fwdLease / time.Second)
	require.NoError(t, b.reg.Register(ctx, in, false))
	require.Eventually(t, func() bool { return a.has(app, "i-1") }, waitFor, tick)
	n.Partition([]string{"a"}, []string{"b"})
	_, err := b.reg.Renew(ctx, actors.RenewRequest{App: app, ID: "i-1"})
	require.NoError(t, err)
	time.Sleep(3 * 2 * b.repl.cfg.AntiEntropyInterval) // three holds
	require.True(t, a.has(app, "i-1"), "the owner still holds the lease: the partition is shorter than it")
	n.Heal()
	return a, app, time.Now()
}

// A renewal held through a partition longer than maxRenewalHold is not
// delivered after the heal: the owner never stamps the client's last
// renewal with a time after it (with stale-renewals-forwarded on, it does;
// see forward_sabotage_test.go).
func TestRenewalHeldThroughPartitionIsNotDelivered(t *testing.T) {
	a, app, healed := renewalHeldThroughPartition(t)
	assert.Never(t, func() bool { return a.lastRenewal(t, app) >= healed.UnixMilli() },
		fwdLease/2, tick, "no renewal stamped after the heal")
}
