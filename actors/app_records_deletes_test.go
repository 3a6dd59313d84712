package actors

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hlcAt is an HLC reading at t from node.
func hlcAt(t time.Time, node string) Version {
	return Version{Clock: uint64(t.UnixMilli()) << hlcLogicalBits, Node: node}
}

// A received tombstone ages by its deletion time, not by when it arrived:
// it expires at the same moment on every node, and one that has already
// expired is not stored (nodes cannot re-seed each other).
func TestTombstoneAgesByDeletionTime(t *testing.T) {
	a, clock := newTestApp(t, false) // TTL one minute
	deleted := clock.Now()
	clock.Advance(50 * time.Second)
	_, ok := applyRec(a, Record{App: "APP", ID: "x-1", Deleted: true, Version: hlcAt(deleted, "peer")})
	assert.False(t, ok, "nothing to delete here")
	require.Contains(t, a.tombstones.ids(), "x-1", "a fresh tombstone is kept")
	clock.Advance(11 * time.Second) // 61 s after the deletion, 11 s after receipt
	a.collectTombstones()
	assert.NotContains(t, a.tombstones.ids(), "x-1", "collected by its deletion time")
	assert.Empty(t, a.records(), "and never shipped again")

	// The same tombstone arriving again now is already expired: not stored.
	applyRec(a, Record{App: "APP", ID: "x-1", Deleted: true, Version: hlcAt(deleted, "peer")})
	assert.NotContains(t, a.tombstones.ids(), "x-1")
	assert.True(t, a.empty(), "an application with only expired tombstones can stop")
}

// An expired tombstone still deletes an older copy of the lease.
func TestExpiredTombstoneStillDeletes(t *testing.T) {
	a, clock := newTestApp(t, false)
	in := testInstance("x-1", StatusUp)
	registered := clock.Now()
	_, ok := applyRec(a, Record{App: "APP", ID: "x-1", Version: hlcAt(registered, "peer"), Instance: in,
		LastRenewal: ms(registered)})
	require.True(t, ok)
	deleted := registered.Add(time.Second)
	clock.Advance(2 * time.Minute)
	ev, ok := applyRec(a, Record{App: "APP", ID: "x-1", Deleted: true, Version: hlcAt(deleted, "peer")})
	require.True(t, ok)
	assert.Equal(t, ActionDeleted, ev.Action)
	assert.Empty(t, a.leases)
	assert.Empty(t, a.tombstones.ids())
}

// The long partition: a copy that outlived its tombstone (older than the
// TTL, unknown here, its lease run out) is refused and answered with an
// eviction tombstone newer than it, which deletes it everywhere.
func TestStaleCopyRefused(t *testing.T) {
	a, clock := newTestApp(t, false)
	registered := clock.Now()
	clock.Advance(30 * time.Minute) // a partition far longer than the TTL
	in := testInstance("x-1", StatusUp)
	stale := Record{App: "APP", ID: "x-1", Version: hlcAt(registered, "peer"), Instance: in,
		LastRenewal: ms(registered) + 1000} // kept by self-preservation, not renewed
	ev, res := a.applyRecord(stale, false)
	require.Equal(t, ApplyRefused, res)
	assert.Empty(t, a.leases, "not installed")
	assert.Equal(t, ActionDeleted, ev.Action)
	assert.Equal(t, CauseRefuseStale, ev.Cause)
	assert.False(t, ev.Replicated, "the eviction goes to every member")
	assert.True(t, stale.Version.Less(ev.Version), "it beats the stale copy everywhere")
	recs := a.records()
	require.Len(t, recs, 1)
	assert.True(t, recs[0].Deleted && recs[0].Evicted)

	// A node in its initial sync takes the stale copy like everything else
	// (it holds nothing it could have deleted); the refusal tombstone then
	// deletes it there too.
	b, bclock := newTestApp(t, false)
	bclock.Advance(30 * time.Minute)
	_, res = b.applyRecord(stale, true)
	require.Equal(t, ApplyInstalled, res, "an initial sync takes everything")
	_, ok := applyRec(b, recs[0])
	assert.True(t, ok)
	assert.Empty(t, b.leases, "the refusal deleted the stale copy")
}

// What is not stale is installed: an old record whose lease the sender saw
// renewed, a young record, and anything this node already knows.
func TestLiveOldCopyAccepted(t *testing.T) {
	a, clock := newTestApp(t, false)
	registered := clock.Now()
	clock.Advance(30 * time.Minute)
	in := testInstance("x-1", StatusUp) // 10 s lease
	_, res := a.applyRecord(Record{App: "APP", ID: "x-1", Version: hlcAt(registered, "peer"), Instance: in,
		LastRenewal: ms(clock.Now()) - 2000}, false)
	assert.Equal(t, ApplyInstalled, res, "renewed 2 s ago by the sender's knowledge")
	_, res = a.applyRecord(Record{App: "APP", ID: "x-2", Version: hlcAt(clock.Now().Add(-30*time.Second), "peer"),
		Instance: testInstance("x-2", StatusUp)}, false)
	assert.Equal(t, ApplyInstalled, res, "younger than the TTL: a tombstone would still be here")
}

// Under the sabotage switch the stale copy comes back (see the sabotage
// build); here, without it, the guard holds whatever the partition length.
func TestStaleGuardAtEveryPartitionLength(t *testing.T) {
	for _, gap := range []time.Duration{61 * time.Second, 10 * time.Minute, 24 * time.Hour, 365 * 24 * time.Hour} {
		a, clock := newTestApp(t, false)
		registered := clock.Now()
		clock.Advance(gap)
		_, res := a.applyRecord(Record{App: "APP", ID: "x-1", Version: hlcAt(registered, "peer"),
			Instance: testInstance("x-1", StatusUp), LastRenewal: ms(registered)}, false)
		assert.Equal(t, ApplyRefused, res, "gap %v", gap)
	}
}

// Per-lease grace: after start or takeover (since), a lease is evicted only
// once it has been silent for its whole duration after that moment.
func TestGracePerLease(t *testing.T) {
	a, clock := newTestApp(t, false)
	in := testInstance("i-1", StatusUp) // 10 s lease
	long := clock.Now()
	_, ok := applyRec(a, Record{App: "APP", ID: "i-1", Version: hlcAt(long, "peer"), Instance: in, LastRenewal: ms(long)})
	require.True(t, ok)
	clock.Advance(time.Minute)
	takeover := ms(clock.Now())
	assert.Equal(t, []string{"i-1"}, a.expiredIDs(0, 0), "silent for a minute")
	assert.Empty(t, a.expiredIDs(0, takeover), "but this owner took over just now")
	clock.Advance(9 * time.Second)
	assert.Empty(t, a.expiredIDs(0, takeover))
	clock.Advance(2 * time.Second)
	assert.Equal(t, []string{"i-1"}, a.expiredIDs(0, takeover), "one lease after the takeover")
}

// A local change always gets a version above the state it changes, even
// when that state came from a peer whose clock runs far ahead.
func TestLocalChangeBeatsFutureVersion(t *testing.T) {
	a, clock := newTestApp(t, false)
	future := hlcAt(clock.Now().Add(time.Hour), "skewed")
	_, ok := applyRec(a, Record{App: "APP", ID: "i-1", Version: future, Instance: testInstance("i-1", StatusUp),
		LastRenewal: ms(clock.Now())})
	require.True(t, ok)
	assert.Less(t, a.opts.hlc.Now(), future.Clock, "the HLC did not follow the skewed peer")
	ev, ok := a.remove("i-1", CauseCancel, false)
	require.True(t, ok)
	assert.True(t, future.Less(ev.Version), "the cancel supersedes the skewed record")
}

func TestHLCBounds(t *testing.T) {
	clock := NewManualClock(testEpoch)
	h := NewHLC(clock)
	near := uint64(clock.Now().Add(30*time.Second).UnixMilli()) << hlcLogicalBits
	assert.True(t, h.Observe(near))
	assert.Equal(t, near+1, h.Now(), "a reading within MaxAhead is followed")
	far := uint64(clock.Now().Add(2*time.Minute).UnixMilli()) << hlcLogicalBits
	assert.False(t, h.Observe(far))
	assert.Equal(t, uint64(1), h.Refused())
	assert.Less(t, h.Now(), far)

	top := &HLC{clock: clock, maxAhead: time.Duration(math.MaxInt64), last: math.MaxUint64 - 1}
	assert.Equal(t, uint64(math.MaxUint64), top.Now())
	assert.Equal(t, uint64(math.MaxUint64), top.Now(), "saturates instead of wrapping to zero")
}

// copiedScenario is a node restarted during a long partition: its initial
// sync installs a copy last renewed two minutes ago (beyond the TTL of a
// minute, lease 10 s), and it sends that copy on to a node of the other
// side, which cancelled the instance long ago and has no tombstone left. It
// returns the record sent and what the other node made of it.
func copiedScenario(t *testing.T) (Record, ApplyResult) {
	t.Helper()
	a, clock := newTestApp(t, false)
	renewed := clock.Now()
	clock.Advance(2 * time.Minute)
	_, res := a.applyRecord(Record{App: "APP", ID: "x-1", Version: hlcAt(renewed, "peer"),
		Instance: testInstance("x-1", StatusUp), LastRenewal: ms(renewed)}, true)
	require.Equal(t, ApplyInstalled, res, "an initial sync takes every copy")
	var sent Record
	for _, r := range a.records() {
		if r.ID == "x-1" {
			sent = r
		}
	}
	b, other := newTestApp(t, false)
	other.Advance(2*time.Minute + time.Second)
	_, res = b.applyRecord(sent, false)
	return sent, res
}

// A copy keeps the last renewal its sender knew, and is sent on with it, so
// a node restarted during a partition does not push the other side's old
// copies as live at the heal: the side that cancelled them refuses them as
// stale (copied-lease-fresh; the simulations' long-partition catches it only
// when the restarted node's copies win a race at the heal).
func TestCopyKeepsTheSendersLastRenewal(t *testing.T) {
	sent, res := copiedScenario(t)
	assert.Equal(t, ms(testEpoch), sent.LastRenewal, "sent on with the sender's last renewal")
	assert.Equal(t, ApplyRefused, res, "refused as stale by the side that cancelled it")
}

// skewedCopyScenario applies, on a node whose wall clock runs three minutes
// ahead of the sender's, a copy the sender registered 90 s ago on its own
// clock and saw renewed 2 s ago (BUG-17). The record says so through its
// Offset, which the cluster layer sets from the batch's SentAt.
func skewedCopyScenario(t *testing.T) (*appState, time.Time, ApplyResult) {
	t.Helper()
	a, clock := newTestApp(t, false) // TTL one minute, 10 s leases
	const skew = 3 * time.Minute
	senderNow := clock.Now().Add(-skew)
	_, res := a.applyRecord(Record{App: "APP", ID: "x-1", Version: hlcAt(senderNow.Add(-90*time.Second), "peer"),
		Instance: testInstance("x-1", StatusUp), LastRenewal: ms(senderNow) - 2000, Offset: skew.Milliseconds()}, false)
	return a, clock.Now(), res
}

// A copy's age is read on the sender's clock: a node whose clock runs ahead
// takes a copy renewed 2 s ago as renewed 2 s ago, not as stale (BUG-17:
// it refused live copies and evicted them everywhere). The switch
// copy-aged-by-receiver-clock sees this fail (run with -tags sabotage).
func TestCopyAgedOnTheSendersClock(t *testing.T) {
	a, now, res := skewedCopyScenario(t)
	require.Equal(t, ApplyInstalled, res, "a live copy, however far the clocks disagree")
	require.Contains(t, a.leases, "x-1")
	assert.Equal(t, ms(now)-2000, a.leases["x-1"].lastUpdate, "last renewed 2 s ago, on this node's clock")
}
