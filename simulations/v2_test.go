package simulations

import (
	"context"
	"strings"
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

// TestCheckRestartConvergence builds the probes of a rolling restart: one
// where the cluster agrees 1 s after the restart passes; one where the
// restarted node stays empty (its initial sync never came) fails, as does a
// run without any restart.
func TestCheckRestartConvergence(t *testing.T) {
	start := time.Now()
	nodes := []string{"n0", "n1", "n2"}
	th := DefaultThresholds(DefaultTimers())
	probe := func(at time.Duration, fps ...string) Probe {
		p := Probe{At: start.Add(at), Up: nodes, Ready: map[string]bool{}, Fingerprint: map[string]string{}, Live: map[string][]string{}}
		for i, n := range nodes {
			p.Ready[n] = true
			p.Fingerprint[n] = fps[i]
			p.Live[n] = nodes
		}
		return p
	}
	obs := func(restartedFP string) *Observations {
		o := &Observations{Start: start, End: start.Add(30 * time.Second), Nodes: nodes,
			Timeline: []Event{{At: 2 * time.Second, Kind: "restart", Detail: "n2 restarted"}}}
		for at := 2 * time.Second; at < 30*time.Second; at += time.Second {
			fp := restartedFP
			if at >= 3*time.Second && restartedFP == "good" {
				fp = "A"
			}
			o.Probes = append(o.Probes, probe(at, "A", "A", fp))
		}
		return o
	}
	v := CheckRestartConvergence(obs("good"), th)
	assert.True(t, v.Pass, v.Measured)
	assert.InDelta(t, 1.0, v.Key.Value, 0.01)

	v = CheckRestartConvergence(obs("empty"), th)
	assert.False(t, v.Pass, v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "never agreed again")

	o := obs("good")
	o.Timeline = nil
	assert.False(t, CheckRestartConvergence(o, th).Pass)
}

// TestSkewClock checks the node clock the clock-skew scenario drives.
func TestSkewClock(t *testing.T) {
	var c SkewClock
	assert.WithinDuration(t, time.Now(), c.Now(), time.Second)
	c.Set(3 * time.Minute)
	assert.WithinDuration(t, time.Now().Add(3*time.Minute), c.Now(), time.Second)
	assert.Equal(t, 3*time.Minute, c.Offset())
	c.Set(-3 * time.Minute)
	assert.WithinDuration(t, time.Now().Add(-3*time.Minute), c.Now(), time.Second)
}
