//go:build sabotage

package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With skewed-node-writes on, TestClockBehindRefusesWrites fails: the node
// whose clock is behind takes the cancel and stamps it in its peers' past.
func TestSabotageSkewedNodeWrites(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SkewedNodeWrites))
	defer func() { require.NoError(t, sabotage.Set()) }()
	_, cancel, _, kept := clockBehindCodes(t)
	assert.Equal(t, http.StatusOK, cancel.code)
	assert.False(t, kept)
}
