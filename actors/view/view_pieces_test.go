package view

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/benbjohnson/immutable"

	"github.com/heureka/heureka/actors"
)

// The delta and the registry document show the same bytes for an instance
// state: the delta entry and the application share one piece, encoded once.
func TestDeltaSharesPiecesWithApps(t *testing.T) {
	v, _, lines := testView(t, nil)
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	f.add("A", "a2", actors.StatusUp)
	s := v.Snapshot()
	s.Full(FormatJSON, false)
	require.Equal(t, 2, lines[FormatJSON].encodes("A"))
	s.Delta(FormatJSON, false)
	s.VIP("a", FormatJSON, false)
	assert.Equal(t, 2, lines[FormatJSON].encodes("A"), "the delta and the VIP document reuse the instances' bytes")
	assert.Same(t, dataPtr(firstPiece(s.App("A")).peek(FormatJSON)), dataPtr(firstPiece(s.deltaApp("A")).peek(FormatJSON)))

	// A write encodes nothing; the next read encodes the changed instance
	// once for every document.
	f.modify("A", "a1", actors.StatusDown)
	assert.Equal(t, 2, lines[FormatJSON].encodes("A"), "writes encode nothing")
	s = v.Snapshot()
	s.Full(FormatJSON, false)
	s.Delta(FormatJSON, false)
	s.VIP("a", FormatJSON, false)
	assert.Equal(t, 3, lines[FormatJSON].encodes("A"))
	assert.Zero(t, lines[FormatXML].encodes("A"), "formats nobody reads are not encoded")
}

// Gzip-only readers keep no plain instance bytes.
func TestGzipKeepsNoPlainPieces(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	s := v.Snapshot()
	s.Full(FormatJSON, true)
	assert.Nil(t, firstPiece(s.App("A")).peek(FormatJSON))
	assert.Equal(t, string(s.Full(FormatJSON, false)), string(gunzip(t, s.Full(FormatJSON, true))))
}

// The delta holds a churned instance once, and pruning drops an instance
// only when its latest change expired; applications that lose nothing keep
// their cached parts.
func TestPruneDropsExpiredInstances(t *testing.T) {
	v, clock, _ := testView(t, func(c *Config) { c.DeltaRetention = time.Minute })
	f := newFeeder(v)
	f.add("OLD", "o1", actors.StatusUp)
	clock.Advance(2 * time.Minute)
	for i := 0; i < 5; i++ {
		f.add("A", "a1", actors.StatusUp)
		f.remove("A", "a1")
	}
	f.add("B", "b1", actors.StatusUp)
	require.Equal(t, 3, v.Snapshot().DeltaLen(), "o1, a1 and b1, each once")
	assert.Equal(t, "json apps versions=13 hash=UP_2_\n"+
		"app A\n a1 UP DELETED\n--\napp B\n b1 UP ADDED\n--\napp OLD\n o1 UP ADDED\nend\n",
		string(v.Snapshot().Delta(FormatJSON, false)))
	b := v.Snapshot().delta

	v.PruneDelta()
	s := v.Snapshot()
	assert.Equal(t, 2, s.DeltaLen(), "o1 expired; a1's last change and b1 remain")
	assert.Equal(t, "json apps versions=14 hash=UP_2_\n"+
		"app A\n a1 UP DELETED\n--\napp B\n b1 UP ADDED\nend\n", string(s.Delta(FormatJSON, false)))
	bA := b.Get("A")
	sA := s.delta.Get("A")
	assert.Same(t, bA, sA, "the applications that lost nothing keep their cached parts")
}

// The VIP index (applications per address, with counts) gives the same
// documents as filtering every instance, under random changes of addresses.
func TestVIPIndexMatchesFiltering(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	rnd := rand.New(rand.NewSource(5))
	vips := []string{"", "x", "y", "x,y", "y,x,x", "z,", ",x"}
	for step := 0; step < 400; step++ {
		app := fmt.Sprintf("APP%d", rnd.Intn(3))
		id := fmt.Sprintf("i%d", rnd.Intn(6))
		if rnd.Intn(4) == 0 {
			f.remove(app, id)
		} else {
			f.apply(actors.ActionAdded, vipInst(app, id, actors.StatusUp, vips[rnd.Intn(len(vips))], vips[rnd.Intn(len(vips))]))
		}
		s := v.Snapshot()
		for _, name := range []string{"x", "y", "z"} {
			want := newFeederless(s, name, func(i *actors.Instance) string { return i.VIPAddress })
			require.Equal(t, want, string(s.VIP(name, FormatJSON, false)), "step %d vip %s", step, name)
			want = newFeederless(s, name, func(i *actors.Instance) string { return i.SecureVIPAddress })
			require.Equal(t, want, string(s.SVIP(name, FormatJSON, false)), "step %d svip %s", step, name)
			// A group lists exactly the applications with an instance
			// that lists the address.
			for _, idx := range []struct {
				m     *immutable.Map[string, *Group]
				field func(*actors.Instance) string
			}{{s.vips, vipOf}, {s.svips, svipOf}} {
				var want []string
				s.Apps(func(a *App) bool {
					for in := range a.All() {
						if listsAddress(idx.field(in), name) {
							want = append(want, a.Name())
							break
						}
					}
					return true
				})
				g, _ := idx.m.Get(name)
				var got []string
				if g != nil {
					got = g.apps
				}
				require.Equal(t, want, got, "step %d: group %s", step, name)
			}
		}
	}
}

// newFeederless builds a VIP document by filtering every instance of s.
func newFeederless(s *Snapshot, name string, field func(*actors.Instance) string) string {
	enc := s.enc[FormatJSON]
	var counts [len(actors.AllStatuses)]int
	var body []byte
	first := true
	s.Apps(func(a *App) bool {
		var insts []*actors.Instance
		for _, in := range a.Instances() {
			for _, n := range splitAddresses(field(in)) {
				if n == name {
					insts = append(insts, in)
					counts[statusIndex(in.Status)]++
					break
				}
			}
		}
		if len(insts) > 0 {
			if !first {
				body = enc.AppendApplicationsSeparator(body)
			}
			first = false
			body = enc.AppendApplication(body, a.Name(), insts)
		}
		return true
	})
	out := enc.AppendApplicationsOpen(nil, VIPVersionDelta, hashCode(&counts))
	return string(enc.AppendApplicationsClose(append(out, body...)))
}

// Events of one application from several goroutines (which the registry
// never sends, but the Sink contract does not forbid) still give a registry
// that holds every instance once: a change prepared against a stale
// application is recomputed under the lock.
func TestConcurrentWritersToOneApp(t *testing.T) {
	v, _, _ := testView(t, nil)
	const writers, per = 4, 100
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := newFeeder(v)
			for i := 0; i < per; i++ {
				f.add("A", fmt.Sprintf("w%d-%d", w, i), actors.StatusUp)
			}
		}()
	}
	wg.Wait()
	s := v.Snapshot()
	assert.Equal(t, writers*per, s.Count())
	assert.Len(t, s.App("A").Instances(), writers*per)
	g, _ := s.vips.Get("a")
	require.NotNil(t, g)
	assert.Equal(t, []string{"A"}, g.apps)
	assert.Equal(t, groupCounts{{"a", "A"}: writers * per}, v.vipN)
}

// staleScenario prepares a2's registration against application A, lets
// another writer add a3 before it installs, then installs it.
func staleScenario(t *testing.T) *Snapshot {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	stale := v.Snapshot().App("A")
	in := testInst("A", "a2", actors.StatusUp)
	in.ActionType = actors.ActionAdded
	c := prepare(&actors.Event{Action: actors.ActionAdded, Instance: in, Version: actors.Version{Clock: 100, Node: "n1"}}, stale, nil)
	f.add("A", "a3", actors.StatusUp) // another writer replaces A meanwhile
	v.install1(&c)
	return v.Snapshot()
}

// A change prepared against an application that another writer replaced
// before the change took the lock is recomputed: both changes survive.
func TestStalePreparedChangeIsRecomputed(t *testing.T) {
	s := staleScenario(t)
	assert.Len(t, s.App("A").Instances(), 3, "a1, a2 and a3")
	assert.Equal(t, 3, s.Count())
	assert.Equal(t, 3, s.deltaApp("A").Len(), "the delta group too")
}

// Pruning finds expired instances through the applications changed per
// tick: an instance leaves the delta once its latest change is older than
// the retention, however recently its application or other instances
// changed; one changed again since stays.
func TestPruneByTicks(t *testing.T) {
	v, clock, _ := testView(t, func(c *Config) { c.DeltaRetention = 3 * time.Minute })
	tick := 3 * time.Minute / recentTicks
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp) // at 0
	f.add("A", "a2", actors.StatusUp)
	clock.Advance(tick / 2)
	f.add("B", "b1", actors.StatusUp) // at tick/2: the same tick
	clock.Advance(time.Minute)
	f.modify("A", "a2", actors.StatusDown) // at 1 min + tick/2: a2 changed again
	f.add("A", "a3", actors.StatusUp)
	require.Equal(t, 4, v.Snapshot().DeltaLen())

	clock.Advance(2*time.Minute - tick/2) // at 3 min: nothing is older than the retention
	v.PruneDelta()
	require.Equal(t, 4, v.Snapshot().DeltaLen(), "nothing expired yet")

	clock.Advance(tick / 4) // a1 is past the retention, b1 not yet
	v.PruneDelta()
	s := v.Snapshot()
	assert.Equal(t, 3, s.DeltaLen(), "a1 expired; a2 (changed since), a3 and b1 stay")
	assert.Equal(t, "json apps versions=7 hash=DOWN_1_UP_3_\n"+
		"app A\n a2 DOWN MODIFIED\n a3 UP ADDED\n--\napp B\n b1 UP ADDED\nend\n", string(s.Delta(FormatJSON, false)))

	clock.Advance(tick / 2) // b1 is past it, in the same tick as a1
	v.PruneDelta()
	assert.Equal(t, "json apps versions=8 hash=DOWN_1_UP_3_\n"+
		"app A\n a2 DOWN MODIFIED\n a3 UP ADDED\nend\n", string(v.Snapshot().Delta(FormatJSON, false)))

	clock.Advance(time.Minute)
	v.PruneDelta()
	assert.Zero(t, v.Snapshot().DeltaLen(), "the rest expires in turn")
	assert.Len(t, v.recent, 1, "the tick the cutoff falls in stays")
	clock.Advance(tick)
	v.PruneDelta()
	assert.Empty(t, v.recent, "every tick visited and dropped")
}

// pruneRaceScenario expires two instances of each of apps applications
// and prunes them, while writes land between PruneDelta's computing the
// pruned groups and installing them: before the install, an instance added
// to every application; before the second install, another added to
// application 0 (replaced again after its group was computed anew).
func pruneRaceScenario(t *testing.T, apps int) *Snapshot {
	t.Helper()
	v, clock, _ := testView(t, nil)
	f := newFeeder(v)
	name := func(a int) string { return fmt.Sprintf("A%03d", a) }
	for a := range apps {
		f.add(name(a), "old1", actors.StatusUp)
		f.add(name(a), "old2", actors.StatusUp)
	}
	clock.Advance(4 * time.Minute)
	v.pruneComputed = func(try int) {
		switch try {
		case 0:
			for a := range apps {
				f.add(name(a), "new1", actors.StatusUp)
			}
		case 1:
			f.add(name(0), "new2", actors.StatusUp)
		}
	}
	v.PruneDelta()
	return v.Snapshot()
}

// Pruning computes the groups outside the lock and installs them a batch
// at a time; what a write added meanwhile stays in the delta, and only the
// expired pieces go.
func TestPruneKeepsWritesMadeWhilePruning(t *testing.T) {
	const apps = 3*pruneBatch + 5
	s := pruneRaceScenario(t, apps)
	assert.Equal(t, apps+1, s.DeltaLen(), "new1 in every application, new2 in the first")
	n := 0
	for g := range s.delta.All() {
		ids := []string{}
		for p := range g.pieces.All() {
			ids = append(ids, p.key())
		}
		want := []string{"new1"}
		if g.name == "A000" {
			want = []string{"new1", "new2"}
		}
		assert.Equal(t, want, ids, g.name)
		n++
	}
	assert.Equal(t, apps, n)
	assert.Equal(t, 3*apps+1, s.Count(), "the registry keeps every instance")
}

// A piece stays in the 80-byte size class: one per registered instance
// and one per instance in the delta (the memory goals). It was 64 B before it could
// hold a packed state: the 16 B that a deleted state's string header adds
// to every piece are repaid many times over by each deleted state's packing
// (about 320 B less per churned pair, TestChurnRetainsOneStatePerInstance).
func TestPieceFitsItsSizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(piece{}), uintptr(80))
}
