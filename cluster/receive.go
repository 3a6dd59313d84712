package cluster

// Receiving
//
// memberlist hands every incoming stream's message to NotifyMsg on a
// goroutine of its own. handleMessage decodes it and never lets that
// goroutine wait long: records go to one apply goroutine through a bounded
// queue (a full queue is waited on for at most applyWait, then the batch is
// dropped and anti-entropy repairs it), digests to one control goroutine
// (dropped when its queue is full: the next digest carries the same
// information), sync requests to the asker's peer link, and renewals and
// load reports are handled at once (neither blocks).

import (
	"context"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// applyWait bounds how long a receiving stream waits for room in the apply
// queue.
const applyWait = 5 * time.Second

// NotifyMsg implements memberlist's user messages.
func (r *Replicator) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	r.handleMessage(b)
}

// handleMessage decodes a peer message and routes it by class.
func (r *Replicator) handleMessage(b []byte) { r.handle(b, wire.Decode) }

// handle decodes b with decode and acts on the message.
func (r *Replicator) handle(b []byte, decode func([]byte) (wire.Message, error)) {
	m, err := decode(b)
	if err != nil {
		r.log.Warn("refused peer message", "err", err)
		return
	}
	switch m := m.(type) {
	case *wire.Records:
		t := time.NewTimer(applyWait)
		defer t.Stop()
		select {
		case r.applyQ <- received{m, r.offsetFrom(m.SentAt)}:
		case <-r.stopped:
		case <-t.C:
			r.log.Warn("apply queue full: dropped a batch of replicated records; anti-entropy will repair",
				"records", len(m.Records))
		}
	case *wire.Renewals:
		r.onRenewals(m)
	case *wire.Handoff:
		r.onHandoff(m)
	case *wire.Digest:
		if sabotage.On(sabotage.NoAntiEntropy) {
			return
		}
		select {
		case r.controlQ <- m:
		default:
			r.log.Debug("digest dropped: control queue full", "peer", m.Node)
		}
	case *wire.SyncRequest:
		if sabotage.On(sabotage.NoAntiEntropy) {
			return
		}
		r.onSyncRequest(m)
	case *wire.Load:
		r.onLoad(m)
	}
}

// onRenewals renews, on behalf of the member that received them, the
// leases a peer forwarded to this node as their owner.
func (r *Replicator) onRenewals(m *wire.Renewals) {
	if r.store == nil {
		return
	}
	byApp := map[string][]string{}
	for _, rn := range m.Renewals {
		byApp[rn.App] = append(byApp[rn.App], rn.ID)
	}
	o := r.own.Load()
	for app, ids := range byApp {
		r.store.RenewRemote(app, ids)
		if owner := o.owner(app); owner != o.self && owner != "" {
			// The application moved away from this node after the
			// sender forwarded these (handoff.go): on to its owner.
			for _, id := range ids {
				r.OnRenew(app, id)
			}
		}
	}
}

// onSyncRequest queues the answer on the asker's link, or holds it for a
// while when the asker is not yet a member here.
func (r *Replicator) onSyncRequest(m *wire.SyncRequest) {
	if m.Node == "" {
		return
	}
	r.linkMu.Lock()
	defer r.linkMu.Unlock()
	if l := r.links[m.Node]; l != nil {
		l.pushTransfer(m)
		return
	}
	asks := r.orphans[m.Node]
	if len(asks) >= maxTransfers {
		// Merge into the newest ask rather than drop one: a joining
		// node's initial sync asks for every application at once (BUG-11).
		last := &asks[len(asks)-1]
		last.req = mergeSyncRequests(last.req, m)
		last.at = time.Now()
		return
	}
	r.orphans[m.Node] = append(asks, orphanAsk{req: m, at: time.Now()})
}

// applyLoop applies received records in arrival order.
func (r *Replicator) applyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case in := <-r.applyQ:
			m := in.recs
			initial := !r.Ready()
			if len(m.Done) > 0 || (initial && r.syncProgress(m.Records)) {
				r.progress.Store(time.Now().UnixNano())
			}
			r.applyRecords(ctx, m.Records, initial, in.offset)
			if len(m.Done) > 0 {
				r.syncDone(m.Done)
			}
		}
	}
}

// controlLoop handles received digests.
func (r *Replicator) controlLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-r.controlQ:
			if d, ok := m.(*wire.Digest); ok {
				r.mergeDigest(ctx, d)
			}
		}
	}
}

// received is a batch of records as it arrived: offset is this node's
// wall clock minus the sender's at the time (actors.Record.Offset).
type received struct {
	recs   *wire.Records
	offset int64
}

// offsetFrom returns this node's wall clock minus sentAt, a sender's
// (0 when the sender did not say).
func (r *Replicator) offsetFrom(sentAt int64) int64 {
	if sentAt == 0 {
		return 0
	}
	return r.cfg.Clock.Now().UnixMilli() - sentAt
}

// applyRecords installs records, grouped by application, in order; offset
// is the batch's (received).
func (r *Replicator) applyRecords(ctx context.Context, recs []wire.InstanceRecord, initial bool, offset int64) {
	byApp := map[string][]actors.Record{}
	var order []string
	skipped := 0
	for _, w := range recs {
		rec := fromWire(w)
		rec.Offset = offset
		if err := actors.ValidateRecord(rec); err != nil {
			// The wire decodes such a record; applying it would fail in
			// the application's actor (a live record with no instance) or
			// overflow its lease.
			if skipped == 0 {
				r.log.Warn("skipped an invalid replicated record", "app", rec.App, "id", rec.ID,
					"from", rec.Version.Node, "err", err)
			}
			skipped++
			continue
		}
		if _, ok := byApp[rec.App]; !ok {
			order = append(order, rec.App)
		}
		byApp[rec.App] = append(byApp[rec.App], rec)
	}
	if skipped > 1 {
		r.log.Warn("skipped invalid replicated records", "count", skipped)
	}
	for _, app := range order {
		if _, err := r.store.ApplyRecords(ctx, app, byApp[app], initial); err != nil {
			r.log.Warn("applying replicated records failed", "app", app, "err", err)
		}
	}
}

// MergeRemoteState implements memberlist's push/pull: the peer's digest
// comes in.
func (r *Replicator) MergeRemoteState(buf []byte, join bool) {
	if len(buf) == 0 {
		return
	}
	// The previous release writes its state a version below the
	// oldest this build speaks (wire.DecodeState).
	r.handle(buf, wire.DecodeState)
}
