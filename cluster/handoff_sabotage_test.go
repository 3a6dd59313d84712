//go:build sabotage

package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With no-ownership-handoff on, the check of
// TestLeavingOwnerHandsLeaseAgesOver fails: b drops the ages a hands over
// and keeps only the registration it saw (run with -tags sabotage).
func TestSabotageNoOwnershipHandoffInCluster(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.NoOwnershipHandoff))
	defer func() { require.NoError(t, sabotage.Set()) }()

	a, b, _, app, renew := handoffCluster(t)
	registered := time.Now()
	for range 12 {
		time.Sleep(fwdRenew)
		renew()
	}
	require.Eventually(t, func() bool { return age(t, a, app) < fwdLease }, waitFor, tick)
	time.Sleep(10 * testReplicatorConfig().RenewFlushInterval)
	a.repl.HandOff(context.Background())
	assert.Never(t, func() bool { return age(t, b, app) < time.Since(registered)-2*fwdLease }, 2*fwdLease, tick,
		"b took a handed renewal although handoffs are dropped")
}

// With renewals-to-gone-owner-dropped on, the check of
// TestHeldRenewalsRerouteWhenTheOwnerLeaves fails: the renewal c held for a
// is dropped when a leaves, and b never gets it (run with -tags sabotage).
func TestSabotageRenewalsToGoneOwnerDropped(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RenewalsToGoneOwnerDropped))
	defer func() { require.NoError(t, sabotage.Set()) }()

	hc := startHandoffCluster(t)
	hc.n.BlockOneWay([]string{"c"}, []string{"a"})
	hc.n.BlockOneWay([]string{"a"}, []string{"c"}) // nor may a pull them from c
	start := time.Now()
	hc.renew()
	require.Eventually(t, func() bool {
		for _, q := range hc.c.repl.PeerQueues() {
			if q.Peer == "a" && q.Renewals > 0 {
				return true
			}
		}
		return false
	}, waitFor, tick)
	require.NoError(t, hc.ma.Leave(time.Second))
	assert.Never(t, func() bool { return hc.b.lastRenewal(t, hc.app) >= start.UnixMilli() }, 2*fwdLease, tick,
		"b got the renewal although renewals for a gone owner are dropped")
}
