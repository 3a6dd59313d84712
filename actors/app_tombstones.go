package actors

// The application's tombstones: what a deletion leaves so that no copy
// brings the instance back, how long each is kept and when it is collected
// (the packed set itself is tombstones.go).

import (
	"math"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
)

// tombstone remembers a deleted instance so that a stale copy from a peer
// cannot bring it back. It is aged by its version: the HLC time of the
// deletion, which every node agrees on, so it expires at the same moment
// everywhere and no node can re-seed another with a tombstone that has
// already expired there.
//
// It is kept small (24 bytes, with the node as a number): under churn a
// node holds one per deletion of the last TombstoneTTL, millions at a few
// thousand deletions a second.
type tombstone struct {
	clock uint64 // the deletion's version: its HLC reading
	// dirty is the lastDirtyTimestamp of the record the deletion removed,
	// as this node held it (0 when it held none). For a cancel it is what
	// a later registration must exceed to outrank the tombstone (see
	// cancelOutranks).
	dirty   int64
	node    nodeID // the deletion's version: the node that made it
	evicted bool   // removed by eviction rather than a cancel
}

// newTombstone is the tombstone of a deletion at version v.
func (a *appState) newTombstone(v Version, evicted bool, dirty int64) tombstone {
	return tombstone{clock: v.Clock, node: a.opts.nodes.id(v.Node), evicted: evicted, dirty: dirty}
}

// version is the version of t's deletion.
func (a *appState) version(t tombstone) Version {
	return Version{Clock: t.clock, Node: a.opts.nodes.name(t.node)}
}

// deletedAt is when t's instance was deleted (epoch ms). received is when
// the tombstone arrived here (epoch ms; 0 if unknown): it ages the
// tombstone only under the sabotage switch TombstoneReceiptAge.
func (t tombstone) deletedAt(received int64) int64 {
	if sabotage.On(sabotage.TombstoneReceiptAge) && received != 0 {
		return received
	}
	return HLCMillis(t.clock)
}

// putTombstone stores t as id's tombstone, received now. A tombstone
// stamped further ahead of this node's clock than the HLC tolerance (a
// peer whose clock runs ahead) ages from now plus the tolerance instead:
// it must not outlive the others by however far that clock is off.
func (a *appState) putTombstone(id string, t tombstone, now int64) {
	a.tombstones.put(id, t, now)
	if limit := now + a.opts.hlc.maxAhead.Milliseconds(); HLCMillis(t.clock) > limit && !sabotage.On(sabotage.TombstoneAgedFromFuture) {
		if a.ahead == nil {
			a.ahead = map[string]int64{}
		}
		a.ahead[id] = limit
	} else if a.ahead != nil {
		delete(a.ahead, id)
	}
	if sabotage.Enabled {
		if a.received == nil {
			a.received = map[string]int64{}
		}
		a.received[id] = now
	}
}

// dropTombstone forgets id's tombstone.
func (a *appState) dropTombstone(id string) {
	a.tombstones.drop(id)
	if a.ahead != nil {
		delete(a.ahead, id)
	}
	if sabotage.Enabled {
		delete(a.received, id)
	}
}

// receivedAt is when id's tombstone arrived (epoch ms), known only in a
// sabotage build (0 otherwise).
func (a *appState) receivedAt(id string) int64 {
	if !sabotage.Enabled {
		return 0
	}
	return a.received[id]
}

// tombstoneTTL is how long the application keeps a tombstone (ms): see
// tombstoneTTLFor, for the longest lease it has held.
func (a *appState) tombstoneTTL() int64 { return a.tombstoneTTLFor(a.maxLease) }

// tombstoneTTLFor is how long a tombstone of a lease of duration d is
// kept (ms): the configured TTL, or the lease plus a renewal window and an
// eviction interval when that is longer. A client picks its lease; a
// tombstone that went before the lease could run out, evicted, on a side
// of a partition would let that side's copy back (its last renewal is then
// younger than the lease, so the stale rule cannot refuse it). Tombstones
// are kept by application, for its longest lease, since a tombstone
// received without its lease does not say how long it was.
func (a *appState) tombstoneTTLFor(d time.Duration) int64 {
	ttl := a.opts.tombstoneTTL.Milliseconds()
	if d <= 0 || sabotage.On(sabotage.TombstoneOutlivedByLease) {
		return ttl // no lease held here: none known to outlive
	}
	return max(ttl, (d + a.opts.tombstoneSlack).Milliseconds())
}

// tombstoneExpired reports whether t's deletion is older than the
// tombstone TTL at now; received is as for deletedAt.
func (a *appState) tombstoneExpired(t tombstone, received, now int64) bool {
	return t.deletedAt(received) < now-a.tombstoneTTL()
}

// tombstoneAgedFrom is the instant id's stored tombstone t ages from
// (epoch ms): its deletion time, or its receipt plus the HLC tolerance
// when that is earlier (see putTombstone).
func (a *appState) tombstoneAgedFrom(id string, t tombstone) int64 {
	d := t.deletedAt(a.receivedAt(id))
	if v, ok := a.ahead[id]; ok && v < d {
		d = v
	}
	return d
}

// storedExpired reports whether id's stored tombstone t has expired at now.
func (a *appState) storedExpired(id string, t tombstone, now int64) bool {
	return a.tombstoneAgedFrom(id, t) < now-a.tombstoneTTL()
}

// collectTombstones forgets tombstones older than the configured TTL (a
// packed one goes with its pack, when the pack's newest expires; until
// then it reads as expired). It returns when the next one is due to go
// (wall clock, epoch ms; math.MaxInt64 when it keeps none).
func (a *appState) collectTombstones() int64 {
	due, ok := a.tombstones.collect(a.now(), a.tombstoneTTL())
	if sabotage.Enabled {
		for id := range a.received {
			if _, kept := a.tombstones.get(id); !kept {
				delete(a.received, id)
			}
		}
	}
	for id := range a.ahead {
		if _, kept := a.tombstones.get(id); !kept {
			delete(a.ahead, id)
		}
	}
	if !ok {
		return math.MaxInt64
	}
	return due
}
