package view

import "github.com/heureka/heureka/internal/sabotage"

// Pending delta changes
//
// A write does not rebuild its application's group in the delta: it puts
// its piece on the snapshot's list of pending changes. The delta's groups
// are brought up to date when first needed: by the first read of the delta
// (or DeltaLen) of a snapshot, by pruning, or by the write that makes the
// list maxPending long. So a deploy during which nobody reads the delta
// costs no delta tree work per write, and a batch of pending changes is
// applied in place (btree.swapOwned): each group, and each node of the
// groups' tree, that the batch touches is copied once per batch, not once
// per change. A snapshot's delta document and its apps hashcode still come
// from that one snapshot.
//
// What the pending pieces hold beyond the registry counts towards the
// delta's memory bound at once, without subtracting the pieces they will
// replace: the bound's estimate is high, never low, until the next
// settling makes it exact.

// maxPending is the longest list of pending changes a write leaves: the
// write that reaches it applies them. It bounds the superseded states the
// list keeps alive (a registration and its cancel both wait in it) and the
// work a first read of the delta does.
const maxPending = 256

// pendingChange is a change not yet applied to the delta's groups: its
// piece (whose at is set), in a list from the newest back to the first
// pending.
type pendingChange struct {
	p    *piece
	app  string
	prev *pendingChange // the change before (nil: the first pending)
	n    int            // the pending changes up to this one
}

// deltaState is a delta: per application, the latest piece of every
// instance changed within the retention (see Snapshot), how many pieces
// that is and what they hold beyond the registry (App.heldBytes).
type deltaState struct {
	tree btree[*App]
	n    int
	held int64
}

// deltaNow returns s's delta with its pending changes applied, computing
// it on first use.
func (s *Snapshot) deltaNow() *deltaState {
	if s.pending == nil || sabotage.On(sabotage.ViewDeltaPendingUnread) {
		return &s.delta
	}
	if d := s.settled.Load(); d != nil {
		return d
	}
	d := s.delta.with(s.pending)
	if !s.settled.CompareAndSwap(nil, d) {
		return s.settled.Load()
	}
	return d
}

// settle applies s's pending changes to its delta. s must be a snapshot
// under construction (v.mu held).
func (s *Snapshot) settle() {
	if s.pending == nil {
		return
	}
	s.delta = *s.delta.with(s.pending)
	s.pending, s.pendingHeld = nil, 0
}

// addPending puts p, the latest state of an instance of app, on s's list of
// pending changes, and applies the list once it is maxPending long. s must
// be a snapshot under construction.
func (s *Snapshot) addPending(app string, p *piece) {
	n := 1
	if s.pending != nil {
		n = s.pending.n + 1
	}
	s.pending = &pendingChange{p: p, app: app, prev: s.pending, n: n}
	s.pendingHeld += p.heldBytes()
	if n >= maxPending {
		s.settle()
	}
}

// deltaHeldEstimate is what s's delta holds beyond the registry, with its
// pending changes counted whole (see the file comment).
func (s *Snapshot) deltaHeldEstimate() int64 {
	return s.delta.held + s.pendingHeld
}

// with returns d with the pending changes up to last applied in order,
// every group and tree node it changes copied once (btree.swapOwned).
func (d *deltaState) with(last *pendingChange) *deltaState {
	changes := make([]*pendingChange, last.n)
	for c := last; c != nil; c = c.prev {
		changes[c.n-1] = c
	}
	o := new(owner)
	out := &deltaState{tree: d.tree, n: d.n, held: d.held}
	groups := map[string]*App{} // the groups this batch made
	for _, c := range changes {
		g := groups[c.app]
		if g == nil {
			base := out.tree.Get(c.app)
			g = &App{name: c.app, pieces: base.list(), held: base.heldBytes()}
			if base != nil {
				g.inherit(base)
			}
			groups[c.app] = g
			out.tree, _ = out.tree.swapOwned(g, o)
			out.n -= base.Len()
			out.held -= base.heldBytes()
		}
		var old *piece
		g.pieces, old = g.pieces.swapOwned(c.p, o)
		g.held += c.p.heldBytes() - old.heldBytes()
	}
	for _, g := range groups {
		out.n += g.Len()
		out.held += g.heldBytes()
	}
	return out
}
