package eurekapeer

// The per-peer queue: one pending entry per instance, into which every new
// change is folded (see the package doc, "Batching, coalescing, retries").
// Folding keeps the queue bounded by the number of instances, however many
// renewals arrive, and makes a retried entry merge with what happened since.

import (
	"sync"

	"github.com/heureka/heureka/actors"
)

// statusOp is a pending status update or override delete.
type statusOp struct {
	status actors.Status
	delete bool // DeleteStatusOverride, else StatusUpdate
}

// pending is what is still to be sent about one instance. At most one of
// cancel, register and heartbeat is set; status may go with register or
// heartbeat.
type pending struct {
	cancel, register, heartbeat bool
	status                      *statusOp
}

// empty reports whether nothing is left to send.
func (p *pending) empty() bool {
	return !p.cancel && !p.register && !p.heartbeat && p.status == nil
}

// fold adds a newer change n to p.
func (p *pending) fold(n pending) {
	switch {
	case n.cancel:
		*p = pending{cancel: true}
		return
	case n.register:
		p.cancel, p.register, p.heartbeat = false, true, false
	case n.heartbeat:
		if !p.register && !p.cancel {
			p.heartbeat = true
		}
	}
	if n.status != nil && !p.cancel {
		p.status = n.status
	}
}

// foldOlder merges an older change o (one that failed and is retried) under
// p, which happened since: p wins where they conflict.
func (p *pending) foldOlder(o pending) {
	if p.cancel {
		return
	}
	if o.cancel && !p.register {
		// The instance was cancelled and only renewed or updated since,
		// which cannot happen locally; keep the cancel.
		*p = pending{cancel: true}
		return
	}
	if o.register && !p.register {
		p.register, p.heartbeat = true, false
	}
	if o.heartbeat && !p.register {
		p.heartbeat = true
	}
	if p.status == nil {
		p.status = o.status
	}
}

// queue is one peer's pending changes, keyed by instance.
type queue struct {
	mu      sync.Mutex
	max     int
	items   map[actors.Key]*pending
	dropped uint64
}

func newQueue(max int) *queue {
	return &queue{max: max, items: map[actors.Key]*pending{}}
}

// add folds a change into the queue and returns the number of pending
// instances; a change to a new instance beyond the bound is dropped.
func (q *queue) add(k actors.Key, n pending) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p := q.items[k]; p != nil {
		p.fold(n)
		return len(q.items), true
	}
	if len(q.items) >= q.max {
		q.dropped++
		return len(q.items), false
	}
	q.items[k] = &n
	return len(q.items), true
}

// requeue puts back changes that were not delivered, under what happened
// since. Requeued entries may exceed the bound by at most one batch.
func (q *queue) requeue(k actors.Key, o pending) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p := q.items[k]; p != nil {
		p.foldOlder(o)
		return
	}
	q.items[k] = &o
}

// take removes and returns up to n pending entries.
func (q *queue) take(n int) map[actors.Key]pending {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[actors.Key]pending, min(n, len(q.items)))
	for k, p := range q.items {
		if len(out) == n {
			break
		}
		out[k] = *p
		delete(q.items, k)
	}
	return out
}

// len returns the number of pending instances.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// droppedCount returns how many changes the bound dropped.
func (q *queue) droppedCount() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}
