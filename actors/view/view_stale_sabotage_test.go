//go:build sabotage

package view

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With view-stale-app-installed on, the check of
// TestStalePreparedChangeIsRecomputed fails: the change prepared against the
// stale application is installed as it was, and a3 is lost (run with -tags
// sabotage).
func TestSabotageViewStaleAppInstalled(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ViewStaleAppInstalled))
	defer func() { require.NoError(t, sabotage.Set()) }()

	s := staleScenario(t)
	assert.Len(t, s.App("A").Instances(), 2, "a3 was lost")
	assert.Nil(t, s.Instance("A", "a3"))
}

// With view-stale-app-installed on, the check of
// TestPruneKeepsWritesMadeWhilePruning fails: pruning installs the groups
// it computed from the delta before the writes, and loses them.
func TestSabotageViewStaleAppInstalledPrune(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ViewStaleAppInstalled))
	defer func() { require.NoError(t, sabotage.Set()) }()

	s := pruneRaceScenario(t, 3)
	assert.Zero(t, s.DeltaLen(), "new1 and new2 were lost from the delta")
}
