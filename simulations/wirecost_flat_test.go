package simulations

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWireCostFlatFrom5To10 counts, on real 5- and 10-node clusters, the
// replication messages per client renewal and per registration: at most one
// per renewal (plus the window's edge) and per registration and peer at both
// sizes, and no more at
// 10 nodes than at 5 beyond WireCostSlack. Counts, not times.
func TestWireCostFlatFrom5To10(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 10-node cluster")
	}
	var costs []WireCost
	for _, n := range []int{5, 10} {
		cfg := DefaultConfig()
		cfg.Nodes = n
		w, err := MeasureWireCost(context.Background(), cfg, 2, 10, 4*time.Second)
		require.NoError(t, err)
		t.Logf("%d nodes: %d renewals, %d renewal messages (%.2f each); %d registrations, %d record messages (%.2f per peer)",
			n, w.Renewals, w.RenewalMessages, w.PerRenewal(), w.Registrations, w.RecordMessages, w.PerRegistrationPerPeer())
		require.Positive(t, w.Renewals)
		// One forwarding flush per node may carry renewals accepted just
		// before the window (see CheckWireCost).
		assert.LessOrEqual(t, w.PerRenewal(), 1+float64(n)/float64(w.Renewals))
		assert.LessOrEqual(t, w.PerRegistrationPerPeer(), 1.0)
		costs = append(costs, w)
	}
	assert.NoError(t, CheckWireCost(costs))
}

// TestCheckWireCostCatchesGrowth feeds CheckWireCost the counts of a
// replication that forwards every renewal to every member (messages per
// renewal growing with the cluster) and of one that sends a record twice:
// both fail; the flat counts pass.
func TestCheckWireCostCatchesGrowth(t *testing.T) {
	flat := []WireCost{
		{Nodes: 5, Renewals: 100, RenewalMessages: 80, Registrations: 10, RecordMessages: 40},
		{Nodes: 10, Renewals: 200, RenewalMessages: 180, Registrations: 10, RecordMessages: 90},
	}
	require.NoError(t, CheckWireCost(flat))
	toAll := []WireCost{
		{Nodes: 5, Renewals: 100, RenewalMessages: 400},
		{Nodes: 10, Renewals: 200, RenewalMessages: 1800},
	}
	err := CheckWireCost(toAll)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 1")
	grows := []WireCost{
		{Nodes: 5, Renewals: 100, RenewalMessages: 50},
		{Nodes: 10, Renewals: 200, RenewalMessages: 190},
	}
	err = CheckWireCost(grows)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "grows with the cluster")
	twice := []WireCost{{Nodes: 5, Renewals: 100, RenewalMessages: 80, Registrations: 10, RecordMessages: 80}}
	assert.Error(t, CheckWireCost(twice))
}
