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
	t.Logf("%d tombstones held of 6001 put, TTL 600 ms", n)
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

// partitionedPair is two nodes' application cores on clocks that move
// together: b holds a client's lease, a has its copy.
type partitionedPair struct {
	a, b   *appState
	clocks [2]*ManualClock
}

func newPartitionedPair(t *testing.T, leaseSecs int, ttl, slack time.Duration) *partitionedPair {
	t.Helper()
	a, ca := newTestApp(t, false)
	b, cb := newTestApp(t, false)
	b.opts.node = "node-b"
	for _, s := range []*appState{a, b} {
		s.opts.tombstoneTTL, s.opts.tombstoneSlack = ttl, slack
	}
	p := &partitionedPair{a: a, b: b, clocks: [2]*ManualClock{ca, cb}}
	in := testInstance("x-1", StatusUp)
	in.LeaseInfo.DurationSecs = leaseSecs
	b.register(in, false)
	p.sync(b, a)
	require.Contains(t, a.leases, "x-1")
	return p
}

func (p *partitionedPair) advance(d time.Duration) {
	for _, c := range p.clocks {
		c.Advance(d)
	}
}

// sync applies every record of from at to and returns the outcomes.
func (p *partitionedPair) sync(from, to *appState) []ApplyResult {
	var out []ApplyResult
	for _, r := range from.records() {
		_, res := to.applyRecord(r, false)
		out = append(out, res)
	}
	return out
}

// operatorWrites are the writes an operator makes to a stale copy.
var operatorWrites = map[string]func(s *appState){
	"OUT_OF_SERVICE": func(s *appState) { s.setStatus("x-1", StatusOutOfService, nil, false) },
	"override removal": func(s *appState) {
		s.deleteOverride("x-1", StatusUp, nil, false) // the override was set before the partition
	},
	"metadata update": func(s *appState) { s.updateMetadata("x-1", map[string]string{"k": "v"}, false) },
}

// operatorWriteScenario: the client cancels on a during a partition
// longer than the TTL; on b an operator writes to the stale copy 5 s
// before the heal. It returns what a did with b's copy at the heal and
// whether b still holds it once a's answer reached it.
func operatorWriteScenario(t *testing.T, write func(*appState)) (ApplyResult, bool) {
	p := newPartitionedPair(t, 10, time.Minute, 0)
	p.b.setStatus("x-1", StatusOutOfService, nil, false)
	p.b.deleteOverride("x-1", StatusUp, nil, false)
	p.b.setStatus("x-1", StatusOutOfService, nil, false)
	p.sync(p.b, p.a)
	p.advance(time.Second)
	_, ok := p.a.remove("x-1", CauseCancel, false) // the partition starts: the cancel reaches a only
	require.True(t, ok)
	p.advance(2*time.Minute - 5*time.Second)
	write(p.b)
	p.advance(5 * time.Second)
	p.a.collectTombstones()
	require.Empty(t, p.a.records(), "a's tombstone expired")
	res := p.sync(p.b, p.a)
	require.Len(t, res, 1)
	for _, r := range p.a.records() { // a's answer
		p.b.applyRecord(r, false)
	}
	return res[0], p.b.leases["x-1"] != nil
}

// An operator's write to a stale copy is no client's renewal: the copy is
// refused at the heal however recent the write, and deleted everywhere.
func TestOperatorWriteDoesNotUndoCancel(t *testing.T) {
	for name, write := range operatorWrites {
		t.Run(name, func(t *testing.T) {
			res, kept := operatorWriteScenario(t, write)
			assert.Equal(t, ApplyRefused, res, "the cancelled instance is not back")
			assert.False(t, kept, "and the refusal deletes the stale copy")
		})
	}
}

// longLeaseScenario: a lease of 180 s, a tombstone TTL of 60 s (a renewal
// window and an eviction interval of 60 s each), a cancel on a and a 90 s
// partition; write, if not nil, is an operator's write on b 10 s before
// the heal. It returns what a did with b's copy and whether b still holds
// it once a's records reached it.
func longLeaseScenario(t *testing.T, write func(*appState)) (ApplyResult, bool) {
	p := newPartitionedPair(t, 180, time.Minute, 2*time.Minute)
	_, ok := p.a.remove("x-1", CauseCancel, false)
	require.True(t, ok)
	p.advance(80 * time.Second)
	if write != nil {
		write(p.b)
	}
	p.advance(10 * time.Second)
	p.a.collectTombstones()
	res := p.sync(p.b, p.a)
	require.Len(t, res, 1)
	p.sync(p.a, p.b)
	return res[0], p.b.leases["x-1"] != nil
}

// No lease a client picks outlives its tombstone: it is kept for the lease
// plus a renewal window and an eviction interval when that is longer than
// the TTL.
func TestLongLeaseDoesNotUndoCancel(t *testing.T) {
	for name, write := range map[string]func(*appState){"no write": nil, "OUT_OF_SERVICE": operatorWrites["OUT_OF_SERVICE"]} {
		t.Run(name, func(t *testing.T) {
			res, kept := longLeaseScenario(t, write)
			assert.NotEqual(t, ApplyInstalled, res, "not installed")
			assert.False(t, kept, "a's tombstone deletes b's copy")
		})
	}
	a, _ := newTestApp(t, false)
	a.opts.tombstoneSlack = 2 * time.Minute
	assert.Equal(t, time.Minute.Milliseconds(), a.tombstoneTTL(), "no lease held: the TTL")
	a.noteLease(180 * time.Second)
	assert.Equal(t, (5 * time.Minute).Milliseconds(), a.tombstoneTTL())
}
