package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleet drives the plain self-preservation core with production timers
// (lease 90 s, renewals every 30 s, a one-minute window closed every
// quarter, recount every 15 minutes, eviction every minute) on a fake
// clock: clients renew at phases spread over the renewal interval, and an
// eviction run evicts up to Eureka's cap of the expired leases whenever
// expiration is enabled.
type fleet struct {
	sp *selfPreservation
	// renewing[i] tells whether client i renews now; last[i] is its last
	// renewal; gone[i] that its lease was evicted.
	renewing []bool
	last     []time.Time
	gone     []bool
	// phase[i] is when in each renewal interval client i renews.
	phase []time.Duration
	// renewals holds every renewal time of the last window.
	renewals []time.Time
	now      time.Time
}

const (
	prodLease    = 90 * time.Second
	prodRenew    = 30 * time.Second
	prodWindow   = time.Minute
	prodRecount  = 15 * time.Minute
	prodEviction = time.Minute
)

func newFleet(n int) *fleet {
	f := &fleet{sp: &selfPreservation{enabled: true, percent: 0.85, expectedInterval: prodRenew,
		window: prodWindow, releaseAfter: prodRecount, expected: n},
		renewing: make([]bool, n), last: make([]time.Time, n), gone: make([]bool, n), phase: make([]time.Duration, n), now: testEpoch}
	for i := range n {
		f.renewing[i] = true
		f.last[i] = testEpoch
		f.phase[i] = (time.Duration(i) * prodRenew / time.Duration(n)).Truncate(time.Second)
	}
	return f
}

// registered is how many leases the registry holds.
func (f *fleet) registered() int {
	n := 0
	for _, g := range f.gone {
		if !g {
			n++
		}
	}
	return n
}

// run advances the fake clock by d in one-second steps: renewals at each
// client's phase, a window close every quarter (and the actor's recount of
// an empty expectation), the recount every 15 minutes, an eviction run
// every minute. It returns the first time expiration was enabled in d
// (zero if never).
func (f *fleet) run(d time.Duration) (enabledAt time.Time) {
	n := len(f.renewing)
	for end := f.now.Add(d); f.now.Before(end); {
		f.now = f.now.Add(time.Second)
		el := f.now.Sub(testEpoch)
		for i := range n {
			if f.renewing[i] && !f.gone[i] && el%prodRenew == f.phase[i] {
				f.last[i] = f.now
				f.renewals = append(f.renewals, f.now)
			}
		}
		for len(f.renewals) > 0 && !f.renewals[0].After(f.now.Add(-prodWindow)) {
			f.renewals = f.renewals[1:]
		}
		if el%(prodWindow/windowQuarters) == 0 {
			f.sp.held = f.registered()
			f.sp.closeWindow(f.now, int64(len(f.renewals)), 0, 0)
			f.sp.recountIfNone(f.registered())
		}
		if el%prodRecount == 0 {
			f.sp.recount(f.registered(), f.now)
		}
		if f.sp.expirationEnabled() && enabledAt.IsZero() {
			enabledAt = f.now
		}
		if el%prodEviction == 0 && f.sp.expirationEnabled() {
			f.evict()
		}
	}
	return enabledAt
}

// evict evicts up to evictionLimit of the expired leases.
func (f *fleet) evict() {
	limit := evictionLimit(f.registered(), f.sp.percent)
	removed := 0
	for i := range f.gone {
		if removed < limit && !f.gone[i] && f.now.Sub(f.last[i]) > prodLease {
			f.gone[i] = true
			f.sp.onCounts(0, 1, 1)
			removed++
		}
	}
}

// cancel takes client i's lease out by a cancel, as the registry's sink
// counts it.
func (f *fleet) cancel(i int) {
	f.gone[i] = true
	f.sp.onCounts(0, 1, 0)
}

// join registers a new renewing client and returns its index.
func (f *fleet) join() int {
	f.renewing = append(f.renewing, true)
	f.last = append(f.last, f.now)
	f.gone = append(f.gone, false)
	f.phase = append(f.phase, (f.now.Sub(testEpoch)+time.Second)%prodRenew)
	f.renewals = append(f.renewals, f.now)
	f.sp.onCounts(1, 0, 0)
	return len(f.renewing) - 1
}

// dead counts the leases held whose client does not renew.
func (f *fleet) dead() int {
	n := 0
	for i := range f.gone {
		if !f.gone[i] && !f.renewing[i] {
			n++
		}
	}
	return n
}

// outage cuts every client off for d, then brings back all but the first
// dead of them, and runs two windows. It returns the fleet.
func outageThenReturn(t *testing.T, d time.Duration, dead int) (*fleet, time.Time) {
	t.Helper()
	f := newFleet(100)
	require.False(t, f.run(5*time.Minute).IsZero(), "a healthy fleet expires")
	require.True(t, f.sp.expirationEnabled())
	for i := range f.renewing {
		f.renewing[i] = false
	}
	f.run(d)
	require.Equal(t, 100, f.registered(), "self-preservation kept every lease through the outage")
	for i := dead; i < len(f.renewing); i++ {
		f.renewing[i] = true
	}
	back := f.now
	return f, back
}

// A total renewal outage longer than the recount interval (16 minutes
// against 15) is a network fault: the release rule does not adopt the
// collapsed rate (which made the expectation 0, the threshold 0 and kept
// expiration off whatever came back), so when 90% of the clients return
// self-preservation lets go within two windows and the silent tenth is
// evicted (one run: 10 is within the cap of 15).
func TestReleaseNeverAdoptsCollapse(t *testing.T) {
	for _, outage := range []time.Duration{prodRecount, prodRecount + time.Minute, 40 * time.Minute} {
		t.Run(outage.String(), func(t *testing.T) {
			f, back := outageThenReturn(t, outage, 10)
			assert.True(t, f.sp.engaged(), "still engaged at the end of the outage")
			assert.Equal(t, 100, f.sp.expected, "the collapse was not adopted")
			assert.Contains(t, f.sp.reason(), "collapse")
			enabledAt := f.run(2 * prodWindow)
			require.False(t, enabledAt.IsZero(), "expiration enabled within two windows of the return")
			assert.LessOrEqual(t, enabledAt.Sub(back), 2*prodWindow)
			// The evictor runs at once on a release (registry); here the
			// next run within a minute takes the silent tenth.
			f.run(prodEviction)
			assert.Equal(t, 0, f.dead(), "the silent tenth is evicted")
			assert.Equal(t, 90, f.registered(), "every returning client's lease kept")
		})
	}
}

// Near zero is a collapse too: 5 clients of 100 renewing through the
// outage do not become the expectation.
func TestReleaseNeverAdoptsNearZero(t *testing.T) {
	f := newFleet(100)
	f.run(5 * time.Minute)
	for i := 5; i < len(f.renewing); i++ {
		f.renewing[i] = false
	}
	f.run(20 * time.Minute)
	assert.Equal(t, 100, f.sp.expected)
	assert.True(t, f.sp.engaged())
	assert.Equal(t, 100, f.registered())
}

// The release rule's price, stated in the package doc: when 70% of the
// clients fall silent for longer than the recount interval (a rate of 30%
// is no collapse), protection ends one recount interval after it engaged
// and the silent leases are evicted, 15% of the registry per run.
func TestReleaseAfterRecountOnMassFailure(t *testing.T) {
	f := newFleet(100)
	f.run(5 * time.Minute)
	for i := range 70 {
		f.renewing[i] = false
	}
	f.run(prodRecount - 2*prodWindow)
	assert.Equal(t, 100, f.registered(), "protected within the recount interval")
	assert.True(t, f.sp.engaged())
	f.run(4*prodWindow + 8*prodEviction)
	assert.Equal(t, 0, f.dead(), "released one recount interval after engaging: the silent are evicted")
	assert.Equal(t, 30, f.registered())
}

// An expectation of 0 while leases exist is recounted at once: a threshold
// of 0 would keep expiration off whatever the renewals.
func TestRecountIfNone(t *testing.T) {
	sp := eurekaSP(true, 0)
	sp.recountIfNone(12)
	assert.Equal(t, 12, sp.expected)
	sp.recountIfNone(3)
	assert.Equal(t, 12, sp.expected, "only an empty expectation is recounted")
	off := eurekaSP(false, 0)
	off.recountIfNone(12)
	assert.Equal(t, 0, off.expected, "not while self-preservation is off")
	none := eurekaSP(true, 0)
	none.recountIfNone(0)
	assert.Equal(t, 0, none.expected)
	assert.Contains(t, none.reason(), "nothing to protect")
}

// On a real registry, with every timer shortened by the same factor as
// the lease (90 s → 1 s: renewals 333 ms, window 667 ms, recount 10 s
// shrunk to 2 s so the test stays short, eviction 667 ms): 20 leases, a
// total outage longer than the recount, 18 clients back. The two silent
// leases are evicted and the returning ones kept.
func TestRegistryReleaseAfterTotalOutage(t *testing.T) {
	t.Parallel()
	r, keys := outageRegistry(t)
	ctx := context.Background()
	// The clients return but the first two; the silent two must go.
	stop := renewLoop(t, r, keys[2:], 333*time.Millisecond)
	defer stop()
	require.Eventually(t, func() bool { return !exists(t, r, keys[0]) && !exists(t, r, keys[1]) },
		waitFor, 20*time.Millisecond, "the silent leases are evicted after the clients return")
	for _, k := range keys[2:] {
		_, _, ok, err := r.Get(ctx, k.App, k.ID)
		require.NoError(t, err)
		assert.True(t, ok, "%v kept", k)
	}
	st := r.SelfPreservation()
	assert.True(t, st.ExpirationEnabled, st.Reason)
	assert.Equal(t, 18, r.Count())
}

// outageRegistry registers 20 one-second leases on a registry with
// shortened timers, renews them for a second, then renews none for longer
// than the recount interval; self-preservation keeps them all.
func outageRegistry(t *testing.T) (*Registry, []Key) {
	t.Helper()
	r := newTestRegistry(t, func(c *Config) {
		c.EvictionInterval = 667 * time.Millisecond
		c.RenewalWindow = 667 * time.Millisecond
		c.ExpectedClientRenewalInterval = 333 * time.Millisecond
		c.RenewalThresholdUpdateInterval = 2 * time.Second
	})
	ctx := context.Background()
	var keys []Key
	for i := range 20 {
		k := Key{App: "SVC", ID: fmt.Sprintf("i-%02d", i)}
		require.NoError(t, r.Register(ctx, regInstance(k.App, k.ID, 1), false))
		keys = append(keys, k)
	}
	stop := renewLoop(t, r, keys, 333*time.Millisecond)
	time.Sleep(time.Second)
	stop()
	require.Eventually(t, func() bool { return r.SelfPreservation().Engaged }, waitFor, 20*time.Millisecond)
	// Longer than the recount: the release rule's moment passes in the outage.
	time.Sleep(3 * time.Second)
	require.Equal(t, 20, r.Count(), "self-preservation kept every lease through the outage")
	return r, keys
}
