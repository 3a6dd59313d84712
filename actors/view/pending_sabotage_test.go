//go:build sabotage

package view

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With view-delta-pending-unread on, the check of
// TestPendingDeltaMatchesAModel fails: a read of the delta misses the
// writes still pending (run with -tags sabotage).
func TestSabotageViewDeltaPendingUnread(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ViewDeltaPendingUnread))
	defer func() { require.NoError(t, sabotage.Set()) }()

	assert.NotEmpty(t, pendingModel(t, 1, false, 0), "the delta differs from the model")
}
