package actors

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ids returns the ids of s's live tombstones, sorted.
func (s *tombstoneSet) ids() []string {
	var out []string
	for id := range s.all() {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// middles returns the middles of p's ids, in order, concatenated.
func (p *tombstonePack) middles() string {
	var b strings.Builder
	for i := range p.starts {
		b.WriteString(p.middle(i))
	}
	return b.String()
}

// mustTombstone returns id's tombstone in a.
func mustTombstone(t *testing.T, a *appState, id string) tombstone {
	t.Helper()
	tomb, ok := a.tombstones.get(id)
	require.True(t, ok, "no tombstone for %s", id)
	return tomb
}

// newTestSet is a set packing every 10 ms of deletion time, aged by clock.
func newTestSet() *tombstoneSet {
	return &tombstoneSet{packAge: 10, deletedAt: func(_ string, t tombstone) int64 { return HLCMillis(t.clock) }}
}

func tombAt(ms int64, dirty int64) tombstone {
	return tombstone{clock: uint64(ms) << hlcLogicalBits, dirty: dirty}
}

// A pack stores its ids without the prefix and suffix they share, and
// still finds each of them, and only them, even where one id's middle is a
// prefix of another's or the shared ends would overlap in the shortest id.
func TestTombstonePackSharedEnds(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 300 {
		s := newTestSet()
		want := map[string]bool{}
		n := 1 + rng.Intn(40)
		for len(want) < n {
			// ids over a small alphabet, with a common head and tail,
			// so that middles are often prefixes of one another
			var b strings.Builder
			b.WriteString("10.")
			for range rng.Intn(4) {
				b.WriteByte("ab."[rng.Intn(3)])
			}
			if rng.Intn(2) == 0 {
				b.WriteString(":a")
			}
			want[b.String()] = true
		}
		for id := range want {
			s.put(strings.Clone(id), tombAt(100, 1), 100)
		}
		s.pack()
		require.Len(t, s.packs, 1)
		p := s.packs[0]
		for id := range want {
			require.True(t, strings.HasPrefix(id, p.prefix) && strings.HasSuffix(id, p.suffix), "round %d: %q", round, id)
			_, ok := s.get(id)
			require.True(t, ok, "round %d: %q is found (prefix %q, suffix %q)", round, id, p.prefix, p.suffix)
		}
		for _, other := range []string{"", "10", "10.", "10.:a", "10.a", "10.ab:a", "10.b.", "10..:a", "x10.a", "10.a:ax"} {
			_, ok := s.get(other)
			require.Equal(t, want[other], ok, "round %d: %q", round, other)
		}
		require.Len(t, s.ids(), len(want))
		for _, id := range s.ids() {
			require.True(t, want[id], "round %d: all yields %q", round, id)
		}
	}
}

// A packed tombstone reads back as it was put, whatever its fields: clocks
// anywhere in their range (a pack's span is unbounded when peers send old
// deletions), any dirty timestamp a client sent, any node, either cause.
func TestTombstoneRecordsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	clocks := []uint64{1, 2, 1 << 16, uint64(1_754_500_000_000) << hlcLogicalBits, math.MaxUint64 - 1, math.MaxUint64}
	dirties := []int64{0, 1, -1, math.MinInt64, math.MaxInt64, 1_754_500_000_000, -1_754_500_000_000}
	nodes := []nodeID{0, 1, 255, 1 << 20, math.MaxUint32}
	for round := 0; round < 50; round++ {
		s := newTestSet()
		want := map[string]tombstone{}
		for i := 0; i < 100; i++ {
			tb := tombstone{clock: clocks[rng.Intn(len(clocks))], dirty: dirties[rng.Intn(len(dirties))],
				node: nodes[rng.Intn(len(nodes))], evicted: rng.Intn(2) == 0}
			if rng.Intn(2) == 0 { // near values, as most are
				tb.clock = uint64(1_754_500_000_000+rng.Int63n(600_000))<<hlcLogicalBits | uint64(rng.Intn(1<<hlcLogicalBits))
				tb.dirty = HLCMillis(tb.clock) - rng.Int63n(1_000_000) + 1000
			}
			id := fmt.Sprintf("10.0.%d.%d:app:8080", round, i)
			want[id] = tb
			s.put(id, tb, 100)
		}
		s.pack()
		require.Len(t, s.packs, 1)
		for id, tb := range want {
			got, ok := s.get(id)
			require.True(t, ok, id)
			require.Equal(t, tb, got, "round %d: %s", round, id)
		}
		n := 0
		for id := range want {
			if n++; n%2 == 0 {
				s.drop(id)
				delete(want, id)
			}
		}
		got := map[string]tombstone{}
		for id, tb := range s.all() {
			got[id] = tb
		}
		require.Equal(t, want, got, "round %d: all yields the live ones as put", round)
	}
}

// Tombstones are found, replaced and dropped alike in the map and in the
// packs, an id is live in one place only, and the count follows.
func TestTombstoneSetPacks(t *testing.T) {
	s := newTestSet()
	s.put("b", tombAt(100, 1), 100)
	s.put("a", tombAt(101, 2), 101)
	s.put("c", tombAt(105, 3), 105)
	require.Empty(t, s.packs, "recent is younger than packAge")
	s.put("d", tombAt(110, 4), 110) // recent began at 100: packed first
	require.Len(t, s.packs, 1)
	assert.Equal(t, "abc", s.packs[0].middles(), "sorted")
	assert.Equal(t, int64(105), s.packs[0].newest)
	assert.Equal(t, []string{"a", "b", "c", "d"}, s.ids())
	assert.Equal(t, 4, s.len())

	got, ok := s.get("b")
	require.True(t, ok)
	assert.Equal(t, int64(1), got.dirty)
	_, ok = s.get("bb")
	assert.False(t, ok)
	_, ok = s.get("")
	assert.False(t, ok)

	s.put("b", tombAt(120, 9), 120) // a packed id put again: moved to recent
	got, _ = s.get("b")
	assert.Equal(t, int64(9), got.dirty)
	assert.Equal(t, 4, s.len(), "still one tombstone for b")
	assert.Equal(t, []string{"a", "b", "c", "d"}, s.ids())

	s.drop("a") // packed
	s.drop("d") // recent
	s.drop("x") // none
	assert.Equal(t, []string{"b", "c"}, s.ids())
	assert.Equal(t, 2, s.len())
	_, ok = s.get("a")
	assert.False(t, ok)
}

// A pack goes whole once its newest tombstone is older than the TTL,
// recent entries one by one; collecting packs a recent map that is old
// enough; the due time is when the next of them goes.
func TestTombstoneSetCollects(t *testing.T) {
	s := newTestSet()
	for i, id := range []string{"p1", "p2", "p3"} {
		s.put(id, tombAt(int64(100+i), 0), int64(100+i))
	}
	s.put("r1", tombAt(115, 0), 115) // packs p1..p3 (newest 102)
	s.put("r2", tombAt(118, 0), 118)
	require.Len(t, s.packs, 1)

	due, ok := s.collect(150, 50) // nothing older than 100; r1 and r2 are packed
	require.True(t, ok)
	assert.Equal(t, int64(152), due, "the first pack goes when its newest expires")
	require.Len(t, s.packs, 2)
	assert.Equal(t, 5, s.len())

	s.put("r3", tombAt(120, 0), 120)
	due, ok = s.collect(153, 50) // p3 (102) expired: the first pack goes
	require.True(t, ok)
	require.Len(t, s.packs, 2)
	assert.Equal(t, "r", s.packs[0].prefix, "the ids' shared prefix, stored once")
	assert.Equal(t, "12", s.packs[0].middles())
	assert.Equal(t, "r3", s.packs[1].prefix+s.packs[1].middles()+s.packs[1].suffix)
	assert.Equal(t, []string{"r1", "r2", "r3"}, s.ids())
	assert.Equal(t, int64(168), due, "when the r1, r2 pack goes")

	_, ok = s.collect(166, 50) // r1 (115) expired, but its pack stays until r2 does
	require.True(t, ok)
	assert.Equal(t, []string{"r1", "r2", "r3"}, s.ids(), "expired, not yet collected: read as expired")
	due, ok = s.collect(169, 50)
	require.True(t, ok)
	assert.Equal(t, []string{"r3"}, s.ids())
	assert.Equal(t, int64(170), due)
	_, ok = s.collect(171, 50)
	assert.False(t, ok, "none left")
	assert.Zero(t, s.len())
	assert.Empty(t, s.ids())
}

// Packed, a tombstone costs less than a map entry does even at the map's
// fullest: the bound is what churn may retain per deletion for the
// tombstone TTL (the memory goals). A map's cost per entry follows its load, which
// its hash seed moves: 87 B here on most runs, 72 B on one CI run. The
// packed form's does not move: 57 B with whole ids, 44 B without the
// prefix and suffix that a pack's ids share.
func TestTombstoneSetMemory(t *testing.T) {
	const n = 200_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("10.%d.%d.%d:orders:8080", i>>16, (i>>8)&255, i&255)
	}
	measure := func(packAge int64) float64 {
		s := &tombstoneSet{packAge: packAge, deletedAt: func(_ string, t tombstone) int64 { return HLCMillis(t.clock) }}
		before := liveHeap()
		for i, id := range ids {
			// A deletion every 3 ms, of an instance registered 2 s before,
			// so that a pack spans what it does in production (a tenth
			// of the TTL, 60 s).
			ms := int64(1_754_500_000_000 + 3*i)
			s.put(strings.Clone(id), tombAt(ms, ms-2000), ms)
		}
		per := float64(liveHeap()-before) / n
		runtime.KeepAlive(s)
		runtime.KeepAlive(ids)
		return per
	}
	mapped := measure(math.MaxInt64) // never packed: all in the map
	packed := measure(60_000)        // ten packs
	// A map at its fullest (7 of 8 slots used) holds an entry in a slot
	// of key and value plus a control byte, and the key's bytes apart.
	slot := float64(unsafe.Sizeof("") + unsafe.Sizeof(tombstone{}) + 1)
	fullest := slot*8/7 + 24 // the 20-byte ids take 24-byte blocks
	t.Logf("per tombstone: %.0f B in the map (%.0f B at its fullest), %.0f B packed", mapped, fullest, packed)
	assert.GreaterOrEqual(t, mapped, fullest*0.8, "the map measured well below its fullest: the measurement is off")
	assert.Less(t, packed, 30.0, "ids stored whole took 57 B; stripped of their shared ends, beside 24-byte tombstones, 42 B")
	assert.Less(t, packed, fullest*0.85)
}

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// What a node holds per instance and per deletion stays within its size
// class: a million instances hold a million leases, and churn millions of
// tombstones (the memory goals).
func TestPerInstanceStructsFitTheirSizeClasses(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(lease{}), uintptr(112))
	assert.LessOrEqual(t, unsafe.Sizeof(tombstone{}), uintptr(24))
}
