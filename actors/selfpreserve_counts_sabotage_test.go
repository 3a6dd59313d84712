//go:build sabotage

package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With sp-counts-added-first on, racing pairs leave Expected above 0 (run
// with -tags sabotage; the race is tried a few times).
func TestSabotageSPCountsAddedFirst(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SPCountsAddedFirst))
	defer func() { require.NoError(t, sabotage.Set()) }()
	caught := false
	for range 20 {
		if expectedAfterRacingPairs() != 0 {
			caught = true
			break
		}
	}
	assert.True(t, caught, "Expected stayed right although deletions were taken after additions")
}
