package view

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// checkList requires l to hold exactly want (sorted by id), in leaves of
// leafMin to leafMax pieces (one leaf of any size when it is the only one).
func checkList(t *testing.T, l pieceList, want map[string]*piece, step string) {
	t.Helper()
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	got := make([]string, 0, l.Len())
	for p := range l.all() {
		got = append(got, p.inst.ID())
		require.Same(t, want[p.inst.ID()], p, "%s: piece of %s", step, p.inst.ID())
	}
	require.Equal(t, ids, got, step)
	require.Equal(t, len(ids), l.Len(), step)
	for k, lf := range l.leaves {
		require.NotEmpty(t, lf, "%s: leaf %d", step, k)
		require.LessOrEqual(t, len(lf), leafMax, "%s: leaf %d", step, k)
		if len(l.leaves) > 1 {
			require.GreaterOrEqual(t, len(lf), leafMin, "%s: leaf %d", step, k)
		}
	}
	for _, id := range ids {
		require.Same(t, want[id], l.find(id), "%s: find %s", step, id)
	}
	require.Nil(t, l.find("zz-absent"), step)
}

// A piece list behaves as a sorted map of instance id to piece under random
// inserts, replacements, removals and filters, keeps its leaves between
// leafMin and leafMax, and never writes a leaf it published.
func TestPieceListMatchesASortedMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var l pieceList
		want := map[string]*piece{}
		var published [][]*piece // every leaf seen, with a copy of what it held
		var copies [][]*piece
		for step := range 3000 {
			id := fmt.Sprintf("i-%04d", rng.IntN(600))
			name := fmt.Sprintf("seed %d step %d", seed, step)
			switch r := rng.IntN(100); {
			case r < 55:
				p := newPiece(testInst("A", id, actors.StatusUp))
				l = l.set(p)
				want[id] = p
			case r < 95:
				var ok bool
				l, ok = l.remove(id)
				_, had := want[id]
				require.Equal(t, had, ok, name)
				delete(want, id)
			default:
				prefix := fmt.Sprintf("i-0%d", rng.IntN(6))
				l = l.filter(func(p *piece) bool { return strings.HasPrefix(p.inst.ID(), prefix) })
				for id := range want {
					if strings.HasPrefix(id, prefix) {
						delete(want, id)
					}
				}
			}
			checkList(t, l, want, name)
			for _, lf := range l.leaves {
				published = append(published, lf)
				copies = append(copies, slices.Clone(lf))
			}
		}
		for i := range published {
			require.Equal(t, copies[i], published[i], "seed %d: a published leaf was written", seed)
		}
	}
}

// listOf cuts a sorted run into valid leaves for every length.
func TestPieceListOf(t *testing.T) {
	for n := range 4 * leafMax {
		ps := testPieces(n)
		want := map[string]*piece{}
		for _, p := range ps {
			want[p.inst.ID()] = p
		}
		checkList(t, listOf(ps), want, fmt.Sprintf("%d pieces", n))
	}
}

// A change copies one leaf (two when it splits or merges), not the list's
// pieces: every other leaf of the new list is the old one.
func TestPieceListChangeSharesLeaves(t *testing.T) {
	l := listOf(testPieces(1000))
	for _, change := range []func(pieceList) pieceList{
		func(l pieceList) pieceList { return l.set(newPiece(testInst("A", "i-00500", actors.StatusDown))) },
		func(l pieceList) pieceList { return l.set(newPiece(testInst("A", "i-00500a", actors.StatusUp))) },
		func(l pieceList) pieceList { n, _ := l.remove("i-00250"); return n },
	} {
		n := change(l)
		old := map[**piece]bool{}
		for _, lf := range l.leaves {
			old[&lf[0]] = true
		}
		fresh := 0
		for _, lf := range n.leaves {
			if !old[&lf[0]] {
				fresh++
			}
		}
		assert.LessOrEqual(t, fresh, 2)
		assert.GreaterOrEqual(t, fresh, 1)
		l = n
	}
}
