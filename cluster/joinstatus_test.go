package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/wire"
)

// replNodeOpts adjusts a node of startReplMember.
type replNodeOpts struct {
	key      []byte
	protocol uint8
	port     int // real loopback only: bind this port (a restart)
	ready    time.Duration
	// quiet: memberlist's fast test timings with its periodic push/pull
	// off, so that only the replicator's own anti-entropy moves records
	// that fan-out lost.
	quiet bool
	// release is the release the node plays (stream_test.go).
	release peerRelease
}

// startReplMember starts a registry, its view, its replicator and its
// membership (on n, or on real loopback when n is nil), like the node
// package wires them, and returns a stop function (also run at cleanup).
func startReplMember(t *testing.T, n *memnet.Network, o replNodeOpts, name string, join ...string) (*testNode, *Membership, func()) {
	t.Helper()
	rc := testReplicatorConfig()
	if o.ready > 0 {
		rc.ReadyTimeout = o.ready
	}
	repl, err := NewReplicator(rc)
	require.NoError(t, err)
	ac := actors.DefaultConfig(name)
	ac.EvictionInterval = 50 * time.Millisecond
	ac.SelfPreservation = false
	v := view.New(view.DefaultConfig([view.NumFormats]view.Encoder{}))
	ac.Sinks = []actors.Sink{v, repl}
	ac.Ownership = repl
	ac.Peers = repl
	ac.OnRenew = repl.OnRenew
	reg, err := actors.NewRegistry(ac)
	require.NoError(t, err)
	repl.Attach(reg, v)

	var c Config
	if n != nil {
		c = memConfig(t, n, name, join...)
	} else {
		c = testConfig(t, name, join...)
		c.BindPort = o.port
	}
	c.Delegate = repl
	c.GossipKey = o.key
	c.protocolVersion = o.protocol
	c.noStreams = o.release == releaseNoStreams
	c.noSessionExchanges = o.release == releaseNoSessionExchanges
	if o.quiet {
		c.MemberlistConfig = func(mc *memberlist.Config) {
			fastTimings(mc)
			mc.PushPullInterval = time.Hour
		}
	}
	m, err := New(c)
	require.NoError(t, err)
	_, unsub := m.Subscribe(func(MemberEvent) { repl.MembersChanged() })
	require.NoError(t, m.Start(context.Background()))
	repl.Start(memPeers{m, name}, len(join) > 0)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		unsub()
		repl.Stop()
		assert.NoError(t, m.Shutdown())
		reg.Close()
	}
	t.Cleanup(stop)
	return &testNode{name: name, reg: reg, view: v, repl: repl}, m, stop
}

// refusedJoiner starts a live cluster a+b holding an instance, then a node
// x that joins a with opts (a wrong key or protocol), and waits until x has
// been refused in several attempts spanning well over its ready timeout.
func refusedJoiner(t *testing.T, n *memnet.Network, live, x replNodeOpts) (*testNode, *Membership) {
	t.Helper()
	a, ma, _ := startReplMember(t, n, live, "a")
	_, mb, _ := startReplMember(t, n, live, "b", seedOf(n, ma))
	waitView(t, mb, allAre(StateAlive, "a", "b"))
	require.NoError(t, a.reg.Register(context.Background(), inst("ORDERS", "o-1"), false))

	x.ready = 200 * time.Millisecond
	xn, mx, _ := startReplMember(t, n, x, "x", seedOf(n, ma))
	start := time.Now()
	require.Eventually(t, func() bool {
		return mx.joinFailures.Load() >= 3 && time.Since(start) > 5*x.ready
	}, waitFor, 5*time.Millisecond)
	return xn, mx
}

// seedOf is the address to join m at.
func seedOf(n *memnet.Network, m *Membership) string {
	if n != nil {
		return m.cfg.NodeName
	}
	return m.LocalNode().Address
}

// A node with another gossip key, joining a live cluster, stays unready far
// past its ready timeout: its join status says refused, for the key, and
// its readiness says why.
func TestWrongKeyJoinerNeverReady(t *testing.T) {
	key := []byte("0123456789abcdef")
	x, mx := refusedJoiner(t, nil, replNodeOpts{key: key}, replNodeOpts{key: []byte("fedcba9876543210")})
	assert.False(t, x.repl.Ready(), "a refused node became ready")
	js := mx.JoinStatus()
	assert.Equal(t, JoinRefused, js.State)
	assert.Equal(t, RefusedKey, js.Cause)
	rd := x.repl.Readiness()
	assert.False(t, rd.Ready)
	assert.Contains(t, rd.Reason, "gossip key mismatch")
}

// A node on a wire protocol the cluster does not speak stays unready the
// same way, and its status names both versions.
func TestOtherProtocolJoinerNeverReady(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	other := wire.ProtocolVersion + 50
	x, mx := refusedJoiner(t, n, replNodeOpts{}, replNodeOpts{protocol: other})
	assert.False(t, x.repl.Ready(), "a refused node became ready")
	js := mx.JoinStatus()
	assert.Equal(t, JoinRefused, js.State)
	assert.Equal(t, RefusedProtocol, js.Cause)
	assert.Contains(t, js.Reason, "protocol mismatch")
	assert.Contains(t, js.Reason, fmt.Sprint(other), "the reason names this node's version")
}

// A node whose seeds are all down is a cold start: it becomes ready alone
// after the ready timeout, and says that it serves alone and why.
func TestUnreachableSeedsReadyAlone(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	x, mx, _ := startReplMember(t, n, replNodeOpts{ready: 200 * time.Millisecond}, "x", "nobody")
	require.Eventually(t, x.repl.Ready, waitFor, tick, "a cold start becomes ready by the timeout")
	assert.Equal(t, JoinUnreachable, mx.JoinStatus().State)
	rd := x.repl.Readiness()
	assert.True(t, rd.Alone)
	assert.Contains(t, rd.Reason, "serving alone")
	assert.Contains(t, rd.Reason, "no seed reachable")
}

// Join errors are told apart by their cause.
func TestClassifyJoinFailure(t *testing.T) {
	for _, c := range []struct {
		refusal, err error
		cause        RefusalCause
		refused      bool
	}{
		{fmt.Errorf("%w: b speaks wire protocol 9, this node 3", ErrProtocolMismatch), errors.New("failed to join 1.2.3.4: x"), RefusedProtocol, true},
		{nil, errors.New("failed to join 127.0.0.1:7946: No installed keys could decrypt the message"), RefusedKey, true},
		{nil, errors.New("failed to join 127.0.0.1:7946: remote error: encryption is configured but remote state is not encrypted"), RefusedKey, true},
		{nil, errors.New("failed to join 127.0.0.1:7946: EOF"), RefusedLabel, true},
		{nil, errors.New("failed to join 127.0.0.1:7946: remote error: something"), RefusedOther, true},
		{nil, errors.New("failed to join 127.0.0.1:7946: dial tcp 127.0.0.1:7946: connect: connection refused"), "", false},
		{nil, errors.New("failed to join 10.0.0.1:7946: i/o timeout"), "", false},
	} {
		cause, _, refused := classifyJoinFailure(c.refusal, c.err)
		assert.Equal(t, c.refused, refused, "%v", c.err)
		assert.Equal(t, c.cause, cause, "%v", c.err)
	}
}

// restartSeed is the README's cluster: a started without seeds, b and c
// joining a, instances registered on b and c; then a stops (gracefully, or
// crashed when kill) and a fresh process of it starts, as a was started:
// same name and address, no seeds. It returns the nodes, the fresh a
// first.
func restartSeed(t *testing.T, kill bool) ([]*testNode, []*Membership) {
	t.Helper()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	_, ma, stopA := startReplMember(t, n, replNodeOpts{}, "a")
	b, mb, _ := startReplMember(t, n, replNodeOpts{}, "b", "a")
	c, mc, _ := startReplMember(t, n, replNodeOpts{}, "c", "a")
	for _, m := range []*Membership{ma, mb, mc} {
		waitView(t, m, allAre(StateAlive, "a", "b", "c"))
	}
	ctx := context.Background()
	require.NoError(t, b.reg.Register(ctx, inst("ORDERS", "o-1"), false))
	require.NoError(t, c.reg.Register(ctx, inst("PAYMENTS", "p-1"), false))
	if kill {
		n.Crash("a")
	}
	stopA()
	if kill {
		n.Restart("a")
	} else {
		for _, m := range []*Membership{mb, mc} {
			waitView(t, m, merge(allAre(StateAlive, "b", "c"), allAre(StateLeft, "a")))
		}
	}
	a2, ma2, _ := startReplMember(t, n, replNodeOpts{}, "a")
	return []*testNode{a2, b, c}, []*Membership{ma2, mb, mc}
}

// holdsAll reports whether every node serves both instances.
func holdsAll(nodes []*testNode) bool {
	for _, nd := range nodes {
		if !nd.has("ORDERS", "o-1") || !nd.has("PAYMENTS", "p-1") {
			return false
		}
	}
	return true
}

// A seed started without --join and restarted the same way (gracefully)
// is found again by the others, who re-dial a member that left: every node
// lists every member alive and holds the whole registry.
func TestRestartedSeedRejoinsAfterLeave(t *testing.T) {
	nodes, ms := restartSeed(t, false)
	requireHealed(t, nodes, ms)
}

// The same after a crash (kill -9), the fresh process starting before or
// after the others declared the old one dead.
func TestRestartedSeedRejoinsAfterCrash(t *testing.T) {
	nodes, ms := restartSeed(t, true)
	requireHealed(t, nodes, ms)
}

// requireHealed waits until every membership lists every member alive and
// every node holds the whole registry.
func requireHealed(t *testing.T, nodes []*testNode, ms []*Membership) {
	t.Helper()
	for i, m := range ms {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, allAre(StateAlive, "a", "b", "c"), states(m))
		}, waitFor, tick, "%s lists every member alive", nodes[i].name)
	}
	require.Eventually(t, func() bool { return holdsAll(nodes) }, waitFor, tick, "every node holds the whole registry")
	for _, nd := range nodes {
		require.True(t, nd.repl.Ready(), "%s ready", nd.name)
	}
}
