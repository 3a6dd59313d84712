package actors

import (
	"sync"
	"sync/atomic"
)

// nodeID is a node name's index in a nodeTable. A tombstone stores it in
// place of the name (4 bytes instead of a 16-byte string header): under
// churn a node keeps millions of tombstones for the tombstone TTL.
type nodeID uint32

// nodeTable numbers the node names that versions carry. It only grows: a
// cluster's members, and the members it had, are few. Its zero value is
// ready to use, and it is safe for concurrent use; name reads take no lock.
type nodeTable struct {
	mu    sync.Mutex
	ids   map[string]nodeID
	names atomic.Pointer[[]string] // copied on every addition
}

// id returns name's number, adding name if it is new.
func (t *nodeTable) id(name string) nodeID {
	if names := t.names.Load(); names != nil {
		// The common case: the name is this node's or a known peer's,
		// found without the lock in the table's first few entries.
		for i, n := range (*names)[:min(len(*names), 8)] {
			if n == name {
				return nodeID(i)
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[name]; ok {
		return id
	}
	if t.ids == nil {
		t.ids = map[string]nodeID{}
	}
	var names []string
	if old := t.names.Load(); old != nil {
		names = append(names, *old...)
	}
	id := nodeID(len(names))
	names = append(names, intern(name))
	t.ids[name] = id
	t.names.Store(&names)
	return id
}

// name returns the name numbered id.
func (t *nodeTable) name(id nodeID) string { return (*t.names.Load())[id] }
