package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/wire"
)

// mixedCluster starts a node "old" playing the previous release (it speaks
// wire protocol 2 only) and two nodes of this build, "a" joining old and
// "b" joining a, on the in-memory network, each with a registry and a
// replicator, and waits until they are one cluster.
func mixedCluster(t *testing.T) (nodes map[string]*testNode, ms map[string]*Membership) {
	t.Helper()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	old, mo, _ := startReplMember(t, n, replNodeOpts{protocol: wire.MinProtocolVersion}, "old")
	a, ma, _ := startReplMember(t, n, replNodeOpts{}, "a", seedOf(n, mo))
	b, mb, _ := startReplMember(t, n, replNodeOpts{}, "b", seedOf(n, ma))
	return map[string]*testNode{"old": old, "a": a, "b": b}, map[string]*Membership{"old": mo, "a": ma, "b": mb}
}

// A node of the previous release and two of this one form one cluster:
// each side accepts the other, this build writes the old node's frames in
// version 2 and its own kind's in version 3, and registrations on either
// side reach every node (records, digests and sync transfers cross the
// version line both ways).
func TestMixedProtocolsFormOneCluster(t *testing.T) {
	nodes, ms := mixedCluster(t)
	for _, m := range ms {
		waitView(t, m, allAre(StateAlive, "old", "a", "b"))
	}
	assert.Equal(t, wire.MinProtocolVersion, ms["a"].PeerProtocol("old"))
	assert.Equal(t, wire.ProtocolVersion, ms["a"].PeerProtocol("b"))
	assert.Equal(t, wire.MinProtocolVersion, ms["old"].PeerProtocol("a"))
	mem, ok := ms["old"].Member("a")
	require.True(t, ok)
	assert.Equal(t, wire.ProtocolVersion, mem.Protocol, "a member's Protocol is the highest it speaks")

	ctx := context.Background()
	require.NoError(t, nodes["old"].reg.Register(ctx, inst("ORDERS", "o-1"), false))
	require.NoError(t, nodes["b"].reg.Register(ctx, inst("BILLING", "b-1"), false))
	for name, n := range nodes {
		require.Eventually(t, func() bool { return n.has("ORDERS", "o-1") && n.has("BILLING", "b-1") },
			waitFor, 10*time.Millisecond, "node %s lacks a registration", name)
	}
}

// The two nodes' advertised ranges decide: overlapping ranges are
// accepted, disjoint ones refused with both ranges named.
func TestProtocolRangesOverlap(t *testing.T) {
	c := DefaultLocalConfig()
	c.NodeName = "a"
	c.Logger = testLogger(t)
	m, err := New(c)
	require.NoError(t, err)
	h := &hooks{m}
	meta := func(lo, span uint8) []byte { return []byte{metaMagic, lo, span << metaSpanShift} }

	assert.NoError(t, m.checkPeer(memberlistNode("prev", meta(wire.MinProtocolVersion, 0))))
	assert.NoError(t, m.checkPeer(memberlistNode("same", meta(wire.MinProtocolVersion, wire.ProtocolVersion-wire.MinProtocolVersion))))
	assert.NoError(t, m.checkPeer(memberlistNode("next", meta(wire.ProtocolVersion, 1))))
	err = m.checkPeer(memberlistNode("far", meta(wire.ProtocolVersion+1, 1)))
	assert.ErrorIs(t, err, ErrProtocolMismatch)
	assert.Contains(t, err.Error(), fmt.Sprintf("far speaks wire protocol %d-%d, this node %d-%d",
		wire.ProtocolVersion+1, wire.ProtocolVersion+2, wire.MinProtocolVersion, wire.ProtocolVersion))

	// This node advertises its lowest version in the version byte and the
	// span in the flags' top bits, beside the other flags.
	own := h.NodeMeta(64)
	lo, hi, ok := metaRange(own)
	require.True(t, ok)
	assert.Equal(t, []uint8{wire.MinProtocolVersion, wire.ProtocolVersion}, []uint8{lo, hi})
	assert.Equal(t, wire.MinProtocolVersion, own[1], "the previous release requires the version byte to be its own")
}

// The previous release's push/pull state (its part's header, a failed
// member, then a digest frame of version 3), as the last protocol-3 commit
// wrote it, is read:
// the failed member is heard of and the delegate gets the digest. And
// this node's own state carries its part's header as a nameless entry,
// which the previous release's parser skips.
func TestPreviousReleasePushPullState(t *testing.T) {
	n := memnet.New(1)
	defer n.Shutdown()
	d := &recDelegate{}
	c := memConfig(t, n, "x")
	c.Delegate = d
	m, err := New(c)
	require.NoError(t, err)
	h := &hooks{m: m}

	old, err := os.ReadFile(filepath.Join("testdata", "v3-pushpull-failed.bin"))
	require.NoError(t, err)
	failed, rest, err := parseFailedState(old)
	require.NoError(t, err)
	assert.Equal(t, []failedPeer{{name: "node-b", addr: "10.0.0.2:7946"}}, failed)
	_, err = wire.Decode(rest)
	require.ErrorIs(t, err, wire.ErrVersion, "version 3 is out of this build's range")
	dg, err := wire.DecodeState(rest)
	require.NoError(t, err, "but a push/pull state of version 3 is read")
	assert.Equal(t, "node-a", dg.(*wire.Digest).Node)
	h.MergeRemoteState(old, false)
	assert.Equal(t, []string{string(rest)}, d.merged, "the delegate gets the digest")
	m.mu.Lock()
	assert.Equal(t, "10.0.0.2:7946", m.heardDead["node-b"].addr)
	m.mu.Unlock()

	// A part of a later release is skipped, not fatal.
	d2 := &recDelegate{}
	m.cfg.Delegate = d2
	later := append([]byte{controlPrefix, 'Z', 3, 1, 2, 3}, old...)
	h.MergeRemoteState(later, false)
	assert.Equal(t, []string{string(rest)}, d2.merged, "the state after an unknown part still reaches the delegate")

	// Our own state, read as the previous release reads it: its count
	// includes the header, whose name is empty (skipped there).
	m.mu.Lock()
	m.members = map[string]*member{"gone": {Member: Member{Name: "gone", Address: "10.0.0.9:7946", State: StateDead}}}
	m.mu.Unlock()
	buf := h.LocalState(false)
	require.Equal(t, []byte{controlPrefix, stateFailed, 2, 0}, buf[:4], "two entries, the first nameless")
	failed, rest, err = parseFailedState(buf)
	require.NoError(t, err)
	assert.Equal(t, []failedPeer{{name: "gone", addr: "10.0.0.9:7946"}}, failed)
	assert.Equal(t, []byte("state"), rest)
}

// A push/pull state is written in the oldest version every alive member
// reads: with a member of the next release, which no longer reads this
// node's lowest version, the next one up; a dead member does not count.
func TestStateVersionEveryMemberReads(t *testing.T) {
	c := DefaultLocalConfig()
	c.NodeName = "a"
	c.Logger = testLogger(t)
	m, err := New(c)
	require.NoError(t, err)
	meta := func(lo, span uint8) memberlist.Node {
		return memberlist.Node{Meta: []byte{metaMagic, lo, span << metaSpanShift}}
	}
	lo := wire.MinProtocolVersion
	m.mu.Lock()
	m.members = map[string]*member{"same": {Member: Member{State: StateAlive}, node: meta(lo, wire.ProtocolVersion-lo)}}
	m.mu.Unlock()
	assert.Equal(t, lo, m.LowestProtocol(), "every member reads this node's lowest")

	m.mu.Lock()
	m.members["next"] = &member{Member: Member{State: StateSuspect}, node: meta(wire.ProtocolVersion, 1)}
	m.members["gone"] = &member{Member: Member{State: StateDead}, node: meta(wire.ProtocolVersion+1, 1)}
	m.mu.Unlock()
	assert.Equal(t, wire.ProtocolVersion, m.LowestProtocol(), "the next release reads this node's highest, not its lowest")
}

func memberlistNode(name string, meta []byte) *memberlist.Node {
	return &memberlist.Node{Name: name, Meta: meta}
}
