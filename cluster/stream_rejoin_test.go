package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
)

// backedOffAcrossHeal partitions a from b until a sees b dead, gives a's
// stream to b the backoff that dials failing through a partition build up
// (the longest, as if the last one failed just before the heal), heals,
// waits until a sees b alive again and returns the result of a's first
// send to b.
func backedOffAcrossHeal(t *testing.T) error {
	t.Helper()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	nodes := streamCluster(t, n, nil, nil, "a", "b")
	a := nodes[0].m
	n.Partition([]string{"a"}, []string{"b"})
	require.Eventually(t, func() bool { return states(a)["b"] == StateDead }, waitFor, tick, "a sees b dead")
	a.mu.Lock()
	sp := a.streams
	a.mu.Unlock()
	o, err := sp.outFor(memberlist.Address{Name: "b", Addr: n.Addr("b")})
	require.NoError(t, err)
	o.mu.Lock()
	if o.sess != nil {
		_ = o.sess.Close()
		o.sess = nil
	}
	o.failures, o.failedAt = 10, time.Now()
	o.retryAt = o.failedAt.Add(time.Hour) // a backoff no heal outlasts, so only the rejoin can lift it
	o.mu.Unlock()
	n.Heal()
	waitView(t, a, allAre(StateAlive, "a", "b"))
	return a.SendStream("b", classControl, []byte("after the heal"))
}

// A member memberlist sees alive again is dialled at once: the backoff its
// failed dials built up while it was cut off does not delay the first
// messages after the heal (with stream-backoff-survives-rejoin on, it does;
// see stream_rejoin_sabotage_test.go).
func TestPeerStreamRedialsAtOnceAfterRejoin(t *testing.T) {
	require.NoError(t, backedOffAcrossHeal(t))
}
