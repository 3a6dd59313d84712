//go:build sabotage

package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With stream-backoff-survives-rejoin on, the first send after the heal is
// refused by the backoff built up while the peer was cut off.
func TestSabotageStreamBackoffSurvivesRejoin(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.StreamBackoffSurvivesRejoin))
	defer func() { require.NoError(t, sabotage.Set()) }()
	require.ErrorIs(t, backedOffAcrossHeal(t), errStreamBackoff)
}
