//go:build sabotage

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With shutdown-leaves-stream-handover on, the shutdown test sees Shutdown
// hang (run with -tags sabotage).
func TestSabotageShutdownLeavesStreamHandOver(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ShutdownLeavesStreamHandOver))
	defer func() { require.NoError(t, sabotage.Set()) }()
	assert.False(t, shutdownWithAStreamInHandOver(t, 3*time.Second),
		"Shutdown returned although nobody read the listener's hand-over")
}
