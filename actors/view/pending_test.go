package view

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// modelDelta is the delta document of the line encoder that the changes in
// last (per application and id, the latest state) give in snapshot s:
// every changed instance once, applications and ids in order.
func modelDelta(s *Snapshot, last map[string]map[string]*actors.Instance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "json apps versions=%d hash=%s\n", s.Version(), s.HashCode())
	for i, app := range slices.Sorted(maps.Keys(last)) {
		if i > 0 {
			b.WriteString("--\n")
		}
		fmt.Fprintf(&b, "app %s\n", app)
		for _, id := range slices.Sorted(maps.Keys(last[app])) {
			in := last[app][id]
			fmt.Fprintf(&b, " %s %s %s\n", id, in.Status, in.ActionType)
		}
	}
	b.WriteString("end\n")
	return b.String()
}

// pendingModel applies random registrations, changes and cancels (more
// than maxPending, so writes settle the pending list too) to a view and
// returns where the delta differed from the model: its document and its
// length, checked every few writes and at the end. settleEachWrite reads
// the delta's length after every write, so that every snapshot is settled
// by a reader and the next write starts from that; readers runs goroutines
// that read the delta while the writes go on.
func pendingModel(t *testing.T, seed uint64, settleEachWrite bool, readers int) (mismatches []string) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	rng := rand.New(rand.NewPCG(seed, 5))
	last := map[string]map[string]*actors.Instance{}
	live := map[string]bool{}
	statuses := []actors.Status{actors.StatusUp, actors.StatusDown, actors.StatusStarting, actors.StatusOutOfService}

	done := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				s := v.Snapshot()
				s.Delta(FormatJSON, false)
				s.Delta(FormatXML, true)
				_ = s.DeltaLen()
			}
		})
	}
	defer func() {
		close(done)
		wg.Wait()
	}()

	steps := 3*maxPending + 17
	for step := range steps {
		app := fmt.Sprintf("APP%d", rng.IntN(7))
		id := fmt.Sprintf("i%03d", rng.IntN(60))
		key := app + "/" + id
		var in *actors.Instance
		switch {
		case live[key] && rng.IntN(3) == 0:
			in = f.remove(app, id)
			delete(live, key)
		case live[key]:
			in = f.modify(app, id, statuses[rng.IntN(len(statuses))])
		default:
			in = f.add(app, id, statuses[rng.IntN(len(statuses))])
			live[key] = true
		}
		if last[app] == nil {
			last[app] = map[string]*actors.Instance{}
		}
		last[app][id] = in
		if settleEachWrite {
			_ = v.Snapshot().DeltaLen()
		}
		if step%41 == 0 || step == steps-1 {
			s := v.Snapshot()
			want := 0
			for _, ids := range last {
				want += len(ids)
			}
			if got := s.DeltaLen(); got != want {
				mismatches = append(mismatches, fmt.Sprintf("step %d: DeltaLen %d, want %d", step, got, want))
			}
			if got, exp := string(s.Delta(FormatJSON, false)), modelDelta(s, last); got != exp {
				mismatches = append(mismatches, fmt.Sprintf("step %d: delta\n%s\nwant\n%s", step, got, exp))
			}
		}
	}
	return mismatches
}

// The delta with pending changes shows what a delta rebuilt at every write
// would: each changed instance once, in its latest state, whether the
// pending changes are settled by the first read of each snapshot, by the
// write that fills the list, or by readers racing the writes.
func TestPendingDeltaMatchesAModel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settle   bool
		readers  int
		seedBase uint64
	}{
		{"settled by the writes", false, 0, 1},
		{"settled by a read after every write", true, 0, 11},
		{"read while written", false, 2, 21},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := tc.seedBase; seed < tc.seedBase+3; seed++ {
				m := pendingModel(t, seed, tc.settle, tc.readers)
				require.Empty(t, m, "seed %d", seed)
			}
		})
	}
}

// A write leaves its piece pending, and the first read of the delta
// settles the snapshot once: the next write starts from the settled groups
// (the same objects), so a read costs one settling per snapshot.
func TestPendingSettledOncePerSnapshot(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	f.add("B", "b1", actors.StatusUp)
	s := v.Snapshot()
	require.NotNil(t, s.pending, "the writes wait in the pending list")
	assert.Equal(t, 2, s.pending.n)
	g := s.deltaApp("A")
	require.NotNil(t, g)
	assert.Same(t, g, s.deltaApp("A"), "settled once, then read from the snapshot")

	f.add("B", "b2", actors.StatusUp)
	n := v.Snapshot()
	assert.Equal(t, 1, n.pending.n, "the next write starts from the settled delta")
	assert.Same(t, g, n.deltaApp("A"), "and shares the groups it did not change")
	assert.Equal(t, 3, n.DeltaLen())
}

// The write that makes the pending list maxPending long settles it: the
// list never grows past that, whether or not anyone reads the delta.
func TestPendingListBounded(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	for i := range 2*maxPending + 3 {
		f.add(fmt.Sprintf("APP%d", i%5), fmt.Sprintf("i%05d", i), actors.StatusUp)
		if p := v.Snapshot().pending; p != nil {
			require.Less(t, p.n, maxPending)
		}
	}
	s := v.Snapshot()
	assert.Equal(t, 3, s.pending.n, "two settlings, three writes since")
	assert.Equal(t, 2*maxPending, s.delta.n, "settled")
	assert.Equal(t, 2*maxPending+3, s.DeltaLen())
}
