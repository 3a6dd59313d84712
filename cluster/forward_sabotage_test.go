//go:build sabotage

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With forwarded-renewals-dropped on, the owner of
// TestRenewalsReachOwnerThroughOneWayBlock gets no renewal of the client
// renewing on b while the block lasts (run with -tags sabotage): b's
// forwards fail and are dropped, and the owner's pulls bring none back.
func TestSabotageForwardedRenewalsDropped(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ForwardedRenewalsDropped))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a, app, _ := renewedThroughBlock(t)
	blocked := time.Now()
	assert.Never(t, func() bool { return a.lastRenewal(t, app) > blocked.Add(fwdLease).UnixMilli() },
		3*fwdLease, tick, "no renewal reaches the owner through the block")
}

// With stale-renewals-forwarded on, the renewal b held through the
// partition reaches the owner after the heal and is stamped then: the check
// of TestRenewalHeldThroughPartitionIsNotDelivered fails.
func TestSabotageStaleRenewalsForwarded(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.StaleRenewalsForwarded))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a, app, healed := renewalHeldThroughPartition(t)
	assert.Eventually(t, func() bool { return a.lastRenewal(t, app) >= healed.UnixMilli() },
		fwdLease/2, tick, "the held renewal is stamped after the heal")
}

// With no-grace-after-member-gap on, the grace does not restart when one
// of two peers is heard again: the check of
// TestReplicatorGraceRestartsAfterOneMembersGap fails.
func TestSabotageNoGraceAfterMemberGap(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.NoGraceAfterMemberGap))
	defer func() { require.NoError(t, sabotage.Set()) }()
	before, unmuted, since := memberGap(t)
	assert.True(t, since.Before(unmuted), "the grace did not restart")
	assert.Equal(t, before, since)
}

// With sync-reasks-while-progressing on, the checks of
// TestJoinSyncAsksAgainOnlyWhatIsLost fail: an application not reached yet
// is asked again while the sync progresses, and a released one leaves what
// the initial sync waits for.
func TestSabotageSyncReasksWhileProgressing(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SyncReasksWhileProgressing))
	defer func() { require.NoError(t, sabotage.Set()) }()
	r := joinBookkeeping(t)
	retry := 6 * r.cfg.AntiEntropyInterval
	r.aeMu.Lock()
	r.ae.pending["B"] = time.Now().Add(-2 * retry)
	r.aeMu.Unlock()
	got, _ := r.claimTransfers("q", []string{"B"})
	assert.Equal(t, []string{"B"}, got, "asked again although the sync progresses")
	r.releaseTransfers("q", []string{"B"})
	r.aeMu.Lock()
	_, waiting := r.ae.pending["B"]
	r.aeMu.Unlock()
	assert.False(t, waiting, "the released application is no longer waited for")
}
