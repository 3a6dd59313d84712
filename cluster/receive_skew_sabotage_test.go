//go:build sabotage

package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With copy-aged-by-receiver-clock on, b reads a's fresh registration on
// its own clock, 20 minutes ahead, refuses it as stale and evicts it
// everywhere; a, where the client renewed, overrules the eviction with a
// new version, which is what b ends up holding:
// TestReplicatorCopiesAgedOnTheSendersClock fails.
func TestSabotageCopyAgedByReceiverClockRefusesLiveCopies(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.CopyAgedByReceiverClock))
	defer func() { require.NoError(t, sabotage.Set()) }()

	a, b := skewedPair(t)
	registered, onB := registerAcrossTheSkew(t, a, b)
	require.NotEqual(t, registered, onB, "b refused the registration; it holds a's overruling version")
}
