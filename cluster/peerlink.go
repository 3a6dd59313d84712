package cluster

// Peer links
//
// Every other alive member has one peerLink: bounded queues per message
// class and the only goroutine that sends to that member. A member that
// stops reading, or dies in the middle of a transfer, therefore slows only
// its own link: each send returns within the membership's stream timeout,
// the queues are bounded, and nothing else waits for the link.
//
// Classes, in the order a link serves them:
//   - control: digests, sync requests and load reports; a newer digest or
//     load report replaces a queued one (like memberlist's
//     TransmitLimitedQueue; a replaced digest's request for a reply is
//     kept), and at most maxSyncQueued sync requests wait (beyond, the ask
//     is dropped and released, so the next digest asks again); a digest
//     asking for a reply and a sync request are sent as pulls, whose
//     answers come back on the same stream (antientropy.go);
//   - renewals: a coalesced set, merged in by the forwarding timer. A set
//     whose send fails stays (merged with newer renewals) and is tried
//     again on the next flush or after any send to the peer succeeds, and
//     the peer takes it on its own stream when it pulls from this node
//     (answerExchange): in an asymmetric partition an owner this node
//     cannot dial still gets the renewals (BUG-7). A renewal older than
//     maxRenewalHold is dropped instead of sent (forward.go);
//   - records: local changes for fan-out, at most MaxQueue; on overflow the
//     oldest go and a digest exchange repairs the peer afterwards;
//   - transfers: anti-entropy answers to the peer's sync requests (at most
//     maxTransfers waiting; later requests are merged into the newest
//     waiting one), sent one batch at a time between the other
//     classes, and abandoned when the peer leaves or a send fails.

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// Bounds of a link's queues besides ReplicatorConfig.MaxQueue.
const (
	maxSyncQueued = 256
	maxTransfers  = 8
)

// peerLink is the sending side of the connection to one member.
type peerLink struct {
	r    *Replicator
	name string

	mu        sync.Mutex
	control   []wire.Message
	renewals  renewalSet
	renewHeld bool // the last renewal send failed: wait for a flush or a send that works
	records   []wire.InstanceRecord
	dropped   bool
	transfers []*transfer

	wake   chan struct{}                   // the control sender's (with dial-per-message, the one sender's)
	wakes  [numStreamClasses]chan struct{} // each class's sender's; wakes[classControl] is wake
	ctx    context.Context                 // cancelled when the link closes
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	drain  time.Time     // guarded by mu: when set, run exits once idle or past it
}

// transfer is an anti-entropy answer in progress.
type transfer struct {
	req  *wire.SyncRequest
	next int             // index of the next application in req.Apps
	recs []actors.Record // records of the current application still to send
	done []string        // applications completed but not yet announced
	cur  string          // the current application ("" between apps)
	size int             // records sent so far
}

// orphanAsk is a sync request from a member that is not yet alive in this
// node's membership (it heard of us first); it is handed to the member's
// link when one is made, or dropped after orphanTTL.
type orphanAsk struct {
	req *wire.SyncRequest
	at  time.Time
}

// orphanTTL bounds how long a sync request waits for its asker to become a
// member here.
const orphanTTL = 5 * time.Second

func newPeerLink(r *Replicator, name string) *peerLink {
	ctx, cancel := context.WithCancel(r.ctx)
	l := &peerLink{r: r, name: name, renewals: renewalSet{}, wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	for c := range l.wakes {
		l.wakes[c] = make(chan struct{}, 1)
	}
	l.wakes[classControl] = l.wake
	return l
}

// poke wakes every class's sender.
func (l *peerLink) poke() {
	for c := range numStreamClasses {
		l.pokeClass(c)
	}
}

// pokeClass wakes the sender of class c (with the dial-per-message
// sabotage switch, the one sender of every class).
func (l *peerLink) pokeClass(c streamClass) {
	w := l.wakes[c]
	if sabotage.On(sabotage.DialPerMessage) || w == nil {
		w = l.wake
	}
	select {
	case w <- struct{}{}:
	default:
	}
}

// reachedLocked notes that a send to the peer worked: renewals held after
// a failed send may go now. l.mu must be held.
func (l *peerLink) reachedLocked() {
	if l.renewHeld && len(l.renewals) > 0 {
		l.renewHeld = false
		l.pokeClass(classRenewals)
	}
}

// pushRecord queues a record for fan-out.
func (l *peerLink) pushRecord(rec wire.InstanceRecord) {
	l.mu.Lock()
	if len(l.records) >= l.r.cfg.MaxQueue {
		l.records = l.records[1:]
		l.dropped = true
		l.r.stats.dropped.Add(1)
	}
	l.records = append(l.records, rec)
	l.mu.Unlock()
	l.pokeClass(classRecords)
}

// pushControl queues a control message. A digest or load report replaces
// one of its kind still queued (a replaced digest's Reply is kept). It
// reports false when a sync request was refused because maxSyncQueued wait
// already.
func (l *peerLink) pushControl(m wire.Message) bool {
	l.mu.Lock()
	switch m := m.(type) {
	case *wire.SyncRequest:
		n := 0
		for _, q := range l.control {
			if q.Type() == wire.TypeSyncRequest {
				n++
			}
		}
		if n >= maxSyncQueued {
			l.mu.Unlock()
			return false
		}
	case *wire.Digest:
		for _, q := range l.control {
			if d, ok := q.(*wire.Digest); ok && d.Reply && !m.Reply {
				c := *m
				c.Reply = true
				m = &c
			}
		}
		l.control = slices.DeleteFunc(l.control, func(q wire.Message) bool { return q.Type() == wire.TypeDigest })
		l.control = append(l.control, m)
		l.mu.Unlock()
		l.pokeClass(classControl)
		return true
	case *wire.Handoff:
		// Each carries its own applications: none replaces another.
	default:
		l.control = slices.DeleteFunc(l.control, func(q wire.Message) bool { return q.Type() == m.Type() })
	}
	l.control = append(l.control, m)
	l.mu.Unlock()
	l.pokeClass(classControl)
	return true
}

// addRenewals merges coalesced renewals for this peer (the forwarding
// timer's flush); renewals held after a failed send are tried again with
// them.
func (l *peerLink) addRenewals(set renewalSet) {
	l.mu.Lock()
	l.renewals.merge(set)
	l.renewHeld = false
	l.mu.Unlock()
	l.pokeClass(classRenewals)
}

// holdRenewals puts back renewals whose send failed: they wait, merged
// with newer ones, for the next flush, a send to the peer that works, or
// the peer's pull (takeRenewals). With the forwarded-renewals-dropped
// sabotage switch they are dropped, as before the BUG-7 fix.
func (l *peerLink) holdRenewals(set renewalSet) {
	if sabotage.On(sabotage.ForwardedRenewalsDropped) {
		return
	}
	l.mu.Lock()
	l.renewals.merge(set)
	l.renewHeld = true
	l.mu.Unlock()
}

// takeRenewalsLocked removes and returns the coalesced renewals that are
// still young enough to deliver (nil if none); the older ones are dropped
// (see renewalSet.dropOlder).
func (l *peerLink) takeRenewalsLocked(now time.Time) renewalSet {
	if n := l.renewals.dropOlder(now.Add(-l.r.maxRenewalHold())); n > 0 {
		l.r.log.Debug("held renewals dropped: too old to deliver", "owner", l.name, "renewals", n)
	}
	if len(l.renewals) == 0 {
		return nil
	}
	ren := l.renewals
	l.renewals = renewalSet{}
	l.renewHeld = false
	return ren
}

// takeRenewals removes and returns the coalesced renewals queued for the
// peer (nil if none), for the answer to its pull.
func (l *peerLink) takeRenewals() renewalSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.takeRenewalsLocked(time.Now())
}

// pushTransfer queues an answer to the peer's sync request. When
// maxTransfers wait, the request is merged into the newest waiting one,
// which has not started (only the first is being sent): nothing the peer
// asked for is dropped, and what waits stays bounded by the applications
// there are (BUG-11: dropping the oldest lost half of a joining node's
// initial sync).
func (l *peerLink) pushTransfer(req *wire.SyncRequest) {
	l.mu.Lock()
	if n := len(l.transfers); n >= maxTransfers {
		last := l.transfers[n-1]
		last.req = mergeSyncRequests(last.req, req)
	} else {
		l.transfers = append(l.transfers, &transfer{req: req})
	}
	l.mu.Unlock()
	l.pokeClass(classTransfers)
}

// mergeSyncRequests returns a request for the applications of both, b's
// versions winning for an application both ask for.
func mergeSyncRequests(a, b *wire.SyncRequest) *wire.SyncRequest {
	out := &wire.SyncRequest{Node: b.Node, Apps: make([]wire.SyncApp, 0, len(a.Apps)+len(b.Apps))}
	newer := make(map[string]bool, len(b.Apps))
	for _, sa := range b.Apps {
		newer[sa.App] = true
	}
	for _, sa := range a.Apps {
		if !newer[sa.App] {
			out.Apps = append(out.Apps, sa)
		}
	}
	out.Apps = append(out.Apps, b.Apps...)
	return out
}

// close stops the link at once: what is queued is dropped (anti-entropy
// repairs the peer if it comes back).
func (l *peerLink) close() { l.cancel() }

// drainAndClose lets the link send what is queued until deadline, then
// stops it, and waits for it.
func (l *peerLink) drainAndClose(deadline time.Time) {
	l.mu.Lock()
	l.drain = deadline
	l.mu.Unlock()
	l.poke()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
	l.cancel()
	<-l.done
}

// run sends until the link closes: one sender per message class, each on
// its own stream to the peer (stream.go), so a class whose sends are slow
// or failing (a transfer the peer reads slowly, a dial that waits for a
// lost SYN's retransmit) never holds another's. With the dial-per-message
// sabotage switch one sender serves every class in turn, as before.
func (l *peerLink) run() {
	defer close(l.done)
	if sabotage.On(sabotage.DialPerMessage) {
		l.loop(l.wake, l.sendSome)
		return
	}
	var wg sync.WaitGroup
	for c := range numStreamClasses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.loop(l.wakes[c], func() bool { return l.sendClass(c) })
		}()
	}
	wg.Wait()
}

// loop calls send until the link closes, waiting on wake while there is
// nothing to send; while draining it returns once idle or past the drain
// deadline.
func (l *peerLink) loop(wake <-chan struct{}, send func() bool) {
	for {
		if !send() {
			l.mu.Lock()
			draining := !l.drain.IsZero()
			l.mu.Unlock()
			if draining {
				return
			}
			select {
			case <-l.ctx.Done():
				return
			case <-wake:
			}
		}
		if l.ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		past := !l.drain.IsZero() && time.Now().After(l.drain)
		l.mu.Unlock()
		if past {
			return
		}
	}
}

// sendSome sends at most one message of each class, in class order, and
// reports whether it sent (or tried to send) anything.
func (l *peerLink) sendSome() bool {
	sent := false
	for c := range numStreamClasses {
		if l.sendClass(c) {
			sent = true
		}
	}
	return sent
}

// sendClass sends at most one message of class c and reports whether it
// sent (or tried to send) anything.
func (l *peerLink) sendClass(c streamClass) bool {
	switch c {
	case classControl:
		return l.sendControl()
	case classRenewals:
		return l.sendRenewals()
	case classRecords:
		return l.sendRecords()
	case classTransfers:
		return l.sendTransfer()
	}
	return false
}

// sendControl sends the first queued control message: a pull on an
// exchange (antientropy.go), or else on the control stream.
func (l *peerLink) sendControl() bool {
	l.mu.Lock()
	if len(l.control) == 0 {
		l.mu.Unlock()
		return false
	}
	ctrl := l.control[0]
	l.control = l.control[1:]
	l.mu.Unlock()
	ok := false
	if l.pulls(ctrl) && l.r.pull(l.name, ctrl) {
		ok = true
	} else if err := l.r.sendOn(l.name, classControl, ctrl); err != nil {
		l.r.log.Debug("control send failed", "peer", l.name, "type", ctrl.Type(), "err", err)
	} else {
		ok = true
	}
	if ok {
		l.r.countControl(ctrl)
		l.mu.Lock()
		l.reachedLocked()
		l.mu.Unlock()
	}
	return true
}

// sendRenewals forwards the coalesced renewals, unless they are held
// after a failed send (until a flush, or a send to the peer that works).
func (l *peerLink) sendRenewals() bool {
	l.mu.Lock()
	var ren renewalSet
	if len(l.renewals) > 0 && !l.renewHeld {
		ren = l.takeRenewalsLocked(time.Now())
	}
	l.mu.Unlock()
	if ren == nil {
		return false
	}
	if err := l.r.sendOn(l.name, classRenewals, renewalsMessage(ren)); err != nil {
		l.r.log.Debug("renewal forwarding failed; held for the next try", "owner", l.name, "err", err)
		l.holdRenewals(ren)
	} else {
		l.r.stats.renewalMsgs.Add(1)
		l.r.stats.renewals.Add(uint64(len(ren)))
	}
	return true
}

// sendRecords sends one batch of queued records (after an overflow, it
// asks for a digest exchange first).
func (l *peerLink) sendRecords() bool {
	l.mu.Lock()
	n := min(len(l.records), l.r.cfg.MaxBatch)
	var batch []wire.InstanceRecord
	if n > 0 {
		batch = l.records[:n:n]
		l.records = l.records[n:]
		if len(l.records) == 0 {
			l.records = nil
		}
	}
	dropped := l.dropped
	l.dropped = false
	l.mu.Unlock()

	sent := false
	if dropped {
		l.r.log.Warn("replication queue overflowed; anti-entropy will repair", "peer", l.name)
		l.pushControl(l.r.localDigest(true))
		sent = true
	}
	if batch != nil {
		sent = true
		if err := l.r.sendOn(l.name, classRecords, &wire.Records{Records: batch}); err != nil {
			l.r.log.Debug("replication send failed; anti-entropy will repair", "peer", l.name, "err", err)
		} else {
			l.r.stats.records.Add(1)
			l.mu.Lock()
			l.reachedLocked()
			l.mu.Unlock()
		}
	}
	return sent
}

// sendTransfer sends the next batch of the first transfer.
func (l *peerLink) sendTransfer() bool {
	l.mu.Lock()
	var tr *transfer
	if len(l.transfers) > 0 {
		tr = l.transfers[0]
	}
	l.mu.Unlock()
	if tr == nil {
		return false
	}
	if finished := l.r.transferStep(l, tr); finished {
		l.mu.Lock()
		l.transfers = slices.DeleteFunc(l.transfers, func(t *transfer) bool { return t == tr })
		l.mu.Unlock()
	}
	return true
}

// pulls reports whether m expects an answer (a digest asking for a reply,
// a sync request), which then comes on the stream this node dials (pull).
func (l *peerLink) pulls(m wire.Message) bool {
	switch m := m.(type) {
	case *wire.Digest:
		return m.Reply
	case *wire.SyncRequest:
		return true
	}
	return false
}

// updateLinks makes a link for every other alive member and closes the
// links of members that left.
func (r *Replicator) updateLinks(self string, members []string) {
	alive := map[string]bool{}
	var added []*peerLink
	r.linkMu.Lock()
	if !r.running {
		r.linkMu.Unlock()
		return
	}
	for _, m := range members {
		if m == self {
			continue
		}
		alive[m] = true
		if r.links[m] == nil {
			l := newPeerLink(r, m)
			r.links[m] = l
			added = append(added, l)
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				l.run()
			}()
		}
	}
	var removed []string
	for name, l := range r.links {
		if !alive[name] {
			l.close() // abandons its transfers: the asker is gone
			l.mu.Lock()
			held := l.renewals
			l.renewals = renewalSet{}
			l.mu.Unlock()
			r.reroute(name, held) // on to the applications' new owners
			delete(r.links, name)
			r.forgetLoad(name)
			removed = append(removed, name)
		}
	}
	now := time.Now()
	for name, asks := range r.orphans {
		l := r.links[name]
		for _, a := range asks {
			if l != nil && now.Sub(a.at) < orphanTTL {
				l.pushTransfer(a.req)
			}
		}
		if l != nil || len(asks) == 0 || now.Sub(asks[len(asks)-1].at) >= orphanTTL {
			delete(r.orphans, name)
		}
	}
	r.linkMu.Unlock()
	for _, name := range removed {
		r.log.Debug("peer removed", "peer", name)
	}
	for _, l := range added {
		r.log.Debug("peer added", "peer", l.name)
		l.pushControl(r.localDigest(true))
	}
}

// link returns the link to name, or nil.
func (r *Replicator) link(name string) *peerLink {
	r.linkMu.Lock()
	defer r.linkMu.Unlock()
	return r.links[name]
}

// eachLink calls fn for every link.
func (r *Replicator) eachLink(fn func(*peerLink)) {
	r.linkMu.Lock()
	links := make([]*peerLink, 0, len(r.links))
	for _, l := range r.links {
		links = append(links, l)
	}
	r.linkMu.Unlock()
	for _, l := range links {
		fn(l)
	}
}

// countControl counts a control message that was sent.
func (r *Replicator) countControl(m wire.Message) {
	switch m.(type) {
	case *wire.Digest:
		r.stats.digests.Add(1)
	case *wire.SyncRequest:
		r.stats.syncs.Add(1)
	}
}

// Apply implements actors.Sink: local changes are queued for every peer;
// replicated ones are not sent again.
func (r *Replicator) Apply(ev *actors.Event) {
	if ev.Replicated {
		return
	}
	rec := toWire(actors.Record{App: ev.Instance.App, ID: ev.Instance.ID(), Version: ev.Version,
		Deleted: ev.Action == actors.ActionDeleted, Evicted: ev.Cause == actors.CauseEvict || ev.Cause == actors.CauseRefuseStale,
		LastRenewal: ev.Instance.LeaseInfo.LastRenewalTimestamp, Instance: ev.Instance})
	r.eachLink(func(l *peerLink) { l.pushRecord(rec) })
}
