package view

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// checkTree requires tr to hold exactly want, in key order, with every
// node but the root between the shape's min and max children, counts that
// add up and leaves all at one depth.
func checkTree[T keyed](t *testing.T, tr btree[T], want map[string]T, step string) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	got := []string{}
	for it := range tr.All() {
		got = append(got, it.key())
		require.True(t, any(want[it.key()]) == any(it), "%s: %s is not the item set", step, it.key())
	}
	require.Equal(t, keys, got, step)
	require.Equal(t, len(keys), tr.Len(), step)
	for _, k := range keys {
		require.True(t, any(want[k]) == any(tr.Get(k)), "%s: get %s is not the item set", step, k)
	}
	var zero T
	require.Equal(t, zero, tr.Get("~absent"), step)
	if tr.root == nil {
		return
	}
	s := shapeOf[T]()
	depth := -1
	var check func(n *bnode[T], d int, root bool)
	check = func(n *bnode[T], d int, root bool) {
		require.LessOrEqual(t, n.size(), s.max, step)
		if !root {
			require.GreaterOrEqual(t, n.size(), s.min, step)
		}
		if n.leaf() {
			if depth < 0 {
				depth = d
			}
			require.Equal(t, depth, d, "%s: leaves at one depth", step)
			require.Equal(t, len(n.items), n.n, step)
			require.Equal(t, n.items[0].key(), n.lo, "%s: a leaf's low key", step)
			return
		}
		require.Greater(t, len(n.kids), 1, "%s: a branch has two children or more", step)
		require.Equal(t, n.kids[0].lo, n.lo, "%s: a branch's low key", step)
		sum := 0
		for _, k := range n.kids {
			check(k, d+1, false)
			sum += k.n
		}
		require.Equal(t, sum, n.n, step)
	}
	check(tr.root, 0, true)
}

// modelTest runs random sets (new keys and replacements) and deletes on a
// btree of items made by mk, checking it against a map, and that no node
// it published is ever written.
func modelTest[T keyed](t *testing.T, mk func(key string) T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var tr btree[T]
		want := map[string]T{}
		type copied struct {
			n     *bnode[T]
			items []T
			kids  []*bnode[T]
			count int
		}
		var seen []copied
		space := 50 + rng.IntN(3000)
		appendOnly := seed%4 == 3 // growing keys, as generated ids
		for step := range 6000 {
			k := fmt.Sprintf("K-%06d", rng.IntN(space))
			if appendOnly {
				k = fmt.Sprintf("K-%06d", step)
			}
			label := fmt.Sprintf("seed %d step %d", seed, step)
			if appendOnly || rng.IntN(100) < 60 {
				it := mk(k)
				tr = tr.Set(it)
				want[k] = it
			} else {
				var found bool
				tr, found = tr.Delete(k)
				_, had := want[k]
				require.Equal(t, had, found, label)
				delete(want, k)
			}
			if step%50 == 0 || step > 5900 {
				checkTree(t, tr, want, label)
			}
			if step%200 == 0 && tr.root != nil {
				var walk func(n *bnode[T])
				walk = func(n *bnode[T]) {
					seen = append(seen, copied{n, slices.Clone(n.items), slices.Clone(n.kids), n.n})
					for _, k := range n.kids {
						walk(k)
					}
				}
				walk(tr.root)
			}
		}
		for _, c := range seen {
			// By identity: items with equal contents (a replacement of
			// an item by an equal one) must not pass for the same.
			require.True(t, samePointers(c.items, c.n.items), "seed %d: a published node's items were written", seed)
			require.True(t, slices.Equal(c.kids, c.n.kids), "seed %d: a published node's children were written", seed)
			require.Equal(t, c.count, c.n.n, "seed %d: a published node was written", seed)
		}
		for k := range want {
			tr, _ = tr.Delete(k)
		}
		checkTree(t, tr, map[string]T{}, "emptied")
		require.Nil(t, tr.root)
	}
}

// Trees of applications and of instances behave as sorted maps under random
// sets, replacements and deletes (and under appends of growing keys), stay
// balanced, and never write a node they published.
func TestBtreeMatchesASortedMap(t *testing.T) {
	t.Run("apps", func(t *testing.T) { modelTest(t, func(k string) *App { return &App{name: k} }) })
	t.Run("pieces", func(t *testing.T) {
		modelTest(t, func(k string) *piece { return newPiece(testInst("A", k, actors.StatusUp), actors.Version{}) })
	})
}

// A write copies the path to its leaf: every other leaf of the new tree is
// the old one (same first element).
func TestBtreeWriteSharesLeaves(t *testing.T) {
	var tr btree[*App]
	for i := range 5000 {
		tr = tr.Set(&App{name: fmt.Sprintf("APP-%05d", i)})
	}
	for _, change := range []func(btree[*App]) btree[*App]{
		func(t btree[*App]) btree[*App] { return t.Set(&App{name: "APP-02500"}) },
		func(t btree[*App]) btree[*App] { return t.Set(&App{name: "APP-02500a"}) },
		func(t btree[*App]) btree[*App] { n, _ := t.Delete("APP-01000"); return n },
	} {
		n := change(tr)
		old := map[**App]bool{}
		for lf := range tr.leaves() {
			old[&lf[0]] = true
		}
		fresh := 0
		for lf := range n.leaves() {
			if !old[&lf[0]] {
				fresh++
			}
		}
		require.GreaterOrEqual(t, fresh, 1)
		require.LessOrEqual(t, fresh, 2)
		tr = n
	}
}

// treeOf returns the tree of ps.
func treeOf[T keyed](ps []T) btree[T] {
	var tr btree[T]
	for _, p := range ps {
		tr = tr.Set(p)
	}
	return tr
}

// firstPiece returns a's first piece.
func firstPiece(a *App) *piece {
	for p := range a.pieces.All() {
		return p
	}
	return nil
}

// samePointers reports whether a and b hold the same items, by identity.
func samePointers[T keyed](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if any(a[i]) != any(b[i]) {
			return false
		}
	}
	return true
}
