package actors

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sweepDueOf returns app's sweepDue, or nil if it has no actor.
func sweepDueOf(r *Registry, app string) *sweepDue {
	v, ok := r.apps.Load(app)
	if !ok {
		return nil
	}
	return &v.(*appEntry).due
}

// sweepDueFixture registers an hour-long lease in SVC on a registry that
// sweeps every 100 ms, waits until a sweep has found nothing due in SVC for
// the hour, then registers a 1 s lease there that nobody renews.
func sweepDueFixture(t *testing.T) (*Registry, Key) {
	r := newTestRegistry(t, func(c *Config) {
		shortTimers(c)
		c.SelfPreservation = false
	})
	ctx := context.Background()
	require.NoError(t, r.Register(ctx, regInstance("SVC", "long", 3600), false))
	require.Eventually(t, func() bool {
		d := sweepDueOf(r, "SVC")
		return d != nil && !d.needsSweep(r.leaseClock.now()+30*60_000, r.cfg.Clock.Now().UnixMilli(), false)
	}, waitFor, 10*time.Millisecond, "a sweep should find nothing due in SVC for half an hour")
	short := Key{App: "SVC", ID: "short"}
	require.NoError(t, r.Register(ctx, regInstance(short.App, short.ID, 1), false))
	return r, short
}

// A sweep skips an application with nothing due (at 1M instances most of
// them), yet a registration in it makes the next sweep visit it: the
// unrenewed 1 s lease registered after the sweep that set an hour's due
// time is evicted. TestSabotageSweepSkipsChangedApps sees this fail when a
// command leaves the due time alone.
func TestSweepVisitsChangedApps(t *testing.T) {
	t.Parallel()
	r, short := sweepDueFixture(t)
	require.Eventually(t, func() bool { return !exists(t, r, short) }, waitFor, 10*time.Millisecond,
		"the unrenewed lease should be evicted")
	assert.True(t, exists(t, r, Key{App: "SVC", ID: "long"}))
	// And the sweeps that follow skip SVC again.
	require.Eventually(t, func() bool {
		return !sweepDueOf(r, "SVC").needsSweep(r.leaseClock.now(), r.cfg.Clock.Now().UnixMilli(), true)
	}, waitFor, 10*time.Millisecond, "the eviction's tombstone is due only after the TTL")
}

// needsSweep compares with the due times strictly: a lease or tombstone
// is expired only after its instant, as expiredSince and tombstoneExpired
// have it.
func TestSweepDueBounds(t *testing.T) {
	var d sweepDue
	assert.True(t, d.needsSweep(1, 1, false), "zero: sweep")
	d.leases.Store(100)
	d.tombstones.Store(200)
	assert.False(t, d.needsSweep(100, 200, false))
	assert.True(t, d.needsSweep(101, 200, false))
	assert.False(t, d.needsSweep(101, 200, true), "tombstones only")
	assert.True(t, d.needsSweep(0, 201, true))

	a, clock := newTestApp(t, false)
	assert.Equal(t, int64(1<<63-1), a.leasesDue(), "no leases")
	assert.Equal(t, int64(1<<63-1), a.collectTombstones(), "no tombstones")

	// A 10 s lease is due exactly at its expiry: not expired at the
	// instant, expired a millisecond later.
	a.register(testInstance("i-1", StatusUp), false)
	a.register(testInstance("i-2", StatusUp), false)
	due := a.leasesDue()
	assert.Equal(t, a.leaseNow()+10_000, due)
	clock.Advance(10 * time.Second)
	assert.Empty(t, a.expiredIDs(0, 0))
	clock.Advance(time.Millisecond)
	assert.Len(t, a.expiredIDs(0, 0), 2)
	assert.Equal(t, due, a.leasesDue(), "a run-out lease keeps its application due")

	// A tombstone is due at its deletion plus the TTL (one minute here).
	a.remove("i-1", CauseCancel, false)
	tdue := a.collectTombstones()
	assert.Equal(t, a.now()+60_000, tdue)
	clock.Advance(time.Minute)
	assert.Equal(t, tdue, a.collectTombstones(), "kept up to the TTL")
	clock.Advance(time.Millisecond)
	assert.Equal(t, int64(1<<63-1), a.collectTombstones(), "collected after it")
}
