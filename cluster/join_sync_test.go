package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/wire"
)

// A joining node's initial sync asks for more applications than
// maxTransfers requests hold: every application arrives and the node gets
// ready. (This fake bus answers each request before the next arrives, so
// it does not pile up the requests that lost BUG-11's half of a 100k
// registry; make chaos-join does.)
func TestReplicatorJoinSyncOfManyApplications(t *testing.T) {
	bus := newFakeBus()
	a := bus.start(t, "a", false)
	ctx := context.Background()
	apps := maxSyncApps*maxTransfers + 3*maxSyncApps // more requests than one link queues
	for i := range apps {
		require.NoError(t, a.reg.Register(ctx, inst(fmt.Sprintf("APP-%04d", i), "i-1"), false))
	}
	require.Equal(t, apps, a.reg.Count())
	b := bus.start(t, "b", true)
	require.Eventually(t, func() bool { return b.repl.Ready() && b.reg.Count() == apps }, 3*waitFor, tick,
		"b holds every application and is ready")
	assert.Equal(t, a.view.Snapshot().HashCode(), b.view.Snapshot().HashCode())
}

// A link that already queues maxTransfers answers merges further sync
// requests into the newest waiting one instead of dropping the oldest, and
// a later ask for the same application replaces the earlier one.
func TestPushTransferMergesBeyondTheBound(t *testing.T) {
	l := &peerLink{wake: make(chan struct{}, 1)}
	req := func(apps ...string) *wire.SyncRequest {
		r := &wire.SyncRequest{Node: "b"}
		for _, a := range apps {
			r.Apps = append(r.Apps, wire.SyncApp{App: a})
		}
		return r
	}
	for i := range maxTransfers {
		l.pushTransfer(req(fmt.Sprintf("A%d", i)))
	}
	l.pushTransfer(req("X", "A7"))
	l.pushTransfer(req("Y"))
	require.Len(t, l.transfers, maxTransfers)
	assert.Equal(t, "A0", l.transfers[0].req.Apps[0].App, "the oldest (maybe under way) is kept")
	var last []string
	for _, sa := range l.transfers[maxTransfers-1].req.Apps {
		last = append(last, sa.App)
	}
	assert.Equal(t, []string{"X", "A7", "Y"}, last, "merged, each application once")
}

// joinBookkeeping is a replicator in its initial sync that has asked peer
// "p" for applications A and B (its first digest exchange), then received
// records of A. It returns the replicator.
func joinBookkeeping(t *testing.T) *Replicator {
	t.Helper()
	r, err := NewReplicator(testReplicatorConfig())
	require.NoError(t, err)
	t.Cleanup(r.Stop)
	got, first := r.claimTransfers("p", []string{"A", "B"})
	require.True(t, first)
	require.Equal(t, []string{"A", "B"}, got)
	require.True(t, r.syncProgress([]wire.InstanceRecord{{App: "A"}}))
	return r
}

// While records of the initial sync keep arriving, an application asked of
// one peer and not reached yet is not asked again of another (the peers
// answer an ask one application after another: at a million instances the
// last are reached minutes later); an application whose ask was released
// is asked again at once, and the initial sync still waits for it.
func TestJoinSyncAsksAgainOnlyWhatIsLost(t *testing.T) {
	r := joinBookkeeping(t)
	retry := 6 * r.cfg.AntiEntropyInterval
	r.aeMu.Lock()
	r.ae.pending["B"] = time.Now().Add(-2 * retry) // asked long ago, not reached yet
	r.aeMu.Unlock()
	got, _ := r.claimTransfers("q", []string{"B"})
	assert.Empty(t, got, "the sync is progressing: B is not asked again")

	r.releaseTransfers("p", []string{"B"})
	r.aeMu.Lock()
	_, waiting := r.ae.pending["B"]
	r.aeMu.Unlock()
	assert.True(t, waiting, "a released ask stays in what the initial sync waits for")
	got, _ = r.claimTransfers("q", []string{"B"})
	assert.Equal(t, []string{"B"}, got, "a released ask is asked again at once")
	assert.True(t, r.syncProgress([]wire.InstanceRecord{{App: "B"}}), "its records count as progress")
}
