package view

import (
	"iter"
	"slices"
	"sort"

	"github.com/heureka/heureka/internal/sabotage"
)

// Persistent B+trees.
//
// A snapshot's applications, the delta's groups and every application's
// instances are persistent B+trees (btree) keyed by the items' own keys
// (an application's name, an instance's id): nodes hold pointers only. A
// write copies the path from the root to its leaf, O(log n) nodes of at
// most max children, whatever the size of the application or of the
// registry, and shares every other node with the tree it was made from.
// The leaves are the units of gzip compression: an application's leaves of
// instances are its gzip chunks (App.gzChunks) and the leaves of
// applications are the blocks of the applications documents (appsGzip), so
// after a write one chunk is compressed and one block joined again.

// keyed is an item of a btree: its key orders it, and its type gives the
// shape of the trees it is kept in (shape is called on the zero value).
type keyed interface {
	key() string
	shape() *treeShape
}

// treeShape bounds a btree's nodes: a node that grows past max children
// splits in halves; one other than the root left with fewer than min merges
// with a neighbour (and splits in halves when the result exceeds max).
type treeShape struct{ min, max int }

var (
	// appShape is the shape of the trees of applications: a leaf is a
	// gzip block of up to 32 application elements.
	appShape = &treeShape{min: 8, max: 32}
	// pieceShape is the shape of the trees of instances. A leaf is a gzip
	// chunk: 24–48 instance elements of 1–1.5 kB fill DEFLATE's 32 kB
	// window, so compressing leaves apart costs little compression, and
	// recompressing one after a change stays cheap.
	pieceShape = &treeShape{min: 12, max: 48}
)

// btree is an immutable sorted set of items keyed by key(). The zero value
// is empty.
type btree[T keyed] struct {
	root *bnode[T]
}

// bnode is a leaf (items) or a branch (kids), never written once
// published.
type bnode[T keyed] struct {
	items []T
	kids  []*bnode[T]
	n     int    // items in the subtree
	lo    string // the key of the subtree's first item
}

// shapeOf returns the shape of the trees of T.
func shapeOf[T keyed]() *treeShape {
	var zero T
	return zero.shape()
}

func (n *bnode[T]) leaf() bool { return n.kids == nil }

// size is the number of children (items of a leaf).
func (n *bnode[T]) size() int {
	if n.leaf() {
		return len(n.items)
	}
	return len(n.kids)
}

// Len returns the number of items.
func (t btree[T]) Len() int {
	if t.root == nil {
		return 0
	}
	return t.root.n
}

// Get returns the item with key k, or the zero T.
func (t btree[T]) Get(k string) T {
	var zero T
	n := t.root
	if n == nil {
		return zero
	}
	for !n.leaf() {
		n = n.kids[n.child(k)]
	}
	if i, ok := n.index(k); ok {
		return n.items[i]
	}
	return zero
}

// child returns the index of the child of branch n whose range holds k:
// the last whose first key is ≤ k (the first for a key before them all).
func (n *bnode[T]) child(k string) int {
	i := sort.Search(len(n.kids), func(i int) bool { return n.kids[i].lo > k })
	return max(i-1, 0)
}

// index returns the position of k in leaf n, and whether it is there.
func (n *bnode[T]) index(k string) (int, bool) {
	i := sort.Search(len(n.items), func(i int) bool { return n.items[i].key() >= k })
	return i, i < len(n.items) && n.items[i].key() == k
}

// All yields every item in key order.
func (t btree[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for lf := range t.leaves() {
			for _, it := range lf {
				if !yield(it) {
					return
				}
			}
		}
	}
}

// leaves yields the leaves' items in order. A leaf's slice is the same
// (same first element) in every tree that shares the leaf, and a new one
// in a tree where the leaf changed.
func (t btree[T]) leaves() iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		if t.root != nil {
			t.root.walk(yield)
		}
	}
}

func (n *bnode[T]) walk(yield func([]T) bool) bool {
	if n.leaf() {
		return yield(n.items)
	}
	for _, k := range n.kids {
		if !k.walk(yield) {
			return false
		}
	}
	return true
}

// Set returns t with it in place of the item of its key, or with it
// inserted.
func (t btree[T]) Set(it T) btree[T] {
	t, _ = t.Swap(it)
	return t
}

// Swap is Set that also returns the item it replaced (the zero T when it
// inserted): a Get and a Set in one descent.
func (t btree[T]) Swap(it T) (btree[T], T) {
	var old T
	if t.root == nil {
		return btree[T]{root: leafOf([]T{it})}, old
	}
	l, r := t.root.set(shapeOf[T](), it, true, &old)
	if r == nil {
		return btree[T]{root: l}, old
	}
	return btree[T]{root: branch([]*bnode[T]{l, r})}, old
}

// set returns n with it set, split in two when it outgrew the shape's max,
// and stores the item it replaced in *old. last says whether n is the
// tree's last node at its depth.
func (n *bnode[T]) set(s *treeShape, it T, last bool, old *T) (*bnode[T], *bnode[T]) {
	if n.leaf() {
		i, found := n.index(it.key())
		if found {
			*old = n.items[i]
			items := slices.Clone(n.items)
			items[i] = it
			// The same keys; but the first as the new item holds it, since
			// the replaced item's key string may keep its strings alive.
			lo := n.lo
			if i == 0 && !sabotage.On(sabotage.ViewLeafKeepsReplacedKey) {
				lo = it.key()
			}
			return &bnode[T]{items: items, n: n.n, lo: lo}, nil
		}
		items := inserted(n.items, i, it)
		if len(items) <= s.max {
			lo := n.lo
			if i == 0 {
				lo = it.key()
			}
			return &bnode[T]{items: items, n: n.n + 1, lo: lo}, nil
		}
		at := len(items) / 2
		if last && i == len(n.items) {
			// Appending (keys that grow, as generated ids do): keep
			// this leaf nearly full and start the next with min items.
			at = len(items) - s.min
		}
		a, b := cut(items, at)
		return leafOf(a), leafOf(b)
	}
	k := n.child(it.key())
	l, r := n.kids[k].set(s, it, last && k == len(n.kids)-1, old)
	if r == nil {
		// The counts and first keys follow from the one kid that changed,
		// without loading every kid (a cache miss each in a large tree).
		kids := slices.Clone(n.kids)
		kids[k] = l
		lo := n.lo
		if k == 0 {
			lo = l.lo
		}
		return &bnode[T]{kids: kids, n: n.n - n.kids[k].n + l.n, lo: lo}, nil
	}
	kids := inserted(n.kids, k+1, r)
	kids[k] = l
	return splitBranch(s, kids)
}

// Delete returns t without the item of key k, and whether t held one (t
// itself when not).
func (t btree[T]) Delete(k string) (btree[T], bool) {
	if t.root == nil {
		return t, false
	}
	n, found := t.root.del(shapeOf[T](), k)
	switch {
	case !found:
		return t, false
	case n.size() == 0:
		return btree[T]{}, true
	case !n.leaf() && len(n.kids) == 1:
		return btree[T]{root: n.kids[0]}, true // the root lost a level
	}
	return btree[T]{root: n}, true
}

// del returns n without k (possibly with fewer than min children, which
// its parent mends), and whether n held it.
func (n *bnode[T]) del(s *treeShape, k string) (*bnode[T], bool) {
	if n.leaf() {
		i, found := n.index(k)
		if !found {
			return n, false
		}
		return leafOf(slices.Delete(slices.Clone(n.items), i, i+1)), true
	}
	c := n.child(k)
	kid, found := n.kids[c].del(s, k)
	if !found {
		return n, false
	}
	kids := slices.Clone(n.kids)
	switch {
	case kid.size() == 0:
		kids = slices.Delete(kids, c, c+1)
	case kid.size() >= s.min || len(kids) == 1:
		kids[c] = kid
	default: // too small: merge with the next child (the previous one for the last)
		lo := c
		if c == len(kids)-1 {
			lo = c - 1
		}
		a, b := kids[lo], kids[lo+1]
		if lo == c {
			a = kid
		} else {
			b = kid
		}
		var l, r *bnode[T]
		if kid.leaf() {
			l, r = splitLeaf(s, append(slices.Clone(a.items), b.items...))
		} else {
			l, r = splitBranch(s, append(slices.Clone(a.kids), b.kids...))
		}
		kids[lo] = l
		if r != nil {
			kids[lo+1] = r
		} else {
			kids = slices.Delete(kids, lo+1, lo+2)
		}
	}
	if len(kids) == 0 {
		return &bnode[T]{}, true
	}
	return branch(kids), true
}

// inserted returns a new slice of s with v inserted at i, in one
// allocation.
func inserted[E any](s []E, i int, v E) []E {
	out := make([]E, len(s)+1)
	copy(out, s[:i])
	out[i] = v
	copy(out[i+1:], s[i:])
	return out
}

// cut splits s, which the caller owns, at i into two slices with arrays of
// their own: a half that shared its array with the other would keep the
// other's elements (superseded states, with their encodings) alive after
// the other is replaced, since the collector scans a whole array.
func cut[E any](s []E, i int) ([]E, []E) {
	b := slices.Clone(s[i:])
	clear(s[i:])
	return s[:i:i], b
}

// splitLeaf returns the leaf of items (which the caller owns), or two
// halves when they exceed max.
func splitLeaf[T keyed](s *treeShape, items []T) (*bnode[T], *bnode[T]) {
	if len(items) <= s.max {
		return leafOf(items), nil
	}
	a, b := cut(items, len(items)/2)
	return leafOf(a), leafOf(b)
}

// splitBranch returns the branch of kids (which the caller owns), or two
// halves when they exceed max.
func splitBranch[T keyed](s *treeShape, kids []*bnode[T]) (*bnode[T], *bnode[T]) {
	if len(kids) <= s.max {
		return branch(kids), nil
	}
	a, b := cut(kids, len(kids)/2)
	return branch(a), branch(b)
}

// leafOf returns the leaf of items (which the caller owns).
func leafOf[T keyed](items []T) *bnode[T] {
	n := &bnode[T]{items: items, n: len(items)}
	if len(items) > 0 {
		n.lo = items[0].key()
	}
	return n
}

// branch returns the branch node of kids (which the caller owns),
// counting their items.
func branch[T keyed](kids []*bnode[T]) *bnode[T] {
	b := &bnode[T]{kids: kids, lo: kids[0].lo}
	for _, k := range kids {
		b.n += k.n
	}
	return b
}
