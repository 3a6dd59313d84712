//go:build sabotage

package node_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With repair-ignores-removed-apps the follower keeps the application a
// repair names as removed (its instances were all cancelled): its
// apps__hashcode then differs from the remote's, the repair is counted a
// mismatch, and one snapshot (no second repair) makes the copy right, so
// TestFederationRepairByDigest's one clean repair fails (run with -tags
// sabotage).
func TestSabotageRepairIgnoresRemovedApps(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RepairIgnoresRemovedApps))
	defer func() { require.NoError(t, sabotage.Set()) }()
	r := repairRun(t)
	assert.Equal(t, 1.0, r.pulls["stream-repair/mismatch"], "the check sees the cancelled application kept")
	assert.Zero(t, r.pulls["stream-repair/ok"])
	assert.Equal(t, 2.0, r.pulls["stream-snapshot/ok"], "then one snapshot: no loop")
}

// With repair-by-snapshot the follower sends no digest and polls while
// the remote does not answer, as before: the break costs the whole
// registry, and TestFederationRepairByDigest's bound fails.
func TestSabotageRepairBySnapshot(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RepairBySnapshot))
	defer func() { require.NoError(t, sabotage.Set()) }()
	r := repairRun(t)
	assert.Zero(t, r.pulls["stream-repair/ok"])
	assert.GreaterOrEqual(t, r.repairBytes, r.snapshotBytes/repairShare, "the whole registry again")
}
