//go:build sabotage

package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With copy-aged-by-receiver-clock on, TestCopyAgedOnTheSendersClock
// fails: the node whose clock runs ahead reads the live copy as older than
// the TTL with its lease run out, refuses it and evicts it everywhere.
func TestSabotageCopyAgedByReceiverClock(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.CopyAgedByReceiverClock))
	defer func() { require.NoError(t, sabotage.Set()) }()

	a, _, res := skewedCopyScenario(t)
	assert.Equal(t, ApplyRefused, res, "the live copy is refused")
	assert.NotContains(t, a.leases, "x-1")
}
