//go:build sabotage

package node_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With stream-uncompressed the follower asks for the plain stream, as the
// previous release did: a change costs its whole delta event on the WAN,
// and the bound of TestFederationStreamCompressedOnTheWAN fails; the
// metric still counts what came (run with -tags sabotage).
func TestSabotageStreamUncompressed(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.StreamUncompressed))
	defer func() { require.NoError(t, sabotage.Set()) }()
	per, metric := streamWANBytes(t, 10)
	t.Logf("%.0f bytes on the WAN per change, %.0f counted by the follower", per, metric)
	assert.Equal(t, per, metric)
	assert.GreaterOrEqual(t, per, float64(compressedChangeBound), "the plain stream breaks the compressed bound")
}
