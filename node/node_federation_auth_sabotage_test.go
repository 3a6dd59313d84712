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

// With relay-unsigned on, the nodes send their relay requests without a
// signature: under basic auth every relay answers 401, every node follows
// the WAN, which TestFederationRelaysWithAuth's count catches (run with
// -tags sabotage).
func TestSabotageRelayUnsigned(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RelayUnsigned))
	defer func() { require.NoError(t, sabotage.Set()) }()
	wan, tc := authLinkedCluster(t, 1, []byte("0123456789abcdef"))
	require.Eventually(t, func() bool {
		v := vias(tc, nil)
		return v[federation.ViaWAN] == 1 && v[federation.ViaFallback] == 2 && wan.streams.Load() == 3
	}, 10*time.Second, 10*time.Millisecond, "every node on the WAN: %v", vias(tc, nil))
	for _, nd := range tc.nodes {
		if st := nd.Federation().Status()[0]; st.Via == federation.ViaFallback {
			assert.Contains(t, st.ViaReason, "401", "the reason names the refusal")
			assert.Contains(t, st.ViaReason, "relay route needs a node's signature")
		}
	}
}
