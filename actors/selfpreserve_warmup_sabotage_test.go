//go:build sabotage

package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With sp-no-warm-up on, a node of a cluster judges its first close after
// a start: 0 renewals across 1 member engage self-preservation at once (the
// check of TestSelfPreservationWarmsUpOneWindow fails).
func TestSabotageSPNoWarmUp(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SPNoWarmUp))
	defer func() { require.NoError(t, sabotage.Set()) }()

	t0 := time.Unix(1_700_000_000, 0)
	sp := warmingSP(t0)
	sp.closeWindow(t0.Add(15*time.Second), 0, 0, 0)
	assert.True(t, sp.engaged(), "engaged on the first, partial close")
}
