//go:build sabotage

package node_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/internal/sabotage"
)

// With region-pull-gets-remote on, a region with transparent fallback
// answers another region's pull with its remote regions too: the check
// TestFederationRingNoEchoes makes of every node fails (run with -tags
// sabotage).
func TestSabotageRegionPullGetsRemote(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RegionPullGetsRemote))
	defer func() { require.NoError(t, sabotage.Set()) }()
	dc1 := startFed(t, fedConfig(t, "dc1"))
	fedRegister(t, dc1.URL(), "SVC", "svc-dc1", "UP", nil)
	cfg := fedConfig(t, "dc2", federation.Remote{Name: "dc1", URL: dc1.URL() + "/"})
	cfg.Federation.TransparentFallback = true
	dc2 := startFed(t, cfg)
	fedRegister(t, dc2.URL(), "SVC", "svc-dc2", "UP", nil)
	require.Eventually(t, dc2.Federation().Ready, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, "a pull got 2 instances, 1 of them remote", pullLocalOnly(t, dc2.URL()))
}
