package cluster

// Read-only figures for metrics. Nothing here changes replication: each
// accessor takes the lock that guards what it reads, copies, and lets go.
// The Prometheus collector lives in httpapi (ClusterCollector); the node
// adapts these accessors to it.

import "time"

// PeerQueue is the state of the link to one peer: what waits to be sent to
// it, by message class (see peerlink.go), and how old the oldest waiting
// record is.
type PeerQueue struct {
	// Peer is the member's name.
	Peer string
	// Control is the number of queued digests, sync requests and load
	// reports.
	Control int
	// Renewals is the number of coalesced renewals waiting to be forwarded.
	Renewals int
	// Records is the number of queued registry changes (at most
	// ReplicatorConfig.MaxQueue).
	Records int
	// Transfers is the number of anti-entropy answers in progress or
	// waiting (at most maxTransfers).
	Transfers int
	// OldestRecord is the HLC wall time of the oldest queued record: the
	// moment the oldest change the peer has not been sent was made here.
	// Zero when no record waits. now − OldestRecord is the peer's
	// replication lag.
	OldestRecord time.Time
}

// PeerQueues returns the state of every peer link, in no particular order.
func (r *Replicator) PeerQueues() []PeerQueue {
	var out []PeerQueue
	r.eachLink(func(l *peerLink) {
		l.mu.Lock()
		q := PeerQueue{Peer: l.name, Control: len(l.control), Renewals: len(l.renewals),
			Records: len(l.records), Transfers: len(l.transfers)}
		if len(l.records) > 0 {
			q.OldestRecord = time.UnixMilli(int64(l.records[0].Clock >> 16))
		}
		l.mu.Unlock()
		out = append(out, q)
	})
	return out
}

// SyncState is this node's anti-entropy bookkeeping.
type SyncState struct {
	// InFlight is the number of transfers asked of peers and not yet done.
	InFlight int
	// InitialPending is the number of applications the initial sync still
	// waits for (0 once ready).
	InitialPending int
}

// SyncState returns the anti-entropy bookkeeping.
func (r *Replicator) SyncState() SyncState {
	r.aeMu.Lock()
	defer r.aeMu.Unlock()
	return SyncState{InFlight: r.ae.inflight.n, InitialPending: len(r.ae.pending)}
}
