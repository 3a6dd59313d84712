//go:build sabotage

package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With silent-drained-by-cancels on, the cancels of live clients use up
// the silent count; the expectation does not fall with them, and the
// silent leases' evictions then lower it (the checks of
// TestSilentDrainedByEvictionsOnly fail).
func TestSabotageSilentDrainedByCancels(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SilentDrainedByCancels))
	defer func() { require.NoError(t, sabotage.Set()) }()

	sp := silentAfterRelease(t)
	sp.onCounts(0, 3, 0)
	assert.Equal(t, 20, sp.expected, "the cancels drained silent instead")
	assert.Equal(t, 2, sp.silent)
}
