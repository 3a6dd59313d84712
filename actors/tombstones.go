package actors

import (
	"encoding/binary"
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/heureka/heureka/internal/sabotage"
)

// tombstoneSet is one application's tombstones, kept for the tombstone TTL.
//
// Under churn a node holds one per deletion of the last TTL: at 4,000
// deletions a second and the default 10 minutes, 2.4 million. In a map
// each costs over 100 bytes (its slot at the map's load, and its id as a
// string of its own), so the set keeps only the newest in a map. Once the
// oldest of those is a tenth of the TTL old, they are packed into an
// immutable pack: one string of records, sorted by id, each the id
// without the prefix and suffix that all share (an application's ids
// differ in a few characters: "10.1.2.3:orders:8080") and the tombstone in
// about a dozen bytes instead of 24; about 25 bytes each with its offset.
// A pack goes whole
// once its newest tombstone expires (its expired ones are found until then
// and are treated as expired, like a map entry not yet collected), so a
// set holds about eleven packs, each searched by bisection.
//
// An id is live in at most one place: putting it drops it from the packs.
// Only the application's actor uses a set.
type tombstoneSet struct {
	// packAge is how old recent's oldest entry gets before recent is
	// packed (ms).
	packAge int64
	// deletedAt is a tombstone's deletion time (epoch ms), which ages it.
	deletedAt func(id string, t tombstone) int64

	recent map[string]tombstone
	// recentSince is when recent's oldest entry was put (epoch ms).
	recentSince int64
	packs       []*tombstonePack // oldest first
	n           int              // live tombstones in recent and packs
}

// tombstonePack is a packed, sorted run of tombstones, one string of
// records. A record is its id's middle, preceded by the middle's length
// (uvarint), then its tombstone in a dozen bytes or so: the clock as its
// distance above the pack's smallest clock (uvarint; a pack spans a tenth
// of the TTL, some 5 bytes), the node, evicted and whether dirty is set in
// one uvarint (node<<2 | evicted<<1 | dirty set), and a set dirty as its
// distance below the clock's milliseconds (zigzag uvarint, wrapping: any
// int64 comes back). Records are never moved; a dropped one is marked in
// dead.
type tombstonePack struct {
	// prefix and suffix are what every id of the pack begins and ends
	// with, not overlapping in any; an id's middle is the rest.
	prefix, suffix string
	recs           string   // the records, in order of their middles
	starts         []uint32 // starts[i] is where the i-th record begins
	base           uint64   // the smallest clock of the pack
	dead           []uint64 // bit i: the i-th tombstone was dropped
	// newest is the latest deletion time of the pack's tombstones (epoch
	// ms): the pack expires with it.
	newest int64
	live   int
}

// appendRecord appends the record of middle mid and tombstone t to dst,
// its clock stored above base.
func appendRecord(dst []byte, mid string, t tombstone, base uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(mid)))
	dst = append(dst, mid...)
	dst = binary.AppendUvarint(dst, t.clock-base)
	flags := uint64(t.node) << 2
	if t.evicted {
		flags |= 2
	}
	if t.dirty == 0 {
		return binary.AppendUvarint(dst, flags)
	}
	dst = binary.AppendUvarint(dst, flags|1)
	d := HLCMillis(t.clock) - t.dirty // wraps for a far dirty; the reader wraps back
	return binary.AppendUvarint(dst, uint64(d<<1)^uint64(d>>63))
}

// uvarintAt reads the uvarint at s[i:] and returns it and where it ends.
// The pack wrote s, so it is well formed.
func uvarintAt(s string, i int) (uint64, int) {
	var x uint64
	for shift := 0; ; shift += 7 {
		b := s[i]
		i++
		if b < 0x80 {
			return x | uint64(b)<<shift, i
		}
		x |= uint64(b&0x7f) << shift
	}
}

// middle returns the middle of the pack's i-th id.
func (p *tombstonePack) middle(i int) string {
	n, at := uvarintAt(p.recs, int(p.starts[i]))
	return p.recs[at : at+int(n)]
}

// tombstone returns the pack's i-th tombstone.
func (p *tombstonePack) tombstone(i int) tombstone {
	n, at := uvarintAt(p.recs, int(p.starts[i]))
	clock, at := uvarintAt(p.recs, at+int(n))
	flags, at := uvarintAt(p.recs, at)
	t := tombstone{clock: p.base + clock, node: nodeID(flags >> 2), evicted: flags&2 != 0}
	if flags&1 != 0 {
		z, _ := uvarintAt(p.recs, at)
		t.dirty = HLCMillis(t.clock) - (int64(z>>1) ^ -int64(z&1))
	}
	return t
}

// isDead reports whether the pack's i-th tombstone was dropped.
func (p *tombstonePack) isDead(i int) bool { return p.dead[i/64]&(1<<(i%64)) != 0 }

// id returns the pack's i-th id, joined from its parts when the pack
// strips any.
func (p *tombstonePack) id(i int) string {
	if p.prefix == "" && p.suffix == "" {
		return p.middle(i)
	}
	return p.prefix + p.middle(i) + p.suffix
}

// find returns the index of id in p and whether it is there and live.
func (p *tombstonePack) find(id string) (int, bool) {
	if len(id) < len(p.prefix)+len(p.suffix) || !strings.HasPrefix(id, p.prefix) || !strings.HasSuffix(id, p.suffix) {
		return 0, false
	}
	mid := id[len(p.prefix) : len(id)-len(p.suffix)]
	lo, hi := 0, len(p.starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.middle(m) < mid {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(p.starts) && !p.isDead(lo) && p.middle(lo) == mid
}

// len returns the number of live tombstones.
func (s *tombstoneSet) len() int { return s.n }

// get returns id's tombstone.
func (s *tombstoneSet) get(id string) (tombstone, bool) {
	if t, ok := s.recent[id]; ok {
		return t, true
	}
	for _, p := range slices.Backward(s.packs) {
		if i, ok := p.find(id); ok {
			return p.tombstone(i), true
		}
	}
	return tombstone{}, false
}

// put stores t as id's tombstone at now (epoch ms), first packing recent
// if its oldest entry is packAge old.
func (s *tombstoneSet) put(id string, t tombstone, now int64) {
	if _, ok := s.recent[id]; ok {
		s.recent[id] = t
		return
	}
	s.dropPacked(id)
	if len(s.recent) > 0 && now-s.recentSince >= s.packAge {
		s.pack()
	}
	if len(s.recent) == 0 {
		if s.recent == nil {
			s.recent = map[string]tombstone{}
		}
		s.recentSince = now
	}
	s.recent[id] = t
	s.n++
}

// drop forgets id's tombstone.
func (s *tombstoneSet) drop(id string) {
	if _, ok := s.recent[id]; ok {
		delete(s.recent, id)
		s.n--
		return
	}
	s.dropPacked(id)
}

func (s *tombstoneSet) dropPacked(id string) {
	for _, p := range s.packs {
		if i, ok := p.find(id); ok {
			p.dead[i/64] |= 1 << (i % 64)
			p.live--
			s.n--
			return
		}
	}
}

// all yields every live tombstone, expired or not.
func (s *tombstoneSet) all() iter.Seq2[string, tombstone] {
	return func(yield func(string, tombstone) bool) {
		for id, t := range s.recent {
			if !yield(id, t) {
				return
			}
		}
		for _, p := range s.packs {
			for i := range p.starts {
				if !p.isDead(i) && !yield(p.id(i), p.tombstone(i)) {
					return
				}
			}
		}
	}
}

// collect forgets the tombstones that expired by now (ttl in ms): the
// expired entries of recent, and every pack whose newest tombstone expired
// (not only the oldest packs: one holding a tombstone stamped in the future
// must not keep the packs after it). It returns when the earliest
// tombstone it keeps in recent expires, or the first pack it keeps goes,
// whichever is first (epoch ms; ok false when it keeps none).
func (s *tombstoneSet) collect(now, ttl int64) (due int64, ok bool) {
	for id, t := range s.recent {
		if s.deletedAt(id, t) < now-ttl {
			delete(s.recent, id)
			s.n--
		}
	}
	if sabotage.On(sabotage.TombstonePrefixCollected) {
		// As before the fix: only a prefix of expired packs went, so one
		// pack stamped in the future kept every later one.
		drop := 0
		for drop < len(s.packs) && (s.packs[drop].newest < now-ttl || s.packs[drop].live == 0) {
			s.n -= s.packs[drop].live
			drop++
		}
		s.packs = slices.Delete(s.packs, 0, drop)
	} else {
		// Every expired pack goes, wherever it is: packs are in order of
		// packing, not of expiry (a tombstone stamped ahead of this node's
		// clock keeps its own pack only).
		s.packs = slices.DeleteFunc(s.packs, func(p *tombstonePack) bool {
			if p.newest < now-ttl || p.live == 0 {
				s.n -= p.live
				return true
			}
			return false
		})
	}
	if len(s.recent) > 0 && now-s.recentSince >= s.packAge {
		s.pack()
	}
	due, ok = 0, false
	for id, t := range s.recent {
		if d := s.deletedAt(id, t) + ttl; !ok || d < due {
			due, ok = d, true
		}
	}
	for _, p := range s.packs {
		if d := p.newest + ttl; !ok || d < due {
			due, ok = d, true
		}
	}
	return due, ok
}

// pack moves recent into a new pack.
func (s *tombstoneSet) pack() {
	ids := make([]string, 0, len(s.recent))
	for id := range s.recent {
		ids = append(ids, id)
	}
	prefix, suffix := sharedEnds(ids)
	mid := func(id string) string { return id[len(prefix) : len(id)-len(suffix)] }
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(mid(a), mid(b)) })
	p := &tombstonePack{prefix: strings.Clone(prefix), suffix: strings.Clone(suffix), base: math.MaxUint64,
		starts: make([]uint32, len(ids)), dead: make([]uint64, (len(ids)+63)/64), live: len(ids)}
	for _, t := range s.recent {
		p.base = min(p.base, t.clock)
	}
	var recs []byte
	for i, id := range ids {
		p.starts[i] = uint32(len(recs))
		t := s.recent[id]
		recs = appendRecord(recs, mid(id), t, p.base)
		p.newest = max(p.newest, s.deletedAt(id, t))
	}
	p.recs = string(recs) // a copy of the records' size, where recs grew past it
	s.packs = append(s.packs, p)
	s.recent = nil // a map does not shrink: the next put starts a new one
}

// sharedEnds returns the longest prefix that every id begins with, and the
// longest suffix that every id ends with past that prefix.
func sharedEnds(ids []string) (prefix, suffix string) {
	if len(ids) == 0 {
		return "", ""
	}
	prefix, suffix = ids[0], ids[0]
	shortest := len(ids[0])
	for _, id := range ids[1:] {
		n := 0
		for n < len(prefix) && n < len(id) && prefix[n] == id[n] {
			n++
		}
		prefix = prefix[:n]
		n = 0
		for n < len(suffix) && n < len(id) && suffix[len(suffix)-1-n] == id[len(id)-1-n] {
			n++
		}
		suffix = suffix[len(suffix)-n:]
		shortest = min(shortest, len(id))
	}
	return prefix, suffix[max(0, len(suffix)-(shortest-len(prefix))):]
}
