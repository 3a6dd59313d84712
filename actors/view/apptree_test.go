package view

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkTree requires t to hold exactly want, in name order, with every
// node but the root between treeMin and treeMax children, counts that add
// up and leaves all at one depth.
func checkTree(t *testing.T, tr appTree, want map[string]*App, step string) {
	t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	got := []string{}
	for a := range tr.All() {
		got = append(got, a.name)
		require.Same(t, want[a.name], a, "%s: %s", step, a.name)
	}
	require.Equal(t, names, got, step)
	require.Equal(t, len(names), tr.Len(), step)
	for _, n := range names {
		require.Same(t, want[n], tr.Get(n), "%s: get %s", step, n)
	}
	require.Nil(t, tr.Get("~absent"), step)
	if tr.root == nil {
		return
	}
	depth := -1
	var check func(n *appNode, d int, root bool)
	check = func(n *appNode, d int, root bool) {
		require.LessOrEqual(t, n.size(), treeMax, step)
		if !root {
			require.GreaterOrEqual(t, n.size(), treeMin, step)
		}
		if n.leaf() {
			if depth < 0 {
				depth = d
			}
			require.Equal(t, depth, d, "%s: leaves at one depth", step)
			require.Equal(t, len(n.apps), n.n, step)
			return
		}
		require.Greater(t, len(n.kids), 1, "%s: a branch has two children or more", step)
		sum := 0
		for _, k := range n.kids {
			check(k, d+1, false)
			sum += k.n
		}
		require.Equal(t, sum, n.n, step)
	}
	check(tr.root, 0, true)
}

// An application tree behaves as a sorted map of name to App under random
// sets, replacements and deletes, stays balanced, and never writes a node
// it published.
func TestAppTreeMatchesASortedMap(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var tr appTree
		want := map[string]*App{}
		type copied struct {
			n     *appNode
			apps  []*App
			kids  []*appNode
			count int
		}
		var seen []copied
		space := 50 + rng.IntN(3000)
		for step := range 6000 {
			name := fmt.Sprintf("APP-%05d", rng.IntN(space))
			label := fmt.Sprintf("seed %d step %d", seed, step)
			if rng.IntN(100) < 60 {
				a := &App{name: name}
				tr = tr.Set(a)
				want[name] = a
			} else {
				tr = tr.Delete(name)
				delete(want, name)
			}
			if step%50 == 0 || step > 5900 {
				checkTree(t, tr, want, label)
			}
			if step%200 == 0 && tr.root != nil {
				var walk func(n *appNode)
				walk = func(n *appNode) {
					seen = append(seen, copied{n, slices.Clone(n.apps), slices.Clone(n.kids), n.n})
					for _, k := range n.kids {
						walk(k)
					}
				}
				walk(tr.root)
			}
		}
		for _, c := range seen {
			require.Equal(t, c.apps, c.n.apps, "seed %d: a published node was written", seed)
			require.Equal(t, c.kids, c.n.kids, "seed %d: a published node was written", seed)
			require.Equal(t, c.count, c.n.n, "seed %d: a published node was written", seed)
		}
		// Deleting everything empties the tree.
		for name := range want {
			tr = tr.Delete(name)
		}
		checkTree(t, tr, map[string]*App{}, "emptied")
		require.Nil(t, tr.root)
	}
}

// A write copies the path to its leaf: every other leaf of the new tree is
// the old one.
func TestAppTreeWriteSharesLeaves(t *testing.T) {
	var tr appTree
	for i := range 5000 {
		tr = tr.Set(&App{name: fmt.Sprintf("APP-%05d", i)})
	}
	for _, change := range []func(appTree) appTree{
		func(t appTree) appTree { return t.Set(&App{name: "APP-02500"}) },
		func(t appTree) appTree { return t.Set(&App{name: "APP-02500a"}) },
		func(t appTree) appTree { return t.Delete("APP-01000") },
	} {
		n := change(tr)
		old := map[*appNode]bool{}
		for lf := range tr.leaves() {
			old[lf] = true
		}
		fresh := 0
		for lf := range n.leaves() {
			if !old[lf] {
				fresh++
			}
		}
		require.GreaterOrEqual(t, fresh, 1)
		require.LessOrEqual(t, fresh, 2)
		tr = n
	}
}
