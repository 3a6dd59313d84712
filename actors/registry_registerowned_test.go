package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegisterOwnedStoresTheInstance: RegisterOwned publishes (and keeps)
// the very instance it was given, stamped, while Register publishes a copy
// and leaves the caller's instance untouched, so one instance can be
// registered again and again (bench/ does).
func TestRegisterOwnedStoresTheInstance(t *testing.T) {
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) { c.Sinks = []Sink{sink} })
	ctx := context.Background()

	shared := regInstance("APP", "i-shared", 90)
	require.NoError(t, r.Register(ctx, shared, false))
	require.NoError(t, r.Register(ctx, shared, false))
	assert.Empty(t, shared.ActionType, "Register must not stamp the caller's instance")
	assert.Zero(t, shared.LeaseInfo.RegistrationTimestamp)

	owned := regInstance("APP", "i-owned", 90)
	require.NoError(t, r.RegisterOwned(ctx, owned, false))

	evs := sink.all()
	require.Len(t, evs, 3)
	assert.NotSame(t, shared, evs[0].Instance)
	assert.NotSame(t, evs[0].Instance, evs[1].Instance, "each Register publishes a new instance")
	assert.Same(t, owned, evs[2].Instance, "RegisterOwned publishes the instance it was given")
	assert.Equal(t, ActionAdded, owned.ActionType)
	assert.NotZero(t, owned.LeaseInfo.RegistrationTimestamp)

	got, _, ok, err := r.Get(ctx, "APP", "i-owned")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, owned.ID(), got.ID())
}

// TestSelfPreservationCountsCoalescedEvents: spSink folds the new and
// removed leases of a burst into counters and one message; the expected
// count still ends at exactly what was registered and cancelled, from
// many writers at once.
func TestSelfPreservationCountsCoalescedEvents(t *testing.T) {
	r := newTestRegistry(t, nil)
	ctx := context.Background()
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				app := fmt.Sprintf("APP-%d", i%5)
				id := fmt.Sprintf("w%d-i%d", w, i)
				assert.NoError(t, r.RegisterOwned(ctx, regInstance(app, id, 90), false))
				if i%2 == 1 { // cancel every other one
					ok, err := r.Cancel(ctx, app, id, false)
					assert.NoError(t, err)
					assert.True(t, ok)
				}
			}
		}()
	}
	wg.Wait()
	want := writers * each / 2
	// Expected can pass through want while a balanced burst (as many new
	// as removed leases) is still counted and not yet taken, so both are
	// awaited together.
	require.Eventually(t, func() bool {
		return r.SelfPreservation().Expected == want && r.spAdded.Load()+r.spRemoved.Load() == 0
	}, waitFor, tick, "expected %d, have %d; untaken %d added, %d removed",
		want, r.SelfPreservation().Expected, r.spAdded.Load(), r.spRemoved.Load())
	assert.Equal(t, want, r.Count())
}

// TestOnCountsAddsBeforeRemoving: a coalesced batch adds its new leases
// before it removes, and never goes below zero.
func TestOnCountsAddsBeforeRemoving(t *testing.T) {
	sp := selfPreservation{enabled: true, percent: 0.85}
	sp.onCounts(3, 2, 0)
	assert.Equal(t, 1, sp.expected)
	sp.onCounts(0, 5, 0)
	assert.Equal(t, 0, sp.expected)
	sp.onCounts(2, 0, 0)
	assert.Equal(t, 2, sp.expected)
}
