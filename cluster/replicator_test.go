package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/wire"
)

// fakeBus connects replicators in one process without memberlist: a send
// is a direct call of the receiver's NotifyMsg. Members can be removed
// (dead: sends fail at once) or stalled (sends block for the stream timeout,
// then fail, like a member that accepts streams but never reads).
type fakeBus struct {
	mu      sync.Mutex
	nodes   map[string]*Replicator
	dead    map[string]bool
	stalled map[string]bool
	muted   map[string]bool // their sends are lost (they do not notice)
	left    map[string]bool // dead members that left gracefully (leftTeller)
	timeout time.Duration
	sent    map[string]*atomic.Int64 // messages delivered, by receiver
}

func newFakeBus() *fakeBus {
	return &fakeBus{nodes: map[string]*Replicator{}, dead: map[string]bool{}, stalled: map[string]bool{}, muted: map[string]bool{},
		timeout: 300 * time.Millisecond, sent: map[string]*atomic.Int64{}}
}

// fakePeers is one member's view of the bus.
type fakePeers struct {
	bus  *fakeBus
	name string
}

func (p fakePeers) LocalName() string { return p.name }

func (p fakePeers) AliveMembers() []string {
	p.bus.mu.Lock()
	defer p.bus.mu.Unlock()
	var out []string
	for n := range p.bus.nodes {
		if !p.bus.dead[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Left implements leftTeller.
func (p fakePeers) Left(name string) bool {
	p.bus.mu.Lock()
	defer p.bus.mu.Unlock()
	return p.bus.dead[name] && p.bus.left[name]
}

var errNoMember = errors.New("fake: no such live member")

func (p fakePeers) SendReliable(name string, msg []byte) error {
	p.bus.mu.Lock()
	to, dead, stalled, timeout, cnt := p.bus.nodes[name], p.bus.dead[name], p.bus.stalled[name], p.bus.timeout, p.bus.sent[name]
	muted := p.bus.muted[p.name]
	p.bus.mu.Unlock()
	switch {
	case muted:
		return nil
	case dead:
		return errNoMember
	case stalled:
		time.Sleep(timeout) // the write deadline of a peer that never reads
		return errors.New("fake: write deadline exceeded")
	case to == nil:
		return errNoMember
	}
	to.NotifyMsg(append([]byte(nil), msg...))
	cnt.Add(1)
	return nil
}

// testNode is a registry, its view and its replicator on the bus.
type testNode struct {
	name string
	reg  *actors.Registry
	view *view.View
	repl *Replicator
}

func testReplicatorConfig() ReplicatorConfig {
	c := DefaultReplicatorConfig()
	c.RenewFlushInterval = 20 * time.Millisecond
	c.AntiEntropyInterval = 100 * time.Millisecond
	c.LoadInterval = 50 * time.Millisecond
	c.ReadyTimeout = 2 * time.Second
	c.MaxBatch = 64
	c.Seed = 1
	return c
}

// start adds a node to the bus; every member is told of the change.
func (b *fakeBus) start(t *testing.T, name string, joining bool, mutate ...func(*ReplicatorConfig, *actors.Config)) *testNode {
	t.Helper()
	rc := testReplicatorConfig()
	ac := actors.DefaultConfig(name)
	ac.EvictionInterval = 50 * time.Millisecond
	ac.SelfPreservation = false
	for _, m := range mutate {
		m(&rc, &ac)
	}
	repl, err := NewReplicator(rc)
	require.NoError(t, err)
	v := view.New(view.DefaultConfig([view.NumFormats]view.Encoder{}))
	ac.Sinks = []actors.Sink{v, repl}
	ac.Ownership = repl
	ac.Peers = repl
	ac.OnRenew = repl.OnRenew
	reg, err := actors.NewRegistry(ac)
	require.NoError(t, err)
	repl.Attach(reg, v)
	b.mu.Lock()
	b.nodes[name] = repl
	b.sent[name] = &atomic.Int64{}
	b.mu.Unlock()
	repl.Start(fakePeers{bus: b, name: name}, joining)
	b.membersChanged()
	t.Cleanup(func() {
		repl.Stop()
		reg.Close()
	})
	return &testNode{name: name, reg: reg, view: v, repl: repl}
}

func (b *fakeBus) membersChanged() {
	b.mu.Lock()
	var all []*Replicator
	for _, r := range b.nodes {
		all = append(all, r)
	}
	b.mu.Unlock()
	for _, r := range all {
		if r != nil {
			r.MembersChanged()
		}
	}
}

// addSilent adds a member with no replicator behind it that never reads.
func (b *fakeBus) addSilent(name string) {
	b.mu.Lock()
	b.nodes[name] = nil
	b.stalled[name] = true
	b.sent[name] = &atomic.Int64{}
	b.mu.Unlock()
	b.membersChanged()
}

func (b *fakeBus) kill(name string) {
	b.mu.Lock()
	b.dead[name] = true
	b.mu.Unlock()
	b.membersChanged()
}

func (b *fakeBus) stall(name string, on bool) {
	b.mu.Lock()
	b.stalled[name] = on
	b.mu.Unlock()
}

func inst(app, id string) *actors.Instance {
	in := &actors.Instance{InstanceID: id, HostName: id + ".example.org", App: app, Status: actors.StatusUp}
	in.Normalize()
	return in
}

// has reports whether n's view lists app/id.
func (n *testNode) has(app, id string) bool {
	a := n.view.Snapshot().App(app)
	if a == nil {
		return false
	}
	for _, in := range a.Instances() {
		if in.ID() == id {
			return true
		}
	}
	return false
}

const tick = 10 * time.Millisecond

// A change fans out to every member; a replicated change is not sent on.
func TestReplicatorFanOut(t *testing.T) {
	bus := newFakeBus()
	a, b, c := bus.start(t, "a", false), bus.start(t, "b", false), bus.start(t, "c", false)
	ctx := context.Background()
	require.NoError(t, a.reg.Register(ctx, inst("ORDERS", "o-1"), false))
	require.Eventually(t, func() bool { return b.has("ORDERS", "o-1") && c.has("ORDERS", "o-1") }, waitFor, tick)
	_, err := a.reg.Cancel(ctx, "ORDERS", "o-1", false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !b.has("ORDERS", "o-1") && !c.has("ORDERS", "o-1") }, waitFor, tick)
	assert.Zero(t, b.repl.Stats().RecordMessages, "b only received; it sends no records on")
}

// A member that accepts streams but never reads slows nobody else: changes
// keep reaching the other members while every send to it waits out its
// timeout.
func TestReplicatorStalledPeerSlowsNobody(t *testing.T) {
	bus := newFakeBus()
	bus.timeout = 2 * time.Second
	a, b := bus.start(t, "a", false), bus.start(t, "b", false)
	slow := bus.start(t, "slow", false)
	bus.stall("slow", true)
	ctx := context.Background()
	for i := range 20 {
		require.NoError(t, a.reg.Register(ctx, inst("ORDERS", fmt.Sprintf("o-%d", i)), false))
		id := fmt.Sprintf("o-%d", i)
		// Each change reaches b long before one send to the stalled
		// member could time out.
		require.Eventually(t, func() bool { return b.has("ORDERS", id) }, bus.timeout/2, time.Millisecond,
			"change %d held up behind the stalled member", i)
	}
	assert.False(t, slow.has("ORDERS", "o-19"))
	bus.stall("slow", false)
	require.Eventually(t, func() bool { return slow.has("ORDERS", "o-19") }, waitFor, tick, "it catches up once it reads")
}

// A transfer to a member that stops reading and then leaves is abandoned:
// sends to it stop with the leave, and the other members are served all
// along.
func TestReplicatorTransferAbandonedWhenAskerLeaves(t *testing.T) {
	bus := newFakeBus()
	bus.timeout = 50 * time.Millisecond
	a := bus.start(t, "a", false, func(rc *ReplicatorConfig, _ *actors.Config) { rc.MaxBatch = 1 })
	c := bus.start(t, "c", false)
	ctx := context.Background()
	for i := range 100 {
		require.NoError(t, a.reg.Register(ctx, inst("ORDERS", fmt.Sprintf("o-%d", i)), false))
	}
	require.Eventually(t, func() bool { return c.reg.Count() == 100 }, waitFor, tick)
	// b asked for everything (it holds nothing) and then stopped reading:
	// the transfer would take 100 sends of 50 ms each.
	bus.addSilent("b")
	a.repl.handleMessage(mustEncode(t, &wire.SyncRequest{Node: "b", Apps: []wire.SyncApp{{App: "ORDERS"}}}))
	require.Eventually(t, func() bool { return bus.sentErrorsTo(a, "b") >= 3 }, waitFor, tick, "a is serving b")
	require.NoError(t, a.reg.Register(ctx, inst("ORDERS", "during"), false), "a change while b stalls")
	require.Eventually(t, func() bool { return c.has("ORDERS", "during") }, 10*bus.timeout, time.Millisecond,
		"c is served while the transfer to b is stuck")
	bus.kill("b")
	require.Eventually(t, func() bool { return a.repl.link("b") == nil }, waitFor, tick)
	time.Sleep(2 * bus.timeout) // a send in flight at the leave ends
	settled := a.repl.Stats().SendErrors
	time.Sleep(10 * bus.timeout)
	assert.Equal(t, settled, a.repl.Stats().SendErrors, "no more sends to the departed asker")
	// Every send to b fails (one record each), so the failed sends are the
	// transfer's sends. (Not TransferRecords: it also counts what a's
	// anti-entropy sends c when c's digest lags the fan-out.)
	assert.Less(t, settled, uint64(100), "the transfer did not run to its end")
}

// sentErrorsTo approximates the failed sends from r: only the stalled or
// dead member b fails in these tests.
func (b *fakeBus) sentErrorsTo(r *testNode, _ string) uint64 { return r.repl.Stats().SendErrors }

func mustEncode(t *testing.T, m wire.Message) []byte {
	t.Helper()
	b, err := wire.Encode(m)
	require.NoError(t, err)
	return b
}

// Anti-entropy after a split moves the records that differ, not whole
// applications.
func TestReplicatorAntiEntropyMovesOnlyDifferences(t *testing.T) {
	bus := newFakeBus()
	a, b := bus.start(t, "a", false), bus.start(t, "b", false)
	ctx := context.Background()
	const n = 300
	for i := range n {
		require.NoError(t, a.reg.Register(ctx, inst("ORDERS", fmt.Sprintf("o-%d", i)), false))
	}
	require.Eventually(t, func() bool { return b.reg.Count() == n }, waitFor, tick)
	// Split: b misses 5 registrations and 3 cancels on a (once a has
	// dropped its link to b, so that none of them reaches b directly).
	bus.kill("b")
	require.Eventually(t, func() bool { return a.repl.link("b") == nil }, waitFor, tick)
	for i := range 5 {
		require.NoError(t, a.reg.Register(ctx, inst("ORDERS", fmt.Sprintf("new-%d", i)), false))
	}
	for i := range 3 {
		_, err := a.reg.Cancel(ctx, "ORDERS", fmt.Sprintf("o-%d", i), false)
		require.NoError(t, err)
	}
	before := a.repl.Stats().TransferRecords + b.repl.Stats().TransferRecords
	require.Equal(t, n, b.reg.Count(), "b missed the changes")
	bus.mu.Lock()
	delete(bus.dead, "b")
	bus.mu.Unlock()
	bus.membersChanged()
	// A transfer is counted once its send returns, and the receiver may
	// apply it before that: wait for the count as well as the digests.
	const differing = 5 + 3
	moved := func() uint64 { return a.repl.Stats().TransferRecords + b.repl.Stats().TransferRecords - before }
	require.Eventually(t, func() bool {
		return a.view.Snapshot().App("ORDERS").Digest() == b.view.Snapshot().App("ORDERS").Digest() &&
			moved() >= differing
	}, waitFor, tick, "the heal goes through anti-entropy")
	assert.LessOrEqual(t, moved(), uint64(2*differing), "a heal moves at most twice the differing records")
	assert.Equal(t, n+5-3, b.reg.Count())
}

// Ownership: the owner evicts; a node that takes an application over counts
// the grace from the change, per lease.
func TestReplicatorOwnedSince(t *testing.T) {
	bus := newFakeBus()
	a := bus.start(t, "a", false)
	start, ok := a.repl.OwnedSince("ANY")
	require.True(t, ok, "alone, a owns everything")
	b := bus.start(t, "b", false)
	// Find an application that moves to b, and check b counts from the
	// change while a no longer owns it.
	var app string
	for i := 0; ; i++ {
		app = fmt.Sprintf("APP%d", i)
		if b.repl.OwnerOf(app) == "b" {
			break
		}
	}
	_, aOwns := a.repl.OwnedSince(app)
	assert.False(t, aOwns)
	since, ok := b.repl.OwnedSince(app)
	require.True(t, ok)
	assert.False(t, since.Before(start))
	assert.Equal(t, b.repl.OwnerOf(app), a.repl.OwnerOf(app), "both agree on the owner")
}

// Renewals counted on each member add up on every member.
func TestReplicatorPeerRenewals(t *testing.T) {
	bus := newFakeBus()
	mut := func(_ *ReplicatorConfig, ac *actors.Config) {
		ac.SelfPreservation = true
		ac.RenewalWindow = 100 * time.Millisecond
		ac.ExpectedClientRenewalInterval = 100 * time.Millisecond
	}
	a, b := bus.start(t, "a", false, mut), bus.start(t, "b", false, mut)
	ctx := context.Background()
	require.NoError(t, a.reg.Register(ctx, inst("ORDERS", "o-1"), false))
	require.Eventually(t, func() bool { return b.has("ORDERS", "o-1") }, waitFor, tick)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the client renews on a only, 20 times a window
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				_, _ = a.reg.Renew(ctx, actors.RenewRequest{App: "ORDERS", ID: "o-1"})
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	require.Eventually(t, func() bool {
		st := b.reg.SelfPreservation()
		return st.PeerRenewals > 5 && st.Members == 2 && !st.Engaged
	}, waitFor, tick, "b counts a's renewals and does not engage: %+v", b.reg.SelfPreservation())
	bus.mu.Lock()
	bus.muted["a"] = true // a dead process sends nothing
	bus.mu.Unlock()
	bus.kill("a")
	require.Eventually(t, func() bool { return b.reg.SelfPreservation().Engaged }, waitFor, tick,
		"cut off from the only renewing member, b engages")
}

// Bad configurations are refused, not replaced.
func TestReplicatorConfigValidate(t *testing.T) {
	for name, mutate := range map[string]func(*ReplicatorConfig){
		"flush":        func(c *ReplicatorConfig) { c.RenewFlushInterval = 0 },
		"anti-entropy": func(c *ReplicatorConfig) { c.AntiEntropyInterval = -1 },
		"load":         func(c *ReplicatorConfig) { c.LoadInterval = 0 },
		"batch":        func(c *ReplicatorConfig) { c.MaxBatch = 0 },
		"queue":        func(c *ReplicatorConfig) { c.MaxQueue = 1 },
		"ready":        func(c *ReplicatorConfig) { c.ReadyTimeout = -time.Second },
		"meta":         func(c *ReplicatorConfig) { c.Meta = make([]byte, 501) },
	} {
		c := testReplicatorConfig()
		mutate(&c)
		_, err := NewReplicator(c)
		assert.ErrorIs(t, err, ErrInvalidReplicatorConfig, name)
	}
	_, err := NewReplicator(DefaultReplicatorConfig())
	assert.ErrorIs(t, err, ErrInvalidReplicatorConfig, "the defaults leave LoadInterval to the node")
	c := testReplicatorConfig()
	c.ReadyTimeout = 0
	r, err := NewReplicator(c)
	require.NoError(t, err, "ReadyTimeout 0 means do not wait")
	r.Start(fakePeers{bus: newFakeBus(), name: "x"}, true)
	defer r.Stop()
	assert.True(t, r.Ready(), "ReadyTimeout 0: ready at once, even when joining")
}

// Stop lets each link send what is queued for its peer (within a bound)
// before it closes.
func TestReplicatorStopDrainsQueues(t *testing.T) {
	bus := newFakeBus()
	a, b := bus.start(t, "a", false), bus.start(t, "b", false)
	ctx := context.Background()
	require.NoError(t, a.reg.Register(ctx, inst("ORDERS", "first"), false))
	require.Eventually(t, func() bool { return b.has("ORDERS", "first") }, waitFor, tick)
	// Queue records without waking the link, as if they had just been
	// queued when Stop came.
	l := a.repl.link("b")
	require.NotNil(t, l)
	l.mu.Lock()
	for i := range 10 {
		l.records = append(l.records, toWire(actors.Record{App: "ORDERS", ID: fmt.Sprintf("q-%d", i),
			Version: actors.Version{Clock: a.reg.HLC().Now(), Node: "a"}, Instance: inst("ORDERS", fmt.Sprintf("q-%d", i)),
			LastRenewal: time.Now().UnixMilli()}))
	}
	l.mu.Unlock()
	a.repl.Stop()
	require.Eventually(t, func() bool { return b.has("ORDERS", "q-9") }, waitFor, tick, "queued records were sent before the link closed")
}

// A link's control queue keeps one digest (a replaced one's request for a
// reply survives), one load report, and a bounded number of sync requests.
func TestPeerLinkControlQueue(t *testing.T) {
	r, err := NewReplicator(testReplicatorConfig())
	require.NoError(t, err)
	l := newPeerLink(r, "p")
	defer l.close()
	assert.True(t, l.pushControl(&wire.Digest{Node: "a", Reply: true}))
	assert.True(t, l.pushControl(&wire.Digest{Node: "a"}))
	assert.True(t, l.pushControl(&wire.Load{Node: "a", WindowMillis: 1, Renewals: 1}))
	assert.True(t, l.pushControl(&wire.Load{Node: "a", WindowMillis: 1, Renewals: 2}))
	for range maxSyncQueued {
		require.True(t, l.pushControl(&wire.SyncRequest{Node: "a"}))
	}
	assert.False(t, l.pushControl(&wire.SyncRequest{Node: "a"}), "bounded")
	digests, loads := 0, 0
	for _, m := range l.control {
		switch m := m.(type) {
		case *wire.Digest:
			digests++
			assert.True(t, m.Reply, "the replaced digest asked for a reply")
		case *wire.Load:
			loads++
			assert.Equal(t, int64(2), m.Renewals, "the newest report")
		}
	}
	assert.Equal(t, 1, digests)
	assert.Equal(t, 1, loads)
}

// An owner that stops hearing from a member (it was cut off, or stalled
// itself) may be missing the renewals that member forwards: it evicts
// nothing meanwhile, and afterwards counts silence only from when it hears
// again (BUG-6 of the simulations).
func TestReplicatorNoEvictionWhileDeafToAMember(t *testing.T) {
	bus := newFakeBus()
	a, _ := bus.start(t, "a", false), bus.start(t, "b", false)
	var app string
	for i := 0; ; i++ {
		if app = fmt.Sprintf("APP%d", i); a.repl.OwnerOf(app) == "a" {
			break
		}
	}
	require.Eventually(t, func() bool { _, ok := a.repl.MemberLoads()["b"]; return ok }, waitFor, tick, "b reports")
	before, ok := a.repl.OwnedSince(app)
	require.True(t, ok)

	bus.mu.Lock()
	bus.muted["b"] = true
	bus.mu.Unlock()
	require.Eventually(t, func() bool {
		since, _ := a.repl.OwnedSince(app)
		return time.Since(since) < 50*time.Millisecond
	}, waitFor, tick, "while b is not heard, a's grace keeps starting now")

	bus.mu.Lock()
	bus.muted["b"] = false
	bus.mu.Unlock()
	require.Eventually(t, func() bool {
		a.repl.loadMu.Lock()
		defer a.repl.loadMu.Unlock()
		return !a.repl.resumed.IsZero()
	}, waitFor, tick)
	since, _ := a.repl.OwnedSince(app)
	assert.True(t, since.After(before), "silence counts from when b was heard again")
}

// memberGap starts a, b and c, mutes c until a has seen its reports go
// stale, then unmutes it and waits for c's next report. It returns, for an
// application a owns, a's grace start before the gap, the moment c was
// unmuted and a's grace start after the gap.
func memberGap(t *testing.T) (before, unmuted, after time.Time) {
	t.Helper()
	bus := newFakeBus()
	a := bus.start(t, "a", false)
	bus.start(t, "b", false)
	bus.start(t, "c", false)
	app := ownedBy(t, a, "a")
	require.Eventually(t, func() bool { return len(a.repl.MemberLoads()) == 2 }, waitFor, tick, "b and c report")
	before, ok := a.repl.OwnedSince(app)
	require.True(t, ok)
	bus.mu.Lock()
	bus.muted["c"] = true
	bus.mu.Unlock()
	require.Eventually(t, func() bool {
		a.repl.loadMu.Lock()
		defer a.repl.loadMu.Unlock()
		return !a.repl.loads["c"].fresh(time.Now(), a.repl.cfg.LoadInterval)
	}, waitFor, tick, "c's reports go stale on a")
	unmuted = time.Now()
	bus.mu.Lock()
	bus.muted["c"] = false
	bus.mu.Unlock()
	require.Eventually(t, func() bool {
		a.repl.loadMu.Lock()
		defer a.repl.loadMu.Unlock()
		return a.repl.loads["c"].at.After(unmuted)
	}, waitFor, tick, "c reports again")
	after, _ = a.repl.OwnedSince(app)
	return before, unmuted, after
}

// A member that stayed alive but was not heard for a while (cut off one
// way, as in asymmetric-partition) may have taken renewals that never
// reached the owner: when its reports resume, the owner counts silence
// only from then, although it heard its other peer all along (with
// no-grace-after-member-gap on, it does not; see the sabotage test).
func TestReplicatorGraceRestartsAfterOneMembersGap(t *testing.T) {
	_, unmuted, since := memberGap(t)
	assert.False(t, since.Before(unmuted), "silence counts from c's first report after the gap")
}

// Reports from a node that is not alive in this node's view mean the
// views disagree: the owner evicts nothing while they come.
func TestReplicatorNoEvictionWhileANonMemberReports(t *testing.T) {
	bus := newFakeBus()
	a := bus.start(t, "a", false)
	app := ownedBy(t, a, "a")
	a.repl.onLoad(&wire.Load{Node: "stranger", WindowMillis: 1000, Renewals: 1})
	since, ok := a.repl.OwnedSince(app)
	require.True(t, ok)
	assert.WithinDuration(t, time.Now(), since, 50*time.Millisecond, "the grace starts now while the stranger reports")
}

// ownedBy returns an application name that node owns.
func ownedBy(t *testing.T, n *testNode, node string) string {
	t.Helper()
	var app string
	require.Eventually(t, func() bool {
		for i := range 1000 {
			if c := fmt.Sprintf("APP%d", i); n.repl.OwnerOf(c) == node {
				app = c
				return true
			}
		}
		return false
	}, waitFor, tick)
	return app
}
