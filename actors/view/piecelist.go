package view

import (
	"iter"
	"slices"
	"sort"
)

// Persistent piece lists.
//
// An application's pieces (and a delta group's) are sorted by instance id
// and kept as a list of immutable leaves of at most leafMax pieces. A change
// copies the list of leaves and the one leaf it touches, so a write costs
// O(application size ÷ leaf size + leaf size) pointer copies, not one per
// instance: fresh registrations that grow an application to thousands of
// instances, and bulk loads of an application through one batch, stay
// cheap. A leaf is also the unit of gzip compression (gzChunks): a write
// leaves every leaf but its own as it was, so after it one chunk is
// compressed again.
const (
	// leafMax is the most pieces of a leaf: an insert into a full leaf
	// splits it in halves. A leaf of 24–48 instance elements of 1–1.5 kB
	// fills DEFLATE's 32 kB window, so compressing leaves apart costs
	// little compression, and recompressing one after a change stays
	// cheap.
	leafMax = 48
	// leafMin is the fewest pieces of a leaf in a list of more than one:
	// a removal that leaves fewer merges the leaf with a neighbour (and
	// splits the result in halves when it exceeds leafMax).
	leafMin = 12
)

// pieceList is an immutable sorted list of pieces. The zero value is
// empty. Its leaves are never written after they are published; every
// change builds new ones.
type pieceList struct {
	leaves [][]*piece
	n      int
}

// listOf returns the list of ps, sorted by id, cut into leaves of about
// three quarters of leafMax.
func listOf(ps []*piece) pieceList {
	const size = leafMax * 3 / 4
	l := pieceList{n: len(ps)}
	for len(ps) > 0 {
		k := min(size, len(ps))
		if len(ps)-k < leafMin {
			k = len(ps)
		}
		if k > leafMax {
			k = len(ps) / 2
		}
		l.leaves = append(l.leaves, slices.Clone(ps[:k]))
		ps = ps[k:]
	}
	return l
}

// Len returns the number of pieces.
func (l pieceList) Len() int { return l.n }

// all yields every piece in id order.
func (l pieceList) all() iter.Seq[*piece] {
	return func(yield func(*piece) bool) {
		for _, lf := range l.leaves {
			for _, p := range lf {
				if !yield(p) {
					return
				}
			}
		}
	}
}

// locate returns the leaf k that holds id, or where id would be inserted,
// and the position i in it.
func (l pieceList) locate(id string) (k, i int, found bool) {
	if len(l.leaves) == 0 {
		return 0, 0, false
	}
	k = sort.Search(len(l.leaves), func(k int) bool {
		lf := l.leaves[k]
		return lf[len(lf)-1].inst.ID() >= id
	})
	if k == len(l.leaves) { // after every piece: append to the last leaf
		k--
		return k, len(l.leaves[k]), false
	}
	lf := l.leaves[k]
	i = sort.Search(len(lf), func(i int) bool { return lf[i].inst.ID() >= id })
	return k, i, i < len(lf) && lf[i].inst.ID() == id
}

// find returns the piece of id, or nil.
func (l pieceList) find(id string) *piece {
	if k, i, ok := l.locate(id); ok {
		return l.leaves[k][i]
	}
	return nil
}

// set returns l with p in place of the piece of p's instance, or with p
// inserted.
func (l pieceList) set(p *piece) pieceList {
	if len(l.leaves) == 0 {
		return pieceList{leaves: [][]*piece{{p}}, n: 1}
	}
	k, i, found := l.locate(p.inst.ID())
	old := l.leaves[k]
	if found {
		lf := slices.Clone(old)
		lf[i] = p
		return l.splice(k, 1, l.n, lf)
	}
	lf := make([]*piece, 0, len(old)+1)
	lf = append(append(append(lf, old[:i]...), p), old[i:]...)
	if len(lf) <= leafMax {
		return l.splice(k, 1, l.n+1, lf)
	}
	at := len(lf) / 2
	if k == len(l.leaves)-1 && i == len(old) {
		// Appending (ids that grow, as generated ones do): keep the
		// leaf nearly full and start the next with leafMin pieces.
		at = len(lf) - leafMin
	}
	return l.splice(k, 1, l.n+1, slices.Clone(lf[:at]), slices.Clone(lf[at:]))
}

// remove returns l without the piece of id, and whether it held one.
func (l pieceList) remove(id string) (pieceList, bool) {
	k, i, found := l.locate(id)
	if !found {
		return l, false
	}
	old := l.leaves[k]
	lf := append(append(make([]*piece, 0, len(old)-1), old[:i]...), old[i+1:]...)
	switch {
	case len(lf) == 0:
		return l.splice(k, 1, l.n-1), true
	case len(lf) >= leafMin || len(l.leaves) == 1:
		return l.splice(k, 1, l.n-1, lf), true
	}
	// Too small: merge with the next leaf (the previous one for the last).
	var from int
	var merged []*piece
	if k < len(l.leaves)-1 {
		from, merged = k, append(lf, l.leaves[k+1]...)
	} else {
		from, merged = k-1, append(slices.Clone(l.leaves[k-1]), lf...)
	}
	if len(merged) <= leafMax {
		return l.splice(from, 2, l.n-1, merged), true
	}
	a, b := halves(merged)
	return l.splice(from, 2, l.n-1, a, b), true
}

// filter returns l without the pieces drop reports. Leaves with nothing to
// drop are kept as they are (so their gzip chunks stay reusable); leaves
// left too small are merged with a neighbour.
func (l pieceList) filter(drop func(*piece) bool) pieceList {
	out := pieceList{leaves: make([][]*piece, 0, len(l.leaves))}
	for _, lf := range l.leaves {
		cur := lf
		if slices.ContainsFunc(lf, drop) {
			cur = slices.DeleteFunc(slices.Clone(lf), drop)
			if len(cur) == 0 {
				continue
			}
		}
		out.n += len(cur)
		last := len(out.leaves) - 1
		if last < 0 || (len(out.leaves[last]) >= leafMin && len(cur) >= leafMin) {
			out.leaves = append(out.leaves, cur)
			continue
		}
		merged := append(slices.Clone(out.leaves[last]), cur...)
		if len(merged) <= leafMax {
			out.leaves[last] = merged
			continue
		}
		a, b := halves(merged)
		out.leaves[last] = a
		out.leaves = append(out.leaves, b)
	}
	return out
}

// splice returns a list of n pieces: l's leaves with the count leaves from
// k replaced by repl. It copies the list of leaves, not the leaves.
func (l pieceList) splice(k, count, n int, repl ...[]*piece) pieceList {
	leaves := make([][]*piece, 0, len(l.leaves)-count+len(repl))
	leaves = append(append(append(leaves, l.leaves[:k]...), repl...), l.leaves[k+count:]...)
	return pieceList{leaves: leaves, n: n}
}

// halves returns the two halves of lf, each in an array of its own: a leaf
// that shared its array with a neighbour would keep that neighbour's
// pieces (superseded states, with their encodings) alive after the
// neighbour is replaced.
func halves(lf []*piece) ([]*piece, []*piece) {
	h := len(lf) / 2
	return slices.Clone(lf[:h]), slices.Clone(lf[h:])
}
