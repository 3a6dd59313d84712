package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastRenewFixture is a registry on a manual clock holding APP/i-1 with a
// 30 s lease, registered at t0.
func fastRenewFixture(t *testing.T, mutate func(*Config)) (*Registry, *ManualClock) {
	t.Helper()
	clock := NewManualClock(time.UnixMilli(1_700_000_000_000))
	r := newTestRegistry(t, func(c *Config) {
		c.Clock = clock
		if mutate != nil {
			mutate(c)
		}
	})
	require.NoError(t, r.Register(context.Background(), regInstance("APP", "i-1", 30), false))
	return r, clock
}

// A renewal answered by the fast path moves the lease's last renewal as
// the actor's renewal does: the lease does not expire a lease after its
// registration, Get shows the renewal time, and peers' records carry it.
func TestFastRenewAppliedBeforeReads(t *testing.T) {
	r, clock := fastRenewFixture(t, nil)
	ctx := context.Background()
	clock.Advance(20 * time.Second)
	renewedAt := clock.Now().UnixMilli()
	res, ok := r.fastRenew(RenewRequest{App: "APP", ID: "i-1"})
	require.True(t, ok, "a plain lease is renewed on the fast path")
	assert.Equal(t, RenewOK, res.Outcome)

	clock.Advance(20 * time.Second) // 40 s after the registration, 20 s after the renewal
	inst, expired, found, err := r.Get(ctx, "APP", "i-1")
	require.NoError(t, err)
	require.True(t, found)
	assert.False(t, expired, "the fast renewal was applied before the read")
	assert.Equal(t, renewedAt, inst.LeaseInfo.LastRenewalTimestamp)
	recs, err := r.Records(ctx, "APP")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, renewedAt, recs[0].LastRenewal)
}

// What the fast path must leave to the actor: peers' renewals, a newer
// lastDirtyTimestamp (404), unknown instances and applications (404), and
// cancelled leases.
func TestFastRenewSlowCases(t *testing.T) {
	r, _ := fastRenewFixture(t, nil)
	ctx := context.Background()
	newer := time.Now().UnixMilli() + 1e6
	for name, req := range map[string]RenewRequest{
		"replicated":       {App: "APP", ID: "i-1", Replicated: true},
		"overridden":       {App: "APP", ID: "i-1", OverriddenStatus: StatusOutOfService},
		"newer dirty":      {App: "APP", ID: "i-1", LastDirtyTimestamp: &newer},
		"unknown instance": {App: "APP", ID: "i-2"},
		"unknown app":      {App: "NONE", ID: "i-1"},
	} {
		_, ok := r.fastRenew(req)
		assert.False(t, ok, name)
	}
	res, err := r.Renew(ctx, RenewRequest{App: "APP", ID: "i-1", LastDirtyTimestamp: &newer})
	require.NoError(t, err)
	assert.Equal(t, RenewNotFound, res.Outcome, "a client with newer data must re-register")

	ok, err := r.Cancel(ctx, "APP", "i-1", false)
	require.NoError(t, err)
	require.True(t, ok)
	_, fast := r.fastRenew(RenewRequest{App: "APP", ID: "i-1"})
	assert.False(t, fast, "a cancelled lease leaves the fast path")
	res, err = r.Renew(ctx, RenewRequest{App: "APP", ID: "i-1"})
	require.NoError(t, err)
	assert.Equal(t, RenewNotFound, res.Outcome)
}

// A lease whose status an override changed is renewed on the fast path
// again once the change is published, and the fast path counts renewals
// and calls OnRenew as the actor does.
func TestFastRenewCountsAndHooks(t *testing.T) {
	var mu sync.Mutex
	var hooked []string
	r, _ := fastRenewFixture(t, func(c *Config) {
		c.OnRenew = func(app, id string) {
			mu.Lock()
			hooked = append(hooked, app+"/"+id)
			mu.Unlock()
		}
	})
	ctx := context.Background()
	ok, err := r.SetStatus(ctx, "APP", "i-1", StatusOutOfService, nil, false)
	require.NoError(t, err)
	require.True(t, ok)
	before := r.renewals.Load()
	_, fast := r.fastRenew(RenewRequest{App: "APP", ID: "i-1"})
	assert.True(t, fast)
	assert.Equal(t, before+1, r.renewals.Load(), "counted for self-preservation")
	mu.Lock()
	assert.Equal(t, []string{"APP/i-1"}, hooked)
	mu.Unlock()
}

// Fast renewals racing with cancels, re-registrations, status changes and
// reads (run with -race): every answer is OK or NotFound, and afterwards
// the registry holds exactly the instances last registered.
func TestFastRenewRaces(t *testing.T) {
	r := newTestRegistry(t, nil)
	ctx := context.Background()
	const ids = 8
	id := func(i int) string { return fmt.Sprintf("i-%d", i%ids) }
	for i := 0; i < ids; i++ {
		require.NoError(t, r.Register(ctx, regInstance("APP", id(i), 30), false))
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				res, err := r.Renew(ctx, RenewRequest{App: "APP", ID: id(i + w)})
				if !assert.NoError(t, err) || !assert.Contains(t, []RenewOutcome{RenewOK, RenewNotFound}, res.Outcome) {
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			switch i % 4 {
			case 0:
				_, _ = r.Cancel(ctx, "APP", id(i), false)
			case 1:
				_ = r.Register(ctx, regInstance("APP", id(i-1), 30), false)
			case 2:
				_, _ = r.SetStatus(ctx, "APP", id(i), StatusDown, nil, false)
			case 3:
				_, _, _, _ = r.Get(ctx, "APP", id(i))
			}
		}
	}()
	wg.Wait()
	for i := 0; i < ids; i++ {
		require.NoError(t, r.Register(ctx, regInstance("APP", id(i), 30), false))
	}
	for i := 0; i < ids; i++ {
		res, err := r.Renew(ctx, RenewRequest{App: "APP", ID: id(i)})
		require.NoError(t, err)
		assert.Equal(t, RenewOK, res.Outcome)
	}
	assert.Equal(t, ids, r.Count())
}
