package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// lateInst is APP/id with an explicit lastDirtyTimestamp, as a Java client
// registers it.
func lateInst(id string, dirty int64) *actors.Instance {
	in := inst("LATE", id)
	in.LastDirtyTimestamp = dirty
	return in
}

// versionOf is n's version of LATE/id (zero if it holds nothing).
func versionOf(t *testing.T, n *testNode, id string) actors.Version {
	vs, err := n.reg.Versions(context.Background(), "LATE")
	require.NoError(t, err)
	for _, v := range vs {
		if v.ID == id {
			return v.Version
		}
	}
	return actors.Version{}
}

// The netns pause finding over real replicators: a registers nothing while
// it is frozen (nothing reaches it); the client registers on b with dirty
// T and cancels there; a wakes and serves the registration its kernel
// queued, with dirty T. The instance ends deleted on every member, which
// agree on the version of its tombstone. Its client registering again with
// a newer lastDirtyTimestamp brings it back everywhere.
func TestLateRegistrationAfterCancelGoneEverywhere(t *testing.T) {
	const dirty = 1754499999870
	ctx := context.Background()
	bus := newFakeBus()
	a, b, c := bus.start(t, "a", false), bus.start(t, "b", false), bus.start(t, "c", false)

	// The warm case first: a held the record when the cancel came.
	require.NoError(t, b.reg.Register(ctx, lateInst("l-1", dirty), false))
	require.Eventually(t, func() bool { return a.has("LATE", "l-1") && c.has("LATE", "l-1") }, waitFor, tick)
	_, err := b.reg.Cancel(ctx, "LATE", "l-1", false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !a.has("LATE", "l-1") && !c.has("LATE", "l-1") }, waitFor, tick)
	require.NoError(t, a.reg.Register(ctx, lateInst("l-1", dirty), false))
	require.False(t, a.has("LATE", "l-1"), "a refuses the late registration at once")

	// The frozen case: a never heard of l-2 before serving it.
	bus.stall("a", true)
	require.NoError(t, b.reg.Register(ctx, lateInst("l-2", dirty), false))
	require.Eventually(t, func() bool { return c.has("LATE", "l-2") }, waitFor, tick)
	_, err = b.reg.Cancel(ctx, "LATE", "l-2", false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !c.has("LATE", "l-2") }, waitFor, tick)
	bus.stall("a", false)
	require.NoError(t, a.reg.Register(ctx, lateInst("l-2", dirty), false))
	for _, id := range []string{"l-1", "l-2"} {
		require.Eventually(t, func() bool {
			va, vb, vc := versionOf(t, a, id), versionOf(t, b, id), versionOf(t, c, id)
			return !a.has("LATE", id) && !b.has("LATE", id) && !c.has("LATE", id) &&
				!va.IsZero() && va == vb && vb == vc
		}, waitFor, tick, "%s deleted everywhere, one tombstone version", id)
	}

	require.NoError(t, a.reg.Register(ctx, lateInst("l-2", dirty+1000), false))
	require.Eventually(t, func() bool { return a.has("LATE", "l-2") && b.has("LATE", "l-2") && c.has("LATE", "l-2") },
		waitFor, tick, "a real re-registration wins")
}
