//go:build sabotage

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// With silent-member-holds-forever on, the silent member of
// TestSilentMemberHoldIsBounded holds the owner's eviction as long as it
// is silent: the dead client stays well past its bound plus the
// silent-member bound.
func TestSabotageSilentMemberHoldsForever(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SilentMemberHoldsForever))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a, app, dead := silentMemberCluster(t)
	bound := holdsLease + a.repl.silentBound()
	assert.Never(t, func() bool { return !a.has(app, dead) }, 4*bound, tick, "the dead client is never evicted")
}

// With left-report-dropped on, a graceful leave drops the member's report
// at once, as a failure does.
func TestSabotageLeftReportDropped(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.LeftReportDropped))
	defer func() { require.NoError(t, sabotage.Set()) }()
	bus := newFakeBus()
	a := bus.start(t, "a", false)
	bus.start(t, "b", false)
	require.Eventually(t, func() bool { return len(a.repl.MemberLoads()) == 1 }, waitFor, tick, "b reports")
	bus.mu.Lock()
	bus.left = map[string]bool{"b": true}
	bus.mu.Unlock()
	bus.kill("b")
	assert.NotContains(t, a.repl.MemberLoads(), "b")
}

// With failed-report-dropped on, a member declared dead stops counting at
// once, however fresh its report.
func TestSabotageFailedReportDropped(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.FailedReportDropped))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a := failedReportCluster(t)
	sum, n := a.repl.PeerRenewals(time.Second)
	assert.Zero(t, sum, "b's report no longer counts")
	assert.Zero(t, n)
}

// With stranger-report-ignored on, the check of TestStrangerReportCounts
// fails: the declared-dead member's new report counts for nothing.
func TestSabotageStrangerReportIgnored(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.StrangerReportIgnored))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a := failedReportCluster(t)
	a.repl.onLoad(&wire.Load{Node: "b", WindowMillis: 1000, Renewals: 12})
	sum, _ := a.repl.PeerRenewals(time.Second)
	assert.Zero(t, sum, "b's report counted although strangers' are ignored")
}
