package actors

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BUG-10: lease ages are measured on the lease clock, which a node's wall
// clock setting does not move. These tests drive the two clocks apart: the
// wall clock (Config.Clock) jumps, the lease clock (Config.LeaseClock) only
// runs.

// skewFixture is a registry whose wall and lease clocks are separate manual
// clocks, holding APP/i-1 with a 30 s lease registered at their start.
func skewFixture(t *testing.T) (r *Registry, wall, mono *ManualClock) {
	t.Helper()
	wall = NewManualClock(time.UnixMilli(1_700_000_000_000))
	mono = NewManualClock(time.Unix(0, 0)) // any reading: only its differences count
	r = newTestRegistry(t, func(c *Config) {
		c.Clock = wall
		c.LeaseClock = mono
	})
	require.NoError(t, r.Register(context.Background(), regInstance("APP", "i-1", 30), false))
	return r, wall, mono
}

// elapse lets d pass on both clocks.
func elapse(d time.Duration, clocks ...*ManualClock) {
	for _, c := range clocks {
		c.Advance(d)
	}
}

// renewI1 renews APP/i-1 as its client does.
func renewI1(t *testing.T, r *Registry) {
	t.Helper()
	res, err := r.Renew(context.Background(), RenewRequest{App: "APP", ID: "i-1"})
	require.NoError(t, err)
	require.Equal(t, RenewOK, res.Outcome)
}

// expiredI1 reports whether APP/i-1 is held and expired.
func expiredI1(t *testing.T, r *Registry) bool {
	t.Helper()
	_, expired, found, err := r.Get(context.Background(), "APP", "i-1")
	require.NoError(t, err)
	require.True(t, found, "APP/i-1 is held")
	return expired
}

// evictFromPeer applies a peer's eviction tombstone of APP/i-1, newer than
// anything this node holds, and reports whether APP/i-1 is still held
// afterwards (the eviction was overruled).
func evictFromPeer(t *testing.T, r *Registry) bool {
	t.Helper()
	ctx := context.Background()
	v := Version{Clock: r.HLC().Now() + 1, Node: "node-b"}
	_, err := r.ApplyRecords(ctx, "APP", []Record{{App: "APP", ID: "i-1", Version: v, Deleted: true, Evicted: true}}, false)
	require.NoError(t, err)
	_, _, found, err := r.Get(ctx, "APP", "i-1")
	require.NoError(t, err)
	return found
}

// wallBackScenario renews APP/i-1 10 s after its registration, sets the
// wall clock back by six minutes, and lets 35 s pass: the client has been
// silent for more than its 30 s lease.
func wallBackScenario(t *testing.T) *Registry {
	r, wall, mono := skewFixture(t)
	elapse(10*time.Second, wall, mono)
	renewI1(t, r)
	wall.Advance(-6 * time.Minute)
	elapse(25*time.Second, wall, mono)
	require.False(t, expiredI1(t, r), "25 s after the renewal the lease still runs")
	elapse(10*time.Second, wall, mono)
	return r
}

// A wall clock set back keeps no dead lease alive: it expires a lease after
// its last renewal, and a peer's eviction of it is not overruled.
func TestLeaseExpiresOnTimeAfterWallClockSetBack(t *testing.T) {
	r := wallBackScenario(t)
	assert.True(t, expiredI1(t, r), "35 s after the last renewal the 30 s lease has run out")
	assert.False(t, evictFromPeer(t, r), "no client renewed here within a lease: the eviction stands")
}

// A wall clock set forward expires no renewing lease, and a peer's eviction
// of a lease a client renewed here within a lease is overruled.
func TestRenewingLeaseSurvivesWallClockSetForward(t *testing.T) {
	r, wall, mono := skewFixture(t)
	elapse(20*time.Second, wall, mono)
	renewI1(t, r)
	wall.Advance(3 * time.Minute)
	elapse(5*time.Second, wall, mono)
	assert.False(t, expiredI1(t, r), "5 s after its renewal the lease runs")
	assert.True(t, evictFromPeer(t, r), "a client renewed here 5 s ago: the eviction is overruled")
}

// The renewal answered by the actor (a peer's) ages on the lease clock too.
func TestPeerRenewalAgesOnLeaseClock(t *testing.T) {
	r, wall, mono := skewFixture(t)
	elapse(20*time.Second, wall, mono)
	_, err := r.Renew(context.Background(), RenewRequest{App: "APP", ID: "i-1", Replicated: true})
	require.NoError(t, err)
	wall.Advance(3 * time.Minute)
	elapse(5*time.Second, wall, mono)
	assert.False(t, expiredI1(t, r), "5 s after its renewal the lease runs")
	wall.Advance(-9 * time.Minute)
	elapse(26*time.Second, wall, mono)
	assert.True(t, expiredI1(t, r), "31 s after its renewal the lease has run out")
}

// A peer's copy is as old at receipt as the sender's last renewal says by
// this node's wall clock, never younger than its receipt, and then ages on
// the lease clock: a sender whose clock runs three minutes ahead does not
// make the copy live three minutes longer, and this node's wall clock set
// back after the receipt does not either.
func TestCopiedLeaseAgesOnLeaseClock(t *testing.T) {
	wall := NewManualClock(time.UnixMilli(1_700_000_000_000))
	mono := NewManualClock(time.Unix(0, 0))
	r := newTestRegistry(t, func(c *Config) {
		c.Clock = wall
		c.LeaseClock = mono
	})
	ctx := context.Background()
	ahead := regInstance("APP", "i-1", 30)
	ahead.LeaseInfo.RegistrationTimestamp = wall.Now().Add(3 * time.Minute).UnixMilli()
	ahead.LeaseInfo.LastRenewalTimestamp = ahead.LeaseInfo.RegistrationTimestamp
	st, err := r.ApplyRecords(ctx, "APP", []Record{{App: "APP", ID: "i-1", Version: Version{Clock: r.HLC().Now() + 1, Node: "node-b"},
		LastRenewal: ahead.LeaseInfo.LastRenewalTimestamp, Instance: ahead}}, false)
	require.NoError(t, err)
	require.Equal(t, 1, st.Applied)
	wall.Advance(-6 * time.Minute)
	elapse(29*time.Second, wall, mono)
	assert.False(t, expiredI1(t, r), "29 s after the receipt the copy's lease runs")
	elapse(2*time.Second, wall, mono)
	assert.True(t, expiredI1(t, r), "31 s after the receipt the copy's 30 s lease has run out")
}

// The ownership instant is converted to the lease clock when first seen:
// a wall clock set back afterwards does not renew an owner's takeover
// grace.
func TestOwnedSinceKeptOnLeaseClock(t *testing.T) {
	wall := NewManualClock(time.UnixMilli(1_700_000_000_000))
	mono := NewManualClock(time.Unix(0, 0))
	own := &fixedOwnership{since: wall.Now()}
	r := newTestRegistry(t, func(c *Config) {
		c.Clock = wall
		c.LeaseClock = mono
		c.Ownership = own
	})
	first, ok := r.ownedSince("APP")
	require.True(t, ok)
	wall.Advance(-6 * time.Minute)
	elapse(10*time.Second, wall, mono)
	again, _ := r.ownedSince("APP")
	assert.Equal(t, first, again, "the wall clock set back moved the takeover instant")
	assert.Equal(t, r.leaseClock.now()-10_000, again, "the takeover is 10 s old on the lease clock")
}

// fixedOwnership owns every application since a fixed instant.
type fixedOwnership struct{ since time.Time }

func (o *fixedOwnership) Owns(string) bool                    { return true }
func (o *fixedOwnership) OwnedSince(string) (time.Time, bool) { return o.since, true }
func (o *fixedOwnership) OwnedCount() int                     { return 1 }

// The lease clock defaults to the wall clock when that is a ManualClock
// (tests move both together) and to the system clock otherwise.
func TestLeaseClockDefault(t *testing.T) {
	wall := NewManualClock(time.UnixMilli(1_700_000_000_000))
	r := newTestRegistry(t, func(c *Config) { c.Clock = wall })
	assert.Same(t, wall, r.cfg.LeaseClock)
	r2 := newTestRegistry(t, func(c *Config) { c.Clock = offsetClock(-time.Hour) })
	assert.Equal(t, SystemClock{}, r2.cfg.LeaseClock)
}

// offsetClock is a wall clock off the real one by a fixed offset.
type offsetClock time.Duration

func (c offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c)) }
