//go:build sabotage

package federation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With delta-forgotten-by-full-fetch on, the poll of
// TestPollPublishesMismatchedDelta leaves the copy holding a2 while the
// ?regions= read serves the region as it was and a relay's followers are
// not sent a2 (run with -tags sabotage).
func TestSabotageDeltaForgottenByFullFetch(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.DeltaForgottenByFullFetch))
	defer func() { require.NoError(t, sabotage.Set()) }()

	f, local, relayed := pollMismatchedDelta(t)
	assert.Equal(t, 2, f.Status()[0].Instances, "the copy holds a2")
	assert.Equal(t, []string{"a1"}, servedIDs(t, f, local, false), "the read is the cached document of before")
	assert.NotContains(t, relayed, "delta a2", "a relay's follower is sent nothing")
}
