//go:build sabotage

package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// pushETagNodeLocal is httpapi's etagNodeLocal switch.
const pushETagNodeLocal = sabotage.Switch("push-etag-node-local")

// With push-etag-node-local on, the ETag mixes in the node's snapshot
// version, and TestWatchETagSameOnTwoNodes's check fails: two nodes with
// the same content but different histories give different tags (run with
// -tags sabotage). The switch must be listed in internal/sabotage's
// UnitOnly; until it is, Set refuses it and the test says so.
func TestSabotagePushETagNodeLocal(t *testing.T) {
	if err := sabotage.Set(pushETagNodeLocal); err != nil {
		t.Skipf("switch not registered in internal/sabotage (add it to UnitOnly): %v", err)
	}
	defer func() { require.NoError(t, sabotage.Set()) }()
	a, b := twoNodeETags(t)
	assert.NotEqual(t, a, b)
}
