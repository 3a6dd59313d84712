package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/wire"
)

// disagreeCluster starts a and b on the bus and has "s", a node that is
// not alive in either view, report to a every LoadInterval with the view
// sView (nil: none, as the previous release) for as long as the test runs:
// the views disagree on a for good. It registers, on b, 4
// clients of mine (an application a owns with s counted or not) and 4 of
// theirs (one a owns by its view but s owns with s counted), keeps 3 of
// each renewing and lets the first of each die.
func disagreeCluster(t *testing.T, sView []string) (a *testNode, mine, deadMine, theirs, deadTheirs string) {
	t.Helper()
	bus := newFakeBus()
	a = bus.start(t, "a", false)
	b := bus.start(t, "b", false)
	for i := 0; mine == "" || theirs == ""; i++ {
		app := fmt.Sprintf("APP%d", i)
		if rendezvous([]string{"a", "b"}, app) != "a" {
			continue
		}
		switch rendezvous([]string{"a", "b", "s"}, app) {
		case "a":
			if mine == "" {
				mine = app
			}
		case "s":
			if theirs == "" {
				theirs = app
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	var renewing []actors.RenewRequest
	for _, app := range []string{mine, theirs} {
		for i := range 4 {
			in := inst(app, fmt.Sprintf("%s-%d", app, i))
			in.LeaseInfo.DurationSecs = int(holdsLease / time.Second)
			require.NoError(t, b.reg.Register(ctx, in, false))
			if i > 0 {
				renewing = append(renewing, actors.RenewRequest{App: app, ID: in.ID()})
			}
		}
	}
	deadMine, deadTheirs = mine+"-0", theirs+"-0"
	go func() {
		defer close(done)
		renew := time.NewTicker(holdsLease / 5)
		defer renew.Stop()
		report := time.NewTicker(a.repl.cfg.LoadInterval)
		defer report.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-renew.C:
				for _, r := range renewing {
					_, _ = b.reg.Renew(ctx, r)
				}
			case <-report.C:
				a.repl.onLoad(&wire.Load{Node: "s", WindowMillis: 1000, Renewals: 1, Alive: sView})
			}
		}
	}()
	require.Eventually(t, func() bool { return a.has(mine, deadMine) && a.has(theirs, deadTheirs) }, waitFor, tick,
		"a holds every client")
	return a, mine, deadMine, theirs, deadTheirs
}

// While a node that is not alive in this node's view reports, the views
// disagree and eviction is held, with its bound shown; past the bound this
// node evicts what its view and every reported view say it owns (the dead
// client of mine goes), and leaves to the stranger what the stranger's view
// gives it (the dead client of theirs stays here); renewing clients stay.
// With views-disagree-holds-forever on, nothing is evicted (see the
// sabotage test).
func TestViewsDisagreeHoldIsBounded(t *testing.T) {
	a, mine, deadMine, theirs, deadTheirs := disagreeCluster(t, []string{"a", "b", "s"})
	bound := a.repl.silentBound()
	h := awaitViewsDisagreeHold(t, a, "the views-disagree hold shows")
	assert.Equal(t, []string{"s"}, h.Members)
	assert.False(t, h.Until.IsZero(), "the hold says when it ends")
	assert.LessOrEqual(t, h.Until.Sub(h.Since), bound, "it ends within the bound")
	assert.Contains(t, h.Detail, "held at most")

	require.Eventually(t, func() bool { return !a.has(mine, deadMine) }, 4*(holdsLease+bound), tick,
		"the dead client of an application this node owns with the stranger counted is evicted")
	for _, x := range a.repl.EvictionHolds() {
		assert.NotEqual(t, HoldViewsDisagree, x.Reason, "no views-disagree hold once the bound passed")
	}
	_, owned := a.repl.OwnedSince(theirs)
	assert.False(t, owned, "the stranger's application is left to it")
	assert.True(t, a.has(theirs, deadTheirs), "nor is its dead client evicted here")
	for _, app := range []string{mine, theirs} {
		for i := 1; i < 4; i++ {
			assert.True(t, a.has(app, fmt.Sprintf("%s-%d", app, i)), "renewing client %s-%d is kept", app, i)
		}
	}
}

// When the stranger stops reporting, the views agree again and this
// node's own view decides alone: it owns the stranger's application again.
func TestViewsAgreeAgainWhenTheStrangerStops(t *testing.T) {
	bus := newFakeBus()
	a := bus.start(t, "a", false)
	bus.start(t, "b", false)
	var theirs string
	for i := 0; theirs == ""; i++ {
		app := fmt.Sprintf("APP%d", i)
		if rendezvous([]string{"a", "b"}, app) == "a" && rendezvous([]string{"a", "b", "s"}, app) == "s" {
			theirs = app
		}
	}
	bound := a.repl.silentBound()
	for end := time.Now().Add(bound + 4*a.repl.cfg.LoadInterval); time.Now().Before(end); time.Sleep(a.repl.cfg.LoadInterval) {
		a.repl.onLoad(&wire.Load{Node: "s", WindowMillis: 1000, Renewals: 1, Alive: []string{"a", "b", "s"}})
	}
	require.Eventually(t, func() bool { _, ok := a.repl.OwnedSince(theirs); return !ok }, waitFor, tick,
		"past the bound the stranger owns it")
	require.Eventually(t, func() bool { _, ok := a.repl.OwnedSince(theirs); return ok }, waitFor, tick,
		"once the stranger's report is stale, this node owns it again")
	require.Eventually(t, func() bool { return a.repl.ring.Load() == nil }, waitFor, tick,
		"and once the disagreement is over, its own view decides alone")
}

// This node is the one cut off: the stranger reports to it but does not
// count it alive, so the stranger's clients' renewals go to the owners of
// the stranger's view and never here. Past the bound this node owns nothing
// by that view, and the client of mine that this node hears nothing from
// (it renews through the stranger) is kept; so is every renewing one. With
// views-disagree-union-ring on, it is evicted (see the sabotage test).
func TestViewsDisagreeCutOffNodeEvictsNothingTheStrangerRenews(t *testing.T) {
	a, mine, viaStranger, theirs, _ := disagreeCluster(t, []string{"b", "s"})
	bound := a.repl.silentBound()
	require.Eventually(t, func() bool { return a.repl.ring.Load() != nil }, 4*bound, tick, "the bound passes")
	_, owned := a.repl.OwnedSince(mine)
	assert.False(t, owned, "the stranger's view gives this node nothing")
	assert.Never(t, func() bool { return !a.has(mine, viaStranger) }, 2*(holdsLease+bound), tick,
		"the client renewing through the stranger is kept")
	for _, app := range []string{mine, theirs} {
		for i := 1; i < 4; i++ {
			assert.True(t, a.has(app, fmt.Sprintf("%s-%d", app, i)), "renewing client %s-%d is kept", app, i)
		}
	}
}

// A stranger of the previous release sends no view: past the bound nothing
// is evicted, as that release held until membership agreed, and the hold
// says why.
func TestViewsDisagreeWithoutViewHolds(t *testing.T) {
	a, mine, deadMine, _, _ := disagreeCluster(t, nil)
	bound := a.repl.silentBound()
	require.Eventually(t, func() bool { return a.repl.ring.Load() != nil }, 4*bound, tick, "the bound passes")
	h := awaitViewsDisagreeHold(t, a, "the hold still shows")
	assert.Contains(t, h.Detail, "previous release")
	assert.Never(t, func() bool { return !a.has(mine, deadMine) }, 2*(holdsLease+bound), tick, "nothing is evicted")
}

// Between the moment the bound passes and the check that puts the views in
// effect (up to one LoadInterval), the hold goes on: for that moment this
// node's narrow view would otherwise decide alone, and evict the clients
// whose renewals go to the strangers.
func TestViewsDisagreeHoldLastsUntilTheViewsTakeEffect(t *testing.T) {
	bus := newFakeBus()
	a := bus.start(t, "a", false)
	o := a.repl.own.Load()
	now := time.Now()
	a.repl.loadMu.Lock()
	a.repl.loads["s"] = peerLoad{msg: &wire.Load{Node: "s", WindowMillis: 1000, Renewals: 1, Alive: []string{"s"}}, at: now}
	a.repl.disagree = disagreement{since: now.Add(-2 * a.repl.silentBound()), last: now, strangers: []string{"s"}}
	h, held := a.repl.disagreeHoldLocked(o, now)
	a.repl.loadMu.Unlock()
	require.Nil(t, a.repl.ring.Load(), "no check ran yet")
	require.True(t, held, "held until the views take effect")
	assert.Equal(t, HoldViewsDisagree, h.Reason)
	assert.False(t, h.Until.IsZero())

	a.repl.checkDisagreement()
	require.NotNil(t, a.repl.ring.Load())
	a.repl.loadMu.Lock()
	_, held = a.repl.disagreeHoldLocked(o, time.Now())
	a.repl.loadMu.Unlock()
	assert.False(t, held, "the views decide from then on")
}

// awaitViewsDisagreeHold waits until a's eviction holds include the
// views-disagree hold and returns it.
func awaitViewsDisagreeHold(t *testing.T, a *testNode, msg string) EvictionHold {
	t.Helper()
	var h EvictionHold
	require.Eventually(t, func() bool {
		for _, x := range a.repl.EvictionHolds() {
			if x.Reason == HoldViewsDisagree {
				h = x
				return true
			}
		}
		return false
	}, waitFor, tick, msg)
	return h
}
