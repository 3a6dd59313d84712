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
