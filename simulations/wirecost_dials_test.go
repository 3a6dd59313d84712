package simulations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckWireCostCatchesDialsGrowth feeds CheckWireCost the dials of a
// node that opens a connection per message (growing with the number of
// peers it forwards to) and of one that keeps a session per peer: the first
// fails, the second passes.
func TestCheckWireCostCatchesDialsGrowth(t *testing.T) {
	w := func(nodes int, dials uint64) WireCost {
		return WireCost{Nodes: nodes, Window: 10 * time.Second, Renewals: uint64(20 * nodes),
			RenewalMessages: uint64(18 * nodes), Dials: dials}
	}
	// 5 nodes dialling 4 peers a second each, then 49 at 50 nodes.
	perMessage := []WireCost{w(5, 5*4*10), w(50, 50*49*10)}
	err := CheckWireCost(perMessage)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dials per node per second")
	assert.InDelta(t, 49.0, perMessage[1].DialsPerNodeSecond(), 1e-9)
	// Sessions kept: a push/pull now and then, the same at every size.
	kept := []WireCost{w(5, 5*10/2), w(50, 50*10/2)}
	assert.NoError(t, CheckWireCost(kept))
}
