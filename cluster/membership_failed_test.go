package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
)

// forgottenPartition sets up BUG-4's case on a memnet.Network: a alone on one
// side of a partition, b and c on the other; b's memberlist has forgotten a
// (GossipToTheDeadTime passed) while b's Membership still holds it as
// failed; then c restarts as a fresh process and joins b. Nobody but c
// re-dials anyone (a and b are passive) and memberlist's periodic push/pull
// is off, so whether c learns of a depends on b's push/pull state alone. It
// returns the network, a and the restarted c.
func forgottenPartition(t *testing.T) (*memnet.Network, *Membership, *Membership) {
	t.Helper()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	cfg := func(name string, forget time.Duration, reconnect time.Duration, join ...string) Config {
		c := memConfig(t, n, name, join...)
		c.MemberlistConfig = func(mc *memberlist.Config) {
			fastTimings(mc)
			mc.PushPullInterval = time.Hour
			mc.GossipToTheDeadTime = forget
		}
		c.ReconnectInterval = reconnect
		return c
	}
	a := startNode(t, cfg("a", time.Second, time.Hour))
	b := startNode(t, cfg("b", time.Millisecond, time.Hour, "a"))
	c := startNode(t, cfg("c", time.Second, time.Hour, "a"))
	for _, m := range []*Membership{a, b, c} {
		waitView(t, m, allAre(StateAlive, "a", "b", "c"))
	}
	n.Partition([]string{"a"}, []string{"b", "c"})
	require.Eventually(t, func() bool { return states(b)["a"] == StateDead }, waitFor, 20*time.Millisecond, "b sees a fail")

	// memberlist drops a dead node at the end of a probe round once it has
	// been dead for GossipToTheDeadTime (1 ms for b). b probes c, its only
	// live peer, every round: three answered probes since a failed mean a
	// round has ended.
	b.mu.Lock()
	failedAt := b.members["a"].Since
	b.mu.Unlock()
	acks := 0
	var last time.Time
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		mc := b.members["c"]
		if mc == nil {
			return false
		}
		if at := mc.lastAck; at.After(failedAt) && at != last {
			last = at
			acks++
		}
		return acks >= 3
	}, waitFor, 10*time.Millisecond, "b keeps probing c")
	require.Equal(t, StateDead, states(b)["a"], "b's Membership still holds a as failed")

	n.Crash("c")
	require.NoError(t, c.Shutdown())
	n.Restart("c")
	c2 := startNode(t, cfg("c", time.Second, 250*time.Millisecond, "b"))
	waitJoined(t, c2)
	return n, a, c2
}

// heardOfA reports whether m heard of a as failed without knowing it.
func heardOfA(m *Membership) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, heard := m.heardDead["a"]
	_, known := m.members["a"]
	return heard && !known
}

// BUG-4: a node restarted during a partition that outlasted its side's
// gossip to the dead learns the other side's members from its side's
// Membership (the failed members in the push/pull state), re-dials them
// after the heal and sees every member.
func TestRestartedAfterSideForgotReconnects(t *testing.T) {
	n, a, c2 := forgottenPartition(t)
	require.True(t, heardOfA(c2), "c learned of a from b's push/pull state at its join")
	n.Heal()
	waitView(t, c2, allAre(StateAlive, "a", "b", "c"))
	waitView(t, a, allAre(StateAlive, "a", "b", "c"))
}

// The failed-member part of a push/pull state round-trips, leaves the
// user's state intact, and a malformed one is refused.
func TestFailedStateEncoding(t *testing.T) {
	n := memnet.New(1)
	defer n.Shutdown()
	d := &recDelegate{}
	c := memConfig(t, n, "x")
	c.Delegate = d
	m, err := New(c)
	require.NoError(t, err)
	h := &hooks{m: m}

	assert.Equal(t, []byte("state"), h.LocalState(false), "no failed members: the user's state alone")

	m.mu.Lock()
	m.members = map[string]*member{
		"x":    {Member: Member{Name: "x", Address: "x:1", State: StateAlive}},
		"gone": {Member: Member{Name: "gone", Address: "10.0.0.9:7946", State: StateDead}},
		"left": {Member: Member{Name: "left", Address: "10.0.0.8:7946", State: StateLeft}},
	}
	m.mu.Unlock()
	buf := h.LocalState(true)
	failed, rest, err := parseFailedState(buf)
	require.NoError(t, err)
	assert.Equal(t, []failedPeer{{name: "gone", addr: "10.0.0.9:7946"}}, failed, "failed members only, not left ones")
	assert.Equal(t, []byte("state"), rest)

	// A peer's state: the failed member is heard of, the user gets its part.
	m.mu.Lock()
	m.members = map[string]*member{}
	m.mu.Unlock()
	h.MergeRemoteState(buf, false)
	assert.True(t, d.mergedState())
	m.mu.Lock()
	assert.Equal(t, "10.0.0.9:7946", m.heardDead["gone"].addr)
	first := m.heardDead["gone"].at
	m.mu.Unlock()
	h.MergeRemoteState(buf, false)
	m.mu.Lock()
	assert.Equal(t, first, m.heardDead["gone"].at, "hearing again does not extend it")
	m.mu.Unlock()

	for _, bad := range [][]byte{
		{controlPrefix},
		{controlPrefix, 'Z', 0},
		{controlPrefix, stateFailed},
		{controlPrefix, stateFailed, 2, 1, 'a'},
		{controlPrefix, stateFailed, 1, 5, 'a'},
		{controlPrefix, stateFailed, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		_, _, err := parseFailedState(bad)
		assert.Error(t, err, "%q", bad)
	}
}
