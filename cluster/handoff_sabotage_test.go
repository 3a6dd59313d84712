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
