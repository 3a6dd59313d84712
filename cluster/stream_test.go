package cluster

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
)

// streamNode is a registry, its view, its replicator and its membership,
// as startMemReplNode makes them, with a stop that can be called early
// (a restart) and again at the end of the test.
type streamNode struct {
	*testNode
	m    *Membership
	stop func()
}

// peerRelease is the release a test node plays.
type peerRelease int

const (
	releaseCurrent peerRelease = iota
	// releaseNoStreams: the release before peer streams.
	releaseNoStreams
	// releaseNoSessionExchanges: the release with peer streams whose
	// exchanges are dialled one by one.
	releaseNoSessionExchanges
)

// startStreamNode starts a node on n (real loopback if nil) that plays
// release.
func startStreamNode(t *testing.T, n *memnet.Network, key []byte, name string, release peerRelease, join ...string) *streamNode {
	t.Helper()
	node, m, stop := startReplMember(t, n, replNodeOpts{key: key, quiet: true, release: release}, name, join...)
	return &streamNode{testNode: node, m: m, stop: stop}
}

// streamCluster starts nodes a, b, c… joined to a and waits until every
// node sees every other alive.
func streamCluster(t *testing.T, n *memnet.Network, key []byte, old map[string]peerRelease, names ...string) []*streamNode {
	t.Helper()
	var out []*streamNode
	for i, name := range names {
		var join []string
		if i > 0 {
			join = []string{out[0].m.LocalNode().Address}
			if n != nil {
				join = []string{names[0]}
			}
		}
		out = append(out, startStreamNode(t, n, key, name, old[name], join...))
	}
	for _, s := range out {
		waitView(t, s.m, allAre(StateAlive, names...))
	}
	return out
}

// registerAll registers count instances of app on node and waits until
// every node holds them.
func registerAll(t *testing.T, on *streamNode, all []*streamNode, app string, from, count int) {
	t.Helper()
	for i := from; i < from+count; i++ {
		require.NoError(t, on.reg.Register(context.Background(), inst(app, fmt.Sprintf("i-%d", i)), false))
	}
	for _, s := range all {
		require.Eventually(t, func() bool {
			for i := from; i < from+count; i++ {
				if !s.has(app, fmt.Sprintf("i-%d", i)) {
					return false
				}
			}
			return true
		}, waitFor, tick, "%s holds %s's registrations", s.name, on.name)
	}
}

// dials sums the nodes' dials.
func dials(nodes []*streamNode) uint64 {
	var d uint64
	for _, s := range nodes {
		d += s.m.Dials()
	}
	return d
}

// streamsFlat: every node keeps one session to each peer, and the
// registrations fanned out after that cost no dial at all, however many
// messages they are.
func streamsFlat(t *testing.T, n *memnet.Network, key []byte) {
	nodes := streamCluster(t, n, key, nil, "a", "b", "c")
	registerAll(t, nodes[0], nodes, "WARM", 0, 1)
	require.Eventually(t, func() bool { out, _ := nodes[0].m.StreamSessions(); return out == 2 }, waitFor, tick,
		"a has a session to each peer")
	d0, msgs0 := dials(nodes), nodes[0].repl.Stats().Messages
	for i := range 30 {
		registerAll(t, nodes[i%3], nodes, "ORDERS", i, 1) // one record message to each peer, each time
	}
	sent := nodes[0].repl.Stats().Messages - msgs0
	assert.GreaterOrEqual(t, sent, uint64(20), "a sent its records to its peers")
	// Anti-entropy's pulls ride on the sessions too; what dials remain
	// are memberlist's own (a TCP ping when a probe's ack is late).
	assert.Less(t, dials(nodes)-d0, sent/4, "no dial per message: %d messages from a alone", sent)
}

func TestPeerStreamsFlatDialsMemNetwork(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	streamsFlat(t, n, nil)
}

func TestPeerStreamsFlatDialsLoopbackEncrypted(t *testing.T) {
	streamsFlat(t, nil, []byte("0123456789abcdef"))
}

// A node of the previous release (no streams bit) gets everything the
// old way, by SendReliable, and sends the old way; replication works
// both ways, and no session is ever made to it.
func TestPeerStreamsFallBackForOldPeers(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	nodes := streamCluster(t, n, nil, map[string]peerRelease{"old": releaseNoStreams}, "a", "old")
	registerAll(t, nodes[0], nodes, "ORDERS", 0, 5)
	registerAll(t, nodes[1], nodes, "PAYMENTS", 0, 5)
	out, in := nodes[0].m.StreamSessions()
	assert.Zero(t, out, "no session to the old node")
	assert.Zero(t, in, "the old node dials none")
	assert.GreaterOrEqual(t, nodes[0].m.Dials(), nodes[0].repl.Stats().Messages, "a dials per message to the old node")
}

// A peer that restarts (same name and address) gets the records made
// after it came back: the sender's session to its previous process
// failed and is dialled again.
func TestPeerStreamSurvivesRestart(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	nodes := streamCluster(t, n, nil, nil, "a", "b")
	registerAll(t, nodes[0], nodes, "ORDERS", 0, 1)
	nodes[1].stop()
	b := startStreamNode(t, n, nil, "b", releaseCurrent, "a")
	waitView(t, b.m, allAre(StateAlive, "a", "b"))
	waitView(t, nodes[0].m, allAre(StateAlive, "a", "b"))
	registerAll(t, nodes[0], []*streamNode{nodes[0], b}, "ORDERS", 1, 5)
	require.Eventually(t, func() bool { out, _ := nodes[0].m.StreamSessions(); return out == 1 }, waitFor, tick,
		"a has a session to the new b")
}

// blockingDelegate is a Config.Delegate whose NotifyMsg blocks on
// messages that start with 'S' (stuck) until released, and records the
// others.
type blockingDelegate struct {
	release chan struct{}
	mu      sync.Mutex
	got     [][]byte
}

func (d *blockingDelegate) NodeMeta(int) []byte { return nil }
func (d *blockingDelegate) NotifyMsg(b []byte) {
	if len(b) > 0 && b[0] == 'S' {
		<-d.release
		return
	}
	d.mu.Lock()
	d.got = append(d.got, bytes.Clone(b))
	d.mu.Unlock()
}
func (d *blockingDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (d *blockingDelegate) LocalState(bool) []byte          { return nil }
func (d *blockingDelegate) MergeRemoteState([]byte, bool)   {}
func (d *blockingDelegate) has(b []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, g := range d.got {
		if bytes.Equal(g, b) {
			return true
		}
	}
	return false
}

// A class whose receiver is stuck (its frames fill the stream's window
// and its sends block) does not hold another class's messages: they have
// a stream, and a flow-control window, of their own.
func TestPeerStreamStuckClassHoldsNoOther(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	d := &blockingDelegate{release: make(chan struct{})}
	ca := memConfig(t, n, "a")
	ca.StreamTimeout = time.Minute
	a := startNode(t, ca)
	cb := memConfig(t, n, "b", "a")
	cb.Delegate = d
	b := startNode(t, cb)
	waitView(t, a, allAre(StateAlive, "a", "b"))

	stuck := bytes.Repeat([]byte{'S'}, 64<<10)
	var blocked atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The receiver takes the first and sticks; the window (256 KiB)
		// fills; then a send blocks.
		for range 16 {
			if err := a.SendStream("b", classTransfers, stuck); err != nil {
				return
			}
			blocked.Store(true)
		}
	}()
	require.Eventually(t, blocked.Load, waitFor, tick, "the transfer stream is in use")
	for i := range 5 {
		msg := []byte(fmt.Sprintf("renewal %d", i))
		require.NoError(t, a.SendStream("b", classRenewals, msg))
		require.Eventually(t, func() bool { return d.has(msg) }, waitFor, tick, "the renewal arrives past the stuck transfer")
	}
	select {
	case <-done:
		t.Fatal("the stuck class's sender finished: the test did not hold it")
	default:
	}
	close(d.release)
	<-done
	_ = b
}

// exchangeDials pulls from peer count times, each a digest asking for a
// reply, and returns how many dials a made meanwhile; each pull must be
// answered.
func exchangeDials(t *testing.T, a *streamNode, peer string, count int) uint64 {
	t.Helper()
	d0 := a.m.Dials()
	for i := range count {
		require.True(t, a.repl.pull(peer, a.repl.localDigest(true)), "pull %d from %s answered", i, peer)
	}
	return a.m.Dials() - d0
}

// Anti-entropy's pulls (exchanges) ride on the peer session: a yamux
// stream each, on the connection a dialled once, so a hundred pulls dial
// nothing; and the answers come back, records included.
func TestExchangesRideOnThePeerSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		net  bool
		key  []byte
	}{{"memnetwork", true, nil}, {"loopback-encrypted", false, []byte("0123456789abcdef")}} {
		t.Run(tc.name, func(t *testing.T) {
			var n *memnet.Network
			if tc.net {
				n = memnet.New(1)
				t.Cleanup(n.Shutdown)
			}
			nodes := streamCluster(t, n, tc.key, nil, "a", "b")
			registerAll(t, nodes[1], nodes, "ORDERS", 0, 3)
			require.Eventually(t, func() bool { out, _ := nodes[0].m.StreamSessions(); return out == 1 }, waitFor, tick,
				"a has a session to b")
			assert.Zero(t, exchangeDials(t, nodes[0], "b", 100), "no dial per pull")
			// A record b has and a lacks comes back on a's own pull.
			require.NoError(t, nodes[1].reg.Register(context.Background(), inst("ORDERS", "only-b"), false))
			require.Eventually(t, func() bool {
				nodes[0].repl.pull("b", nodes[0].repl.localDigest(true))
				return nodes[0].has("ORDERS", "only-b")
			}, waitFor, tick, "a pulls b's record")
		})
	}
}

// A peer of the release that dials its exchanges one by one neither
// advertises nor is sent session exchanges: pulls to it are dialled, one
// each, and answered; its own pulls to a new node, dialled the old way,
// are answered too.
func TestExchangesDialledToThePreviousRelease(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	nodes := streamCluster(t, n, nil, map[string]peerRelease{"old": releaseNoSessionExchanges}, "a", "old")
	registerAll(t, nodes[0], nodes, "ORDERS", 0, 3)
	registerAll(t, nodes[1], nodes, "PAYMENTS", 0, 3)
	assert.GreaterOrEqual(t, exchangeDials(t, nodes[0], "old", 10), uint64(10), "a dials each pull to the old node")
	assert.GreaterOrEqual(t, exchangeDials(t, nodes[1], "a", 10), uint64(10), "the old node dials each pull")
	out, _ := nodes[0].m.StreamSessions()
	assert.Equal(t, 1, out, "records still go on a's session to the old node")
}
