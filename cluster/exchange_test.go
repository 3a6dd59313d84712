package cluster

import (
	"bufio"
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/wire"
)

// memPeers adapts a Membership to the Replicator, as the node does.
type memPeers struct {
	m    *Membership
	name string
}

func (p memPeers) LocalName() string { return p.name }

func (p memPeers) AliveMembers() []string { return names(p.m.LiveMembers()) }

func (p memPeers) SendReliable(name string, msg []byte) error { return p.m.SendReliable(name, msg) }

// startMemReplNode starts (with gossip encryption under key, if any; on
// real loopback if n is nil) a registry, its view, its replicator and its
// membership on a memnet.Network (memberlist's periodic push/pull off, so that
// only the replicator's own anti-entropy moves records that fan-out lost).
func startMemReplNode(t *testing.T, n *memnet.Network, key []byte, name string, join ...string) (*testNode, *Membership) {
	t.Helper()
	node, m, _ := startReplMember(t, n, replNodeOpts{key: key, quiet: true}, name, join...)
	return node, m
}

// oneWayBlocked sets up BUG-7's case: a and b, where a cannot dial or send
// to b while b still reaches a, and an instance registered on a after the
// block (its fan-out to b fails). It returns b.
func oneWayBlocked(t *testing.T, key []byte) *testNode {
	t.Helper()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	a, ma := startMemReplNode(t, n, key, "a")
	b, mb := startMemReplNode(t, n, key, "b", "a")
	for _, m := range []*Membership{ma, mb} {
		waitView(t, m, allAre(StateAlive, "a", "b"))
	}
	n.BlockOneWay([]string{"a"}, []string{"b"})
	require.NoError(t, a.reg.Register(context.Background(), inst("ONEWAY", "i-1"), false))
	return b
}

// TestPullThroughOneWayBlock is BUG-7 of the simulations: in an asymmetric
// partition, a registration on the side that cannot dial reaches the other
// side through that side's anti-entropy pull, before the block lifts: the
// digest and the records come back on the stream the puller dials.
func TestPullThroughOneWayBlock(t *testing.T) {
	b := oneWayBlocked(t, nil)
	require.Eventually(t, func() bool { return b.has("ONEWAY", "i-1") }, waitFor, tick,
		"b pulls a's registration while a cannot dial b")
}

// With a gossip key the pull works the same: the exchange's frames are
// sealed with it.
func TestPullThroughOneWayBlockEncrypted(t *testing.T) {
	b := oneWayBlocked(t, []byte("0123456789abcdef"))
	require.Eventually(t, func() bool { return b.has("ONEWAY", "i-1") }, waitFor, tick,
		"b pulls a's registration while a cannot dial b, over sealed frames")
}

// A frame sealed under one key opens with a keyring that holds it, and
// not with one that does not.
func TestExchangeFramesSealed(t *testing.T) {
	k1, k2 := []byte("0123456789abcdef"), []byte("fedcba9876543210")
	seal := &Membership{cfg: Config{GossipKeys: [][]byte{k1}}}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	require.NoError(t, seal.writeFrame(w, []byte("digest")))
	require.NoError(t, w.Flush())
	assert.NotContains(t, buf.String(), "digest", "sealed")
	frame := buf.Bytes()

	ring := &Membership{cfg: Config{GossipKeys: [][]byte{k2, k1}}}
	got, err := ring.readFrame(bufio.NewReader(bytes.NewReader(frame)))
	require.NoError(t, err)
	assert.Equal(t, "digest", string(got))

	other := &Membership{cfg: Config{GossipKey: k2}}
	_, err = other.readFrame(bufio.NewReader(bytes.NewReader(frame)))
	assert.Error(t, err, "no key of the ring opens it")

	plain := &Membership{}
	_, err = plain.readFrame(bufio.NewReader(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff, 0x7f})))
	assert.Error(t, err, "a frame over the size limit is refused")
}

// Over real TCP an exchange reaches the peer's replicator past memberlist
// and brings its answer back: a's digest, asked for by b.
func TestExchangeOverLoopback(t *testing.T) {
	_, ma := startMemReplNode(t, nil, nil, "a")
	waitJoined(t, ma)
	addr := ma.LocalNode().Address
	_, mb := startMemReplNode(t, nil, nil, "b", addr)
	waitView(t, mb, allAre(StateAlive, "a", "b"))
	req, err := wire.Encode(&wire.Digest{Node: "b", Reply: true})
	require.NoError(t, err)
	var got []wire.Message
	require.NoError(t, mb.exchange("a", req, func(b []byte) {
		m, err := wire.Decode(b)
		require.NoError(t, err)
		got = append(got, m)
	}))
	require.Len(t, got, 1)
	d, ok := got[0].(*wire.Digest)
	require.True(t, ok, "%T", got[0])
	assert.Equal(t, "a", d.Node)
	waitView(t, ma, allAre(StateAlive, "a", "b")) // memberlist's own streams still work
}

// What a node sends back on a peer's stream counts in its Stats, apart
// from what it sends on streams it dials: a joining node's initial sync is
// answered there, and the cluster benchmarks' bytes per instance read it.
func TestExchangeAnswerCounted(t *testing.T) {
	r, err := NewReplicator(testReplicatorConfig())
	require.NoError(t, err)
	req, err := wire.Encode(&wire.Digest{Node: "b", Reply: true})
	require.NoError(t, err)
	var msgs, bytes uint64
	r.answerExchange(req, func(b []byte) error {
		msgs++
		bytes += uint64(len(b))
		return nil
	})
	require.NotZero(t, msgs, "the digest is answered")
	st := r.Stats()
	assert.Equal(t, msgs, st.AnswerMessages)
	assert.Equal(t, bytes, st.AnswerBytes)
	assert.Zero(t, st.Messages, "no stream of its own")
}
