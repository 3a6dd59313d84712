//go:build sabotage

package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/internal/sabotage"
)

// With relayed-copy-refused on, a node that follows a region through a
// relay refuses the relayed instances as echoes (they carry the region's
// marker): the node holding the WAN link serves the region, the relayed
// ones serve none of it, which TestFederationLinksAndRelays's reads catch
// (run with -tags sabotage).
func TestSabotageRelayedCopyRefused(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RelayedCopyRefused))
	defer func() { require.NoError(t, sabotage.Set()) }()
	dc1, _, tc := linkedCluster(t, 1)
	require.Eventually(t, func() bool {
		v := vias(tc, nil)
		return v[federation.ViaWAN] == 1 && v[federation.ViaRelay] == 2
	}, 10*time.Second, 10*time.Millisecond)
	// (A relayed node may still hold what it loaded over the WAN while the
	// cluster formed: a change shows the refusal.)
	fedRegister(t, dc1.URL(), "ORDERS", "o-2", "UP", nil)
	require.Eventually(t, func() bool {
		for _, nd := range tc.nodes {
			if nd.Federation().Status()[0].Via == federation.ViaWAN {
				return strings.Contains(regionIDs(t, nd), "ORDERS/o-2/UP/dc1")
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "the link's node serves the change")
	time.Sleep(300 * time.Millisecond)
	for _, nd := range tc.nodes {
		if nd.Federation().Status()[0].Via == federation.ViaRelay {
			assert.NotContains(t, regionIDs(t, nd), "ORDERS/o-2", "a relayed node refuses the relayed change")
		}
	}
}
