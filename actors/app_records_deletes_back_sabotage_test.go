//go:build sabotage

package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// withSwitch runs f with the switch s on.
func withSwitch(t *testing.T, s sabotage.Switch, f func()) {
	t.Helper()
	require.NoError(t, sabotage.Set(s))
	defer func() { require.NoError(t, sabotage.Set()) }()
	f()
}

// With tombstone-prefix-collected on, TestFutureTombstoneKeepsOnlyItsPack
// fails: the pack stamped a day ahead keeps every pack after it.
func TestSabotageTombstonePrefixCollected(t *testing.T) {
	withSwitch(t, sabotage.TombstonePrefixCollected, func() {
		n := futurePacksScenario()
		t.Logf("%d tombstones held of 6001 put, TTL 600 ms", n)
		assert.Greater(t, n, 6000, "every tombstone held")
	})
}

// With tombstone-aged-from-future on, TestFutureTombstoneAgesFromReceipt
// fails: the tombstone stamped a day ahead is kept and shipped.
func TestSabotageTombstoneAgedFromFuture(t *testing.T) {
	withSwitch(t, sabotage.TombstoneAgedFromFuture, func() {
		a, clock := newTestApp(t, false)
		applyRec(a, Record{App: "APP", ID: "x-1", Deleted: true, Version: hlcAt(clock.Now().Add(24*time.Hour), "peer")})
		clock.Advance(3 * time.Minute)
		a.collectTombstones()
		clock.Advance(time.Minute)
		a.collectTombstones()
		assert.Contains(t, a.tombstones.ids(), "x-1")
	})
}

// With empty-record-applied on, TestEmptyRecordSkipped fails: the record
// without an instance panics the actor, and the record applied before it
// never reaches the sinks.
func TestSabotageEmptyRecordApplied(t *testing.T) {
	withSwitch(t, sabotage.EmptyRecordApplied, func() {
		sink := emptyRecordBatch(t)
		assert.False(t, sink.has(Key{App: "APP", ID: "x-1"}, ActionAdded))
	})
}

// With lease-duration-unbounded on, TestAbsurdLeaseRecordRefused fails.
func TestSabotageLeaseDurationUnboundedRecord(t *testing.T) {
	withSwitch(t, sabotage.LeaseDurationUnbounded, func() {
		in := regInstance("APP", "x-1", 30)
		in.LeaseInfo.DurationSecs = 1 << 40
		assert.NoError(t, ValidateRecord(Record{App: "APP", ID: "x-1", Instance: in}))
	})
}

// With stale-judged-by-operator-writes on, TestOperatorWriteDoesNotUndoCancel
// fails: the operator's write makes the stale copy look renewed, and the
// cancelled instance is back.
func TestSabotageStaleJudgedByOperatorWrites(t *testing.T) {
	withSwitch(t, sabotage.StaleJudgedByOperatorWrites, func() {
		for name, write := range operatorWrites {
			res, kept := operatorWriteScenario(t, write)
			assert.Equal(t, ApplyInstalled, res, name)
			assert.True(t, kept, name)
		}
	})
}

// With tombstone-outlived-by-lease on, TestLongLeaseDoesNotUndoCancel
// fails: the tombstone goes after the TTL, and the 180 s lease's copy is
// installed at the heal.
func TestSabotageTombstoneOutlivedByLease(t *testing.T) {
	withSwitch(t, sabotage.TombstoneOutlivedByLease, func() {
		res, kept := longLeaseScenario(t, nil)
		assert.Equal(t, ApplyInstalled, res)
		assert.True(t, kept)
	})
}
