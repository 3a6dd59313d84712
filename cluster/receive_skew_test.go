package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// aheadClock is a wall clock ahead of the real one by a fixed offset.
type aheadClock time.Duration

func (c aheadClock) Now() time.Time { return time.Now().Add(time.Duration(c)) }

// skewedPair starts a, on the real clock, and b, whose wall clock runs
// 20 minutes ahead: twice the tombstone TTL, and far beyond a lease.
func skewedPair(t *testing.T) (a, b *testNode) {
	t.Helper()
	bus := newFakeBus()
	a = bus.start(t, "a", false)
	ahead := aheadClock(20 * time.Minute)
	b = bus.start(t, "b", false, func(rc *ReplicatorConfig, ac *actors.Config) { rc.Clock, ac.Clock = ahead, ahead })
	require.Eventually(t, func() bool { return a.repl.Ready() && b.repl.Ready() }, waitFor, tick)
	return a, b
}

// A node whose wall clock runs ahead takes its peers' fresh copies as
// fresh: a record batch carries the sender's clock (wire.Records.SentAt),
// and the receiver reads the copy's last renewal and version time on it.
// Read on b's own clock, a's registration looks older than the TTL with
// its lease run out, and b refused it and evicted it everywhere (BUG-17;
// the switch copy-aged-by-receiver-clock shows that, run with -tags
// sabotage).
func TestReplicatorCopiesAgedOnTheSendersClock(t *testing.T) {
	a, b := skewedPair(t)
	registered, onB := registerAcrossTheSkew(t, a, b)
	require.Equal(t, registered, onB, "b installed a's registration as it was: it did not refuse it")
}

// registerAcrossTheSkew registers an instance on a and returns the version
// a made and the version b holds once it holds the instance. A refusal by b
// is overruled by a (its client renewed there), so b then holds a's newer,
// overruling version instead.
func registerAcrossTheSkew(t *testing.T, a, b *testNode) (registered, onB actors.Version) {
	t.Helper()
	require.NoError(t, a.reg.Register(context.Background(), inst("ORDERS", "o-1"), false))
	registered, ok := viewVersionOf(a, "ORDERS", "o-1")
	require.True(t, ok)
	require.Eventually(t, func() bool { onB, ok = viewVersionOf(b, "ORDERS", "o-1"); return ok }, waitFor, tick,
		"b holds the instance")
	return registered, onB
}

// viewVersionOf returns the version of app/id in n's view.
func viewVersionOf(n *testNode, app, id string) (actors.Version, bool) {
	if a := n.view.Snapshot().App(app); a != nil {
		for in, v := range a.All() {
			if in.ID() == id {
				return v, true
			}
		}
	}
	return actors.Version{}, false
}
