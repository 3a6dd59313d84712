package cluster

import (
	"context"
	"fmt"
	"testing"

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
