package actors

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// takeoverFixture is a new owner of APP (since now, on both clocks) that
// holds copies of APP/live and APP/dead, 30 s leases, whose last renewals
// it saw 25 s ago (they went to the previous owner since).
func takeoverFixture(t *testing.T) (*Registry, *ManualClock, *ManualClock) {
	t.Helper()
	wall := NewManualClock(time.UnixMilli(1_700_000_000_000))
	mono := NewManualClock(time.Unix(0, 0))
	r := newTestRegistry(t, func(c *Config) {
		c.Clock = wall
		c.LeaseClock = mono
		c.Ownership = &fixedOwnership{since: wall.Now()}
	})
	for _, id := range []string{"live", "dead"} {
		applyCopy(t, r, id, wall.Now().Add(-25*time.Second))
	}
	_, ok := r.ownedSince("APP") // the takeover, seen now
	require.True(t, ok)
	return r, wall, mono
}

// applyCopy installs a peer's copy of APP/id last renewed at renewed.
func applyCopy(t *testing.T, r *Registry, id string, renewed time.Time) {
	t.Helper()
	in := regInstance("APP", id, 30)
	in.LeaseInfo.RegistrationTimestamp = renewed.UnixMilli()
	in.LeaseInfo.LastRenewalTimestamp = renewed.UnixMilli()
	st, err := r.ApplyRecords(context.Background(), "APP", []Record{{App: "APP", ID: id,
		Version: Version{Clock: r.HLC().Now() + 1, Node: "node-b"}, LastRenewal: renewed.UnixMilli(), Instance: in}}, true)
	require.NoError(t, err)
	require.Equal(t, 1, st.Applied)
}

// adopt hands ages over and waits until APP's actor has taken them (the
// next command to it is handled after).
func adopt(t *testing.T, r *Registry, ages []LeaseAge) {
	t.Helper()
	r.AdoptLeaseAges("APP", ages)
	_, err := r.LeaseAges(context.Background(), "APP")
	require.NoError(t, err)
}

func expired(t *testing.T, r *Registry, id string) bool {
	t.Helper()
	_, exp, found, err := r.Get(context.Background(), "APP", id)
	require.NoError(t, err)
	require.True(t, found, "APP/%s is held", id)
	return exp
}

// The previous owner's handoff: APP/live was renewed there 2 s ago, APP/dead
// 20 s ago. The new owner takes the later renewal of each and no takeover
// grace: the dead client's lease runs out 10 s after the takeover, a lease
// after its last renewal, and the live one's 28 s after it.
func TestHandedLeaseExpiresALeaseAfterItsRenewal(t *testing.T) {
	r, wall, mono := takeoverFixture(t)
	adopt(t, r, []LeaseAge{{ID: "live", Age: 2 * time.Second}, {ID: "dead", Age: 20 * time.Second}})
	elapse(11*time.Second, wall, mono)
	assert.True(t, expired(t, r, "dead"), "21+10 s after its last renewal on the old owner")
	assert.False(t, expired(t, r, "live"))
	elapse(16*time.Second, wall, mono)
	assert.False(t, expired(t, r, "live"), "29 s after its last renewal")
	elapse(2*time.Second, wall, mono)
	assert.True(t, expired(t, r, "live"), "31 s after its last renewal")

	ages, err := r.LeaseAges(context.Background(), "APP")
	require.NoError(t, err)
	assert.ElementsMatch(t, []LeaseAge{{ID: "live", Age: 31 * time.Second}, {ID: "dead", Age: 49 * time.Second}}, ages,
		"the ages this node would hand on, on the lease clock")
}

// Without a handoff (the old owner was killed), every lease gets the
// takeover grace: a whole lease from the takeover.
func TestUnhandedLeaseGetsTheTakeoverGrace(t *testing.T) {
	r, wall, mono := takeoverFixture(t)
	elapse(29*time.Second, wall, mono)
	assert.False(t, expired(t, r, "dead"), "a lease of grace from the takeover")
	elapse(2*time.Second, wall, mono)
	assert.True(t, expired(t, r, "dead"))
}

// A restarted owner gets the handoff before its initial sync brought the
// records: the handed renewal waits for the record and applies to it.
func TestHandoffBeforeTheRecord(t *testing.T) {
	wall := NewManualClock(time.UnixMilli(1_700_000_000_000))
	mono := NewManualClock(time.Unix(0, 0))
	r := newTestRegistry(t, func(c *Config) {
		c.Clock = wall
		c.LeaseClock = mono
		c.Ownership = &fixedOwnership{since: wall.Now()}
	})
	_, ok := r.ownedSince("APP")
	require.True(t, ok)
	adopt(t, r, []LeaseAge{{ID: "dead", Age: 20 * time.Second}})
	elapse(time.Second, wall, mono)
	applyCopy(t, r, "dead", wall.Now().Add(-60*time.Second)) // an old copy from a non-owner
	elapse(10*time.Second, wall, mono)
	assert.True(t, expired(t, r, "dead"), "31 s after its last renewal on the old owner")
}

// A handoff from an earlier ownership (more than a third of a lease before
// this one began) does not lift this one's grace: renewals went elsewhere
// in between.
func TestOldHandoffDoesNotCount(t *testing.T) {
	wall := NewManualClock(time.UnixMilli(1_700_000_000_000))
	mono := NewManualClock(time.Unix(0, 0))
	own := &fixedOwnership{since: wall.Now()}
	r := newTestRegistry(t, func(c *Config) {
		c.Clock = wall
		c.LeaseClock = mono
		c.Ownership = own
	})
	applyCopy(t, r, "dead", wall.Now().Add(-5*time.Second))
	adopt(t, r, []LeaseAge{{ID: "dead", Age: 5 * time.Second}})
	elapse(15*time.Second, wall, mono)
	own.since = wall.Now() // lost and taken again, 15 s after the handoff
	elapse(16*time.Second, wall, mono)
	assert.False(t, expired(t, r, "dead"), "36 s after its renewal, but 16 s into a new ownership with no handoff")
	elapse(15*time.Second, wall, mono)
	assert.True(t, expired(t, r, "dead"))
}
