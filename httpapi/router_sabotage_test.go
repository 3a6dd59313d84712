//go:build sabotage

package httpapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With fast-route-delta-as-app on, TestRouterMatchesMux's check fails: the
// fast path sends GET …/apps/delta to the one-application read, where the
// mux serves the delta (run with -tags sabotage).
func TestSabotageFastRouteDeltaAsApp(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.FastRouteDeltaAsApp))
	defer func() { require.NoError(t, sabotage.Set()) }()
	mismatches, _ := routeMismatches(t)
	assert.Contains(t, mismatches, `GET /eureka/apps/delta: fast path and mux ("GET /eureka/apps/delta") pick different handlers`)
}
