package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// futurePacksScenario fills a set (TTL 600 ms, a pack every 60 ms) with
// one tombstone stamped a day ahead and then one deletion a millisecond
// for 6 s, and collects: it returns how many tombstones the set holds.
func futurePacksScenario() int {
	s := newTestSet()
	s.packAge = 60
	const ttl = 600
	day := int64(24 * time.Hour / time.Millisecond)
	s.put("ahead", tombAt(day, 0), 0)
	for now := int64(1); now <= 6000; now++ {
		s.put(fmt.Sprintf("id-%d", now), tombAt(now, 0), now)
		if now%100 == 0 {
			s.collect(now, ttl)
		}
	}
	s.collect(6000, ttl)
	return s.len()
}

// One tombstone stamped in the future (a node whose clock runs ahead)
// keeps its own pack only: every later pack goes when it expires.
func TestFutureTombstoneKeepsOnlyItsPack(t *testing.T) {
	n := futurePacksScenario()
	assert.LessOrEqual(t, n, 700, "about a TTL's deletions and the one ahead, not every pack after it")
}

// A tombstone received stamped further ahead of this node's clock than
// the HLC tolerance ages from its receipt plus the tolerance: it goes a
// TTL after that, not a TTL after a day from now.
func TestFutureTombstoneAgesFromReceipt(t *testing.T) {
	a, clock := newTestApp(t, false) // TTL one minute
	_, ok := applyRec(a, Record{App: "APP", ID: "x-1", Deleted: true,
		Version: hlcAt(clock.Now().Add(24*time.Hour), "peer")})
	assert.False(t, ok)
	require.Contains(t, a.tombstones.ids(), "x-1")
	clock.Advance(DefaultHLCMaxAhead + time.Minute + 2*time.Second)
	a.collectTombstones()
	clock.Advance(time.Minute) // past the pack's age too
	a.collectTombstones()
	assert.NotContains(t, a.tombstones.ids(), "x-1", "gone a TTL after receipt plus the tolerance")
	assert.Empty(t, a.records(), "and not shipped as live")
}

// emptyRecordBatch applies, on a real registry, a batch of three live
// records of which the middle one carries no instance (the wire decodes
// such a record), and returns the registry's sink.
func emptyRecordBatch(t *testing.T) *recordingSink {
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) { c.Sinks = []Sink{sink} })
	now := time.Now()
	rec := func(id string) Record {
		return Record{App: "APP", ID: id, Version: hlcAt(now, "peer"), LastRenewal: now.UnixMilli(),
			Instance: regInstance("APP", id, 30)}
	}
	empty := Record{App: "APP", ID: "x-2", Version: hlcAt(now, "peer"), LastRenewal: now.UnixMilli()}
	_, _ = r.ApplyRecords(t.Context(), "APP", []Record{rec("x-1"), empty, rec("x-3")}, false)
	_, err := r.ApplyRecords(t.Context(), "APP", nil, false)
	require.NoError(t, err, "the actor still answers")
	return sink
}

// A live record without an instance is skipped: the records around it
// are applied and reach the sinks.
func TestEmptyRecordSkipped(t *testing.T) {
	sink := emptyRecordBatch(t)
	assert.True(t, sink.has(Key{App: "APP", ID: "x-1"}, ActionAdded), "the record before it reaches the sinks")
	assert.True(t, sink.has(Key{App: "APP", ID: "x-3"}, ActionAdded), "and the one after it")
	assert.Error(t, ValidateRecord(Record{App: "APP", ID: "x-2"}))
	assert.NoError(t, ValidateRecord(Record{App: "APP", ID: "x-2", Deleted: true}))
}

// A peer's record with a lease longer than MaxLeaseDurationSecs is
// refused: it would overflow time.Duration or keep tombstones for ever.
func TestAbsurdLeaseRecordRefused(t *testing.T) {
	in := regInstance("APP", "x-1", 30)
	in.LeaseInfo.DurationSecs = 1 << 40
	assert.Error(t, ValidateRecord(Record{App: "APP", ID: "x-1", Instance: in}))
	in.LeaseInfo.DurationSecs = MaxLeaseDurationSecs
	assert.NoError(t, ValidateRecord(Record{App: "APP", ID: "x-1", Instance: in}))
}
