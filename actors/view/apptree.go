package view

import (
	"iter"
	"slices"
	"sort"
)

// Persistent application trees.
//
// A snapshot's applications (and the delta's groups) are an appTree: a
// persistent B+tree of *App sorted by name, whose keys are the
// applications' own names (nodes hold pointers only). A write copies the
// path from the root to its leaf: at 50,000 applications three nodes of at
// most treeMax pointers, about a kilobyte, where a sorted map with inline
// keys copies several. Its leaves are the blocks of the gzipped documents
// (appsGzip): a write leaves every leaf but its own as it was, so after it
// one block is joined again, and assembling a document walks the leaves,
// not every application.
const (
	// treeMax is the most children of a node (applications of a leaf):
	// a node that grows past it splits in halves.
	treeMax = 32
	// treeMin is the fewest children of a node other than the root: a
	// node left with fewer merges with a neighbour (and splits in halves
	// when the result exceeds treeMax).
	treeMin = treeMax / 4
)

// appTree is an immutable sorted set of applications keyed by name. The
// zero value is empty.
type appTree struct {
	root *appNode
}

// appNode is a leaf (apps) or a branch (kids), never written once
// published.
type appNode struct {
	apps []*App
	kids []*appNode
	n    int // applications in the subtree
}

func (n *appNode) leaf() bool { return n.kids == nil }

// size is the number of children (applications of a leaf).
func (n *appNode) size() int {
	if n.leaf() {
		return len(n.apps)
	}
	return len(n.kids)
}

// first returns the name of the subtree's first application.
func (n *appNode) first() string {
	for !n.leaf() {
		n = n.kids[0]
	}
	return n.apps[0].name
}

// Len returns the number of applications.
func (t appTree) Len() int {
	if t.root == nil {
		return 0
	}
	return t.root.n
}

// Get returns the application named name, or nil.
func (t appTree) Get(name string) *App {
	n := t.root
	if n == nil {
		return nil
	}
	for !n.leaf() {
		n = n.kids[n.child(name)]
	}
	if i, ok := n.index(name); ok {
		return n.apps[i]
	}
	return nil
}

// child returns the index of the child of branch n whose range holds name.
func (n *appNode) child(name string) int {
	// The last child whose first name is ≤ name (the first child for a
	// name before every other).
	k := sort.Search(len(n.kids), func(k int) bool { return n.kids[k].first() > name })
	return max(k-1, 0)
}

// index returns the position of name in leaf n, and whether it is there.
func (n *appNode) index(name string) (int, bool) {
	i := sort.Search(len(n.apps), func(i int) bool { return n.apps[i].name >= name })
	return i, i < len(n.apps) && n.apps[i].name == name
}

// All yields every application in name order.
func (t appTree) All() iter.Seq[*App] {
	return func(yield func(*App) bool) {
		for lf := range t.leaves() {
			for _, a := range lf.apps {
				if !yield(a) {
					return
				}
			}
		}
	}
}

// leaves yields the leaves in order.
func (t appTree) leaves() iter.Seq[*appNode] {
	return func(yield func(*appNode) bool) {
		if t.root != nil {
			t.root.walk(yield)
		}
	}
}

func (n *appNode) walk(yield func(*appNode) bool) bool {
	if n.leaf() {
		return yield(n)
	}
	for _, k := range n.kids {
		if !k.walk(yield) {
			return false
		}
	}
	return true
}

// Set returns t with a in place of the application of its name, or with a
// inserted.
func (t appTree) Set(a *App) appTree {
	if t.root == nil {
		return appTree{root: &appNode{apps: []*App{a}, n: 1}}
	}
	l, r := t.root.set(a)
	if r == nil {
		return appTree{root: l}
	}
	return appTree{root: branch([]*appNode{l, r})}
}

// set returns n with a set, split in two when it outgrew treeMax.
func (n *appNode) set(a *App) (*appNode, *appNode) {
	if n.leaf() {
		i, found := n.index(a.name)
		if found {
			apps := slices.Clone(n.apps)
			apps[i] = a
			return &appNode{apps: apps, n: n.n}, nil
		}
		return splitLeaf(slices.Insert(slices.Clone(n.apps), i, a))
	}
	k := n.child(a.name)
	l, r := n.kids[k].set(a)
	kids := slices.Clone(n.kids)
	kids[k] = l
	if r != nil {
		kids = slices.Insert(kids, k+1, r)
	}
	return splitBranch(kids)
}

// Delete returns t without the application named name (t itself when it
// has none).
func (t appTree) Delete(name string) appTree {
	if t.root == nil {
		return t
	}
	n, found := t.root.del(name)
	switch {
	case !found:
		return t
	case n.size() == 0:
		return appTree{}
	case !n.leaf() && len(n.kids) == 1:
		return appTree{root: n.kids[0]} // the root lost a level
	}
	return appTree{root: n}
}

// del returns n without name (possibly with fewer than treeMin children,
// which its parent mends), and whether n held it.
func (n *appNode) del(name string) (*appNode, bool) {
	if n.leaf() {
		i, found := n.index(name)
		if !found {
			return n, false
		}
		return &appNode{apps: slices.Delete(slices.Clone(n.apps), i, i+1), n: n.n - 1}, true
	}
	k := n.child(name)
	c, found := n.kids[k].del(name)
	if !found {
		return n, false
	}
	kids := slices.Clone(n.kids)
	switch {
	case c.size() == 0:
		kids = slices.Delete(kids, k, k+1)
	case c.size() >= treeMin || len(kids) == 1:
		kids[k] = c
	default: // too small: merge with the next child (the previous one for the last)
		j := k + 1
		if j == len(kids) {
			j = k - 1
		}
		lo, hi := min(j, k), max(j, k)
		a, b := kids[lo], kids[hi]
		if lo == k {
			a = c
		} else {
			b = c
		}
		var l, r *appNode
		if c.leaf() {
			l, r = splitLeaf(append(slices.Clone(a.apps), b.apps...))
		} else {
			l, r = splitBranch(append(slices.Clone(a.kids), b.kids...))
		}
		kids[lo] = l
		if r != nil {
			kids[hi] = r
		} else {
			kids = slices.Delete(kids, hi, hi+1)
		}
	}
	b := branch(kids)
	if len(kids) == 0 {
		b = &appNode{}
	}
	return b, true
}

// splitLeaf returns the leaf of apps, or two halves when they exceed
// treeMax.
func splitLeaf(apps []*App) (*appNode, *appNode) {
	if len(apps) <= treeMax {
		return &appNode{apps: apps, n: len(apps)}, nil
	}
	h := len(apps) / 2
	a, b := slices.Clone(apps[:h]), slices.Clone(apps[h:])
	return &appNode{apps: a, n: len(a)}, &appNode{apps: b, n: len(b)}
}

// splitBranch returns the branch of kids, or two halves when they exceed
// treeMax.
func splitBranch(kids []*appNode) (*appNode, *appNode) {
	if len(kids) <= treeMax {
		return branch(kids), nil
	}
	h := len(kids) / 2
	return branch(slices.Clone(kids[:h])), branch(slices.Clone(kids[h:]))
}

// branch returns the branch node of kids, counting their applications.
func branch(kids []*appNode) *appNode {
	b := &appNode{kids: kids}
	for _, k := range kids {
		b.n += k.n
	}
	return b
}
