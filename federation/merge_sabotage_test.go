//go:build sabotage

package federation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With region-echo-overwrites-local on, TestLocalWinsOverRemote's check
// fails: a remote copy replaces the local instance with its id (run with
// -tags sabotage).
func TestSabotageRegionEchoOverwritesLocal(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RegionEchoOverwritesLocal))
	defer func() { require.NoError(t, sabotage.Set()) }()
	f, v := mergeFixture(t)
	assert.Equal(t, "the remote copy of BOTH/same-id replaced the local one", localWins(f, v.Snapshot()))
}
