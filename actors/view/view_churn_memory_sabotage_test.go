//go:build sabotage

package view_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With view-delta-holds-states on, the bound of
// TestChurnRetainsOneStatePerInstance fails: every window entry keeps its
// change's instance state, so a churned pair retains its registration (and
// its encodings) beside its cancelled state (run with -tags sabotage).
func TestSabotageViewDeltaHoldsStates(t *testing.T) {
	sabotagedChurnExceedsBound(t, sabotage.ViewDeltaHoldsStates)
}

// sabotagedChurnExceedsBound runs TestChurnRetainsOneStatePerInstance's
// churn with switch sw on and sees its bound fail.
func sabotagedChurnExceedsBound(t *testing.T, sw sabotage.Switch) {
	require.NoError(t, sabotage.Set(sw))
	defer func() { require.NoError(t, sabotage.Set()) }()

	perPair, _, _, _ := churnRetainedPerPair(t, 500, 6000)
	t.Logf("%s: retained %.0f B per churned pair (bound %d)", sw, perPair, churnRetainedBound)
	assert.Greater(t, perPair, float64(churnRetainedBound), "the check sees %s", sw)
}

// With view-delta-unpacked on, the bound of
// TestChurnRetainsOneStatePerInstance fails: a cancelled state in the delta
// is a whole Instance, with its own strings and maps, instead of packed.
func TestSabotageViewDeltaUnpacked(t *testing.T) {
	sabotagedChurnExceedsBound(t, sabotage.ViewDeltaUnpacked)
}

// With view-delta-unbounded on, pruning ignores DeltaMaxBytes and the
// check of TestDeltaStaysWithinItsMemoryBound sees the delta hold more than
// its bound.
func TestSabotageViewDeltaUnbounded(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ViewDeltaUnbounded))
	defer func() { require.NoError(t, sabotage.Set()) }()

	_, _, within := boundedChurn(t, 4<<20, 30_000)
	assert.False(t, within, "the check sees view-delta-unbounded")
}
