package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Gossip keys of the keyring tests.
var (
	oldKey   = []byte("old-key-0123456789abcdef") // AES-192
	newKey   = []byte("new-key-0123456789abcdef")
	otherKey = []byte("another-key-0123")
)

// keyedNode starts a node on loopback holding keys (the first encrypts)
// that joins seed ("" for none).
func keyedNode(t *testing.T, name, seed string, keys ...[]byte) *Membership {
	t.Helper()
	var join []string
	if seed != "" {
		join = []string{seed}
	}
	c := testConfig(t, name, join...)
	c.GossipKeys = keys
	return startNode(t, c)
}

// leave makes m leave gracefully and shut down, as a node does on a
// rolling restart.
func leave(t *testing.T, m *Membership) {
	t.Helper()
	require.NoError(t, m.Leave(2*time.Second))
	require.NoError(t, m.Shutdown())
}

// TestGossipKeyMismatchCannotJoin: two nodes with different single keys
// never form a cluster.
func TestGossipKeyMismatchCannotJoin(t *testing.T) {
	t.Parallel()
	a := keyedNode(t, "a", "", oldKey)
	b := keyedNode(t, "b", a.LocalNode().Address, otherKey)
	waitJoinFailures(t, b, 3)
	requireNotJoined(t, b)
	assert.Equal(t, allAre(StateAlive, "a"), states(a))
	assert.Equal(t, allAre(StateAlive, "b"), states(b))
}

// TestGossipKeyRotation replays the three-step procedure documented on
// Config.GossipKeys as rolling restarts of a two-node cluster (a restarted
// node comes back under a new name, so that each step's mixed cluster is
// visible), checks that every mixed cluster holds together, and that at the
// end a node with only the old key, or another key, is refused.
func TestGossipKeyRotation(t *testing.T) {
	t.Parallel()
	// Before: both nodes on the old key.
	n1 := keyedNode(t, "n1", "", oldKey)
	n2 := keyedNode(t, "n2", n1.LocalNode().Address, oldKey)
	waitView(t, n1, allAre(StateAlive, "n1", "n2"))
	// n2's own join must have ended too: a node that leaves while its join
	// is still learning of the cluster does not know whom to tell, and its
	// seed then takes it for failed (a clean-clone CI run met that here).
	waitJoined(t, n2)
	waitView(t, n2, allAre(StateAlive, "n1", "n2"))

	// restart replaces node prev by a node holding keys that joins peer,
	// and checks that the two see each other, and keep doing so for a few
	// probe rounds (the mixed cluster gossips both ways).
	restart := func(prev, peer *Membership, name string, keys ...[]byte) *Membership {
		t.Helper()
		leave(t, prev)
		// One node at a time, as the procedure says: the peer has taken
		// the leave before the next node joins. (A join within a
		// millisecond of the leave once got the peer's state from before
		// it and, gossiping it back, left the peer listing the departed
		// node as alive: BUG-18 in simulations/FINDINGS.md, a race between a
		// join and a leave, not the key rotation this test is about.)
		require.Eventually(t, func() bool { return states(peer)[prev.cfg.NodeName] == StateLeft }, waitFor, 10*time.Millisecond,
			"%s takes %s's leave", peer.cfg.NodeName, prev.cfg.NodeName)
		m := keyedNode(t, name, peer.LocalNode().Address, keys...)
		waitJoined(t, m)
		want := allAre(StateAlive, peer.cfg.NodeName, name)
		waitView(t, peer, want)
		waitView(t, m, want)
		time.Sleep(1500 * time.Millisecond) // three probe intervals of fastTimings
		assert.Equal(t, want, liveStates(peer), "view of %s", peer.cfg.NodeName)
		assert.Equal(t, want, liveStates(m), "view of %s", name)
		return m
	}

	// 1. Add the new key second: [old] and [old, new] talk.
	n3 := restart(n2, n1, "n3", oldKey, newKey)
	n4 := restart(n1, n3, "n4", oldKey, newKey)
	// 2. Promote it: [old, new] and [new, old] talk.
	n5 := restart(n3, n4, "n5", newKey, oldKey)
	n6 := restart(n4, n5, "n6", newKey, oldKey)
	// 3. Drop the old key: [new, old] and [new] talk.
	n7 := restart(n5, n6, "n7", newKey)
	n8 := restart(n6, n7, "n8", newKey)

	// After: a node with only the old key, or another key, is refused.
	stale := keyedNode(t, "stale", n8.LocalNode().Address, oldKey)
	stranger := keyedNode(t, "stranger", n8.LocalNode().Address, otherKey)
	waitJoinFailures(t, stale, 3)
	waitJoinFailures(t, stranger, 3)
	requireNotJoined(t, stale)
	requireNotJoined(t, stranger)
	assert.Equal(t, allAre(StateAlive, "n7", "n8"), liveStates(n8))
}

// TestGossipKeyPromotedTooEarly: a node that sends with the new key cannot
// join a node that holds only the old one; that is why step 1 must reach
// every node before step 2 begins. A node holding both, the old one first,
// can.
func TestGossipKeyPromotedTooEarly(t *testing.T) {
	t.Parallel()
	a := keyedNode(t, "a", "", oldKey)
	early := keyedNode(t, "early", a.LocalNode().Address, newKey, oldKey)
	waitJoinFailures(t, early, 3)
	requireNotJoined(t, early)

	ok := keyedNode(t, "ok", a.LocalNode().Address, oldKey, newKey)
	waitJoined(t, ok)
	waitView(t, a, allAre(StateAlive, "a", "ok"))
	_, known := a.Member("early")
	assert.False(t, known, "the early node never got in")
}

// liveStates is states without the members that have left.
func liveStates(m *Membership) map[string]State {
	out := states(m)
	for name, s := range out {
		if s == StateLeft {
			delete(out, name)
		}
	}
	return out
}

func TestGossipKeysConfig(t *testing.T) {
	c := DefaultLocalConfig()
	c.NodeName = "x"
	c.GossipKeys = [][]byte{slices.Clone(newKey), slices.Clone(oldKey)}
	require.NoError(t, c.Validate())
	mc := c.memberlistConfig()
	require.NotNil(t, mc.Keyring)
	assert.Equal(t, newKey, mc.Keyring.GetPrimaryKey())
	assert.ElementsMatch(t, [][]byte{newKey, oldKey}, mc.Keyring.GetKeys())
	assert.Empty(t, mc.SecretKey)

	c.GossipKeys[0][0] = 'X' // the keyring holds copies
	assert.Equal(t, newKey, mc.Keyring.GetPrimaryKey())

	c.GossipKey = otherKey
	assert.ErrorContains(t, c.Validate(), "GossipKey and GossipKeys are both set")
	c.GossipKeys = nil
	require.NoError(t, c.Validate())
	assert.Equal(t, otherKey, c.memberlistConfig().SecretKey, "GossipKey alone is memberlist's SecretKey, as before")

	c.GossipKey = nil
	c.GossipKeys = [][]byte{newKey, []byte("short")}
	assert.ErrorContains(t, c.Validate(), "GossipKeys[1] is 5 bytes")
	c.GossipKeys = nil
	assert.False(t, c.memberlistConfig().EncryptionEnabled(), "no keys: no encryption")
}
