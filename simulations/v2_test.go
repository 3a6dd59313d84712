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

// TestOneWayBlockIsRecognised: BUG-7's matcher takes a no-missing-renewer
// failure whose misses are all on the side that could still send, and
// nothing else.
func TestOneWayBlockIsRecognised(t *testing.T) {
	o := &Observations{Timeline: []Event{{Kind: "block-one-way", Detail: "{n2,n4} → {n0,n1,n3} blocked; {n0,n1,n3} → {n2,n4} still flows"}}}
	r := &Result{Scenario: "asymmetric-partition", Observations: o}
	v := Verdict{Invariant: InvNoMissingRenewer, Details: []string{
		"payments-005 missing on n1 from +8.7s for 4.11s (until it showed up again)",
		"payments-005 missing on n0 from +8.8s for 3.61s (until it showed up again)",
	}}
	assert.True(t, bug7.Explains(r, v))
	assert.Nil(t, ExplainFailure(r, v), "BUG-7 is fixed: no longer a known bug")
	v.Details = append(v.Details, "cart-001 missing on n2 from +3.0s for 4.00s (until it showed up again)")
	assert.False(t, bug7.Explains(r, v), "a miss on the blocked side is another matter")
	o.Timeline = nil
	v.Details = v.Details[:1]
	assert.False(t, bug7.Explains(r, v), "no block, no BUG-7")
}

// TestOneWayBlockRenewalsRecognised: what remained of BUG-7 (bug7Renewals,
// fixed in 5d76e62) takes a renewer-kept failure overruled next to the
// blocked side, and no missing registration.
func TestOneWayBlockRenewalsRecognised(t *testing.T) {
	o := &Observations{Timeline: []Event{{Kind: "block-one-way", Detail: "{n2,n4} → {n0,n1,n3} blocked; {n0,n1,n3} → {n2,n4} still flows"}}}
	r := &Result{Scenario: "asymmetric-partition", Observations: o}
	v := Verdict{Invariant: InvRenewerKept, Details: []string{
		"orders-002 re-published by n4 at +10.0s while its client was renewing (location n4, registered at +0.0s); first seen on n0 at +10.1s",
	}}
	assert.True(t, bug7Renewals.Explains(r, v))
	assert.Nil(t, ExplainFailure(r, v), "fixed: no longer a known bug")
	v.Details[0] = strings.Replace(v.Details[0], "location n4", "location n1", 1)
	assert.False(t, bug7Renewals.Explains(r, v), "a client next to the side that can send is another matter")
}

// TestRejoinAfterLeaveIsRecognised: BUG-9's matcher takes a late agreement
// after a restart where only the restarted node was missing from members'
// views (and it was behind), and nothing else.
func TestRejoinAfterLeaveIsRecognised(t *testing.T) {
	r := &Result{Scenario: "rolling-restart"}
	v := Verdict{Invariant: InvRestartConvergence, Details: []string{
		"restart at +2.7s (n1 restarted (fresh process, same address)): agreed only 12.42s later; at +15.0s: n0 does not see n1; n2 does not see n1",
		"restart at +16.7s (n2 restarted (fresh process, same address)): never agreed again; at +40.0s: n2 not ready; n2's registry differs; n0 does not see n2",
	}}
	assert.True(t, bug9.Explains(r, v))
	assert.Nil(t, ExplainFailure(r, v), "BUG-9 is fixed: no longer a known bug")
	v.Details = append(v.Details, "restart at +30.0s (n3 restarted (fresh process, same address)): agreed only 11.00s later; at +40.0s: n4's registry differs")
	assert.False(t, bug9.Explains(r, v), "a registry that differs elsewhere is another matter")
	v.Details = []string{"restart at +2.7s (n1 restarted (fresh process, same address)): agreed only 12.42s later; at +15.0s: n0 does not see n1,n2"}
	assert.False(t, bug9.Explains(r, v))
}

// TestClockJumpIsRecognised: BUG-10's matcher takes a re-publication by
// the skewed node within a lease of a jump of its clock, and nothing else.
func TestClockJumpIsRecognised(t *testing.T) {
	o := &Observations{Timers: DefaultTimers(), Timeline: []Event{
		{At: 3 * time.Second, Kind: "clock-skew", Detail: "n0's wall clock set 3m0s off"},
		{At: 7 * time.Second, Kind: "clock-skew", Detail: "n0's wall clock set -3m0s off"},
	}}
	r := &Result{Scenario: "clock-skew", Observations: o}
	v := Verdict{Invariant: InvNoResurrection, Details: []string{
		"catalog-004 re-published by n0 with a version stamped at +9.0s, 2.78s after its client stopped (cancelled=false), with no registration since",
	}}
	assert.True(t, bug10.Explains(r, v))
	assert.Nil(t, ExplainFailure(r, v), "BUG-10 is fixed: no longer a known bug")
	v.Details[0] = strings.Replace(v.Details[0], "by n0", "by n1", 1)
	assert.False(t, bug10.Explains(r, v), "another node's re-publication is another matter")
	v.Details[0] = "catalog-004 re-published by n0 with a version stamped at +19.0s, 2.78s after its client stopped"
	assert.False(t, bug10.Explains(r, v), "long after the jumps")
}

// TestClockJumpReturnIsRecognised: the returns that a skewed node's
// re-publication causes on other nodes are BUG-10's too.
func TestClockJumpReturnIsRecognised(t *testing.T) {
	o := &Observations{Timers: DefaultTimers(), Timeline: []Event{
		{At: 1300 * time.Millisecond, Kind: "clock-skew", Detail: "n4's wall clock set 3m0s off"},
		{At: 9300 * time.Millisecond, Kind: "clock-skew", Detail: "n4's wall clock set 0s off"},
	}}
	r := &Result{Scenario: "clock-skew", Observations: o}
	v := Verdict{Invariant: InvNoResurrection, Details: []string{
		"catalog-005 re-published by n4 with a version stamped at +9.8s, 2.98s after its client stopped (cancelled=false), with no registration since",
		"catalog-005 back on n2 at +9.8s (in a probe) after it was gone at +9.7s (client stopped at +6.8s, cancelled=false) with the version n4 made at +185.1s",
	}}
	assert.True(t, bug10.Explains(r, v))
	v.Details[1] = strings.Replace(v.Details[1], "version n4", "version n1", 1)
	assert.False(t, bug10.Explains(r, v))
}
