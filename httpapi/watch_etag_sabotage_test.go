//go:build sabotage

package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With push-etag-node-local on, the ETag mixes in the node's snapshot
// version, and TestWatchETagSameOnTwoNodes's check fails: two nodes with
// the same content but different histories give different tags (run with
// -tags sabotage).
func TestSabotagePushETagNodeLocal(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.PushETagNodeLocal))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a, b := twoNodeETags(t)
	assert.NotEqual(t, a, b)
}
