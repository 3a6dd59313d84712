package cluster

// Anti-entropy
//
// Anti-entropy repairs whatever the fan-out missed (loss, partitions,
// restarts). Nodes exchange per-application digests (an XOR of instance
// versions) through memberlist's push/pull and, on every membership change
// and every AntiEntropyInterval, directly with a random peer. For every
// application whose digest differs, the receiver sends the peer a
// SyncRequest listing the (id, version) of every record it holds there; the
// peer answers with only the records that are newer or missing from that
// list. So a heal moves the records that differ (each at most once per
// direction asked), not whole applications.
//
// A digest that asks for a reply and a sync request are pulls: they go on a
// stream the asker opens on the session it dialled (an exchange,
// exchange.go), and the peer's digest
// or transfer comes back on that stream, so anti-entropy works whenever the
// asker can dial, even if the peer cannot dial it (an asymmetric partition,
// BUG-7). A peer that does not answer gets the message the old way, and
// answers on a stream it dials (the link's transfers). Besides the random
// peer of each round, a node pulls every round from each member whose
// renewal reports stopped (silentPeers): if that member cannot dial this
// node, the answer to the pull carries the renewals it holds for this node
// as their owner (answerRenewals), which its forwards could not deliver.
//
// Deleted instances stay deleted: see actors.applyRecord for tombstones aged
// by HLC time and for copies that outlived them. A record older than the
// tombstone TTL that nobody renews is refused and answered with an
// eviction, whatever the partition length.
//
// Readiness: a joining node is ready once the transfers it asked for after
// its first digest exchange have arrived, or once no sync progress came for
// ReadyTimeout. Until then it serves no registry reads (httpapi answers 403,
// as Eureka does while it waits), and a node that is not ready answers sync
// requests with "done" and nothing else, so half-synced data is never passed
// on.

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// inflightSet is the transfers asked for and not yet done: by application,
// then by peer, when asked. Indexed by application first, since a finished
// transfer ends its application's transfers from every peer: at a million
// instances (50,000 applications) a scan of every transfer per finished
// batch was a fifth of a joining node's CPU.
type inflightSet struct {
	byApp map[string]map[string]time.Time
	n     int
}

// get returns when app was asked of peer, and whether it is in flight.
func (s *inflightSet) get(app, peer string) (time.Time, bool) {
	at, ok := s.byApp[app][peer]
	return at, ok
}

// put records that app was asked of peer at at.
func (s *inflightSet) put(app, peer string, at time.Time) {
	peers := s.byApp[app]
	if peers == nil {
		peers = map[string]time.Time{}
		s.byApp[app] = peers
	}
	if _, ok := peers[peer]; !ok {
		s.n++
	}
	peers[peer] = at
}

// drop forgets the transfer of app from peer.
func (s *inflightSet) drop(app, peer string) {
	peers := s.byApp[app]
	if _, ok := peers[peer]; !ok {
		return
	}
	s.n--
	if len(peers) == 1 {
		delete(s.byApp, app)
		return
	}
	delete(peers, peer)
}

// dropApp forgets app's transfers from every peer.
func (s *inflightSet) dropApp(app string) {
	s.n -= len(s.byApp[app])
	delete(s.byApp, app)
}

// antiEntropy is the bookkeeping of the transfers this node asked for.
type antiEntropy struct {
	pending    map[string]time.Time // apps of the initial sync not yet done, by when last asked (zero: ask again now)
	inflight   inflightSet          // transfers asked for and not yet done, by when
	initialAsk bool
	// progressAt is when records of an application the initial sync
	// waits for last arrived. While they keep coming, nothing pending is
	// asked again: the peers answer an ask one application after another,
	// so at a million instances the last applications of an ask are
	// reached minutes after it was made, and asking again would only
	// multiply the transfers.
	progressAt time.Time
	// exch is the membership's exchanges (nil: pull the old way only).
	exch atomic.Pointer[exchanger]
	// join is the membership's JoinStatus (nil: not told; a joining node
	// is then ready by the ready timeout as before).
	join atomic.Pointer[func() JoinStatus]
	// readyWhy is why the node became ready (nil: not yet).
	readyWhy atomic.Pointer[string]
}

func (a *antiEntropy) init() {
	a.pending = map[string]time.Time{}
	a.inflight = inflightSet{byApp: map[string]map[string]time.Time{}}
}

// Limits of one SyncRequest.
const (
	maxSyncApps     = 64
	maxSyncVersions = 20000
)

// localDigest summarizes the registry per application.
func (r *Replicator) localDigest(reply bool) *wire.Digest {
	d := &wire.Digest{Node: r.localName(), Reply: reply}
	if r.snaps == nil {
		return d
	}
	r.snaps.Snapshot().Apps(func(a *view.App) bool {
		d.Apps = append(d.Apps, wire.AppDigest{App: a.Name(), Hash: a.Digest(), Count: uint32(a.Len())})
		return true
	})
	return d
}

// pushDigest queues this node's digest for a peer, asking for its digest
// back when reply is set.
func (r *Replicator) pushDigest(to string, reply bool) {
	if l := r.link(to); l != nil {
		l.pushControl(r.localDigest(reply))
	}
}

// mergeDigest compares a peer's digest with ours and asks the peer for what
// differs, including applications only we have (the peer may hold
// tombstones for them).
func (r *Replicator) mergeDigest(ctx context.Context, d *wire.Digest) {
	self := r.localName()
	if d.Node == "" || self == "" || d.Node == self {
		return
	}
	walk := func(func(*view.App) bool) {}
	if r.snaps != nil {
		walk = r.snaps.Snapshot().Apps
	}
	want := digestDiff(walk, d.Apps)
	l := r.link(d.Node)
	if l == nil {
		// Not yet a member here (push/pull on join runs before the join
		// event): the digest this node sends when it makes the link
		// starts the exchange again. Claiming anything now would leave
		// it marked as asked for, and the initial sync waiting for it.
		return
	}
	if d.Reply {
		l.pushControl(r.localDigest(false))
	}
	want, first := r.claimTransfers(d.Node, want)
	if first && len(want) == 0 {
		r.markReady("in sync with " + d.Node)
	}
	req := &wire.SyncRequest{Node: self}
	versions := 0
	for _, app := range want {
		vs, err := r.store.Versions(ctx, app)
		if err != nil {
			r.log.Warn("reading versions for sync failed", "app", app, "err", err)
			r.releaseTransfers(d.Node, []string{app})
			continue
		}
		req.Apps = append(req.Apps, wire.SyncApp{App: app, Have: versionsToWire(vs)})
		versions += len(vs)
		if len(req.Apps) >= maxSyncApps || versions >= maxSyncVersions {
			r.pushSync(l, req)
			req, versions = &wire.SyncRequest{Node: self}, 0
		}
	}
	if len(req.Apps) > 0 {
		r.pushSync(l, req)
	}
}

// digestDiff returns the applications whose digests differ between ours
// (walk, in name order, as a snapshot walks them) and a peer's digest:
// those with different hashes, those only the peer lists and those only
// we hold. It merges the two sorted lists (a peer's digest is in the same
// order; one that is not is sorted first), so a digest of 50,000
// applications costs no map of them.
func digestDiff[A appDigest](walk func(func(A) bool), theirs []wire.AppDigest) []string {
	byApp := func(a, b wire.AppDigest) int { return strings.Compare(a.App, b.App) }
	if !slices.IsSortedFunc(theirs, byApp) {
		theirs = slices.SortedFunc(slices.Values(theirs), byApp)
	}
	var want []string
	i := 0
	walk(func(a A) bool {
		name := a.Name()
		for i < len(theirs) && theirs[i].App < name {
			want = append(want, theirs[i].App) // only the peer lists it
			i++
		}
		if i < len(theirs) && theirs[i].App == name {
			if theirs[i].Hash != a.Digest() {
				want = append(want, name)
			}
			i++
			return true
		}
		want = append(want, name) // only we hold it
		return true
	})
	for ; i < len(theirs); i++ {
		want = append(want, theirs[i].App)
	}
	return want
}

// appDigest is what digestDiff reads of an application (*view.App).
type appDigest interface {
	Name() string
	Digest() uint64
}

// pushSync queues a sync request on l, or releases its applications when
// too many wait, so that the next digest asks for them again.
func (r *Replicator) pushSync(l *peerLink, req *wire.SyncRequest) {
	if l.pushControl(req) {
		return
	}
	apps := make([]string, len(req.Apps))
	for i, a := range req.Apps {
		apps[i] = a.App
	}
	r.releaseTransfers(l.name, apps)
}

// claimTransfers marks the applications of want as asked of peer and
// returns those not already in flight, and whether this was the first
// digest exchange (which starts the initial sync).
func (r *Replicator) claimTransfers(peer string, want []string) ([]string, bool) {
	r.aeMu.Lock()
	defer r.aeMu.Unlock()
	first := !r.ae.initialAsk
	r.ae.initialAsk = true
	now := time.Now()
	if first {
		for _, app := range want {
			r.ae.pending[app] = now
		}
	}
	// Do not ask a peer again for a transfer it is still sending: digests
	// arrive from several timers, and re-requesting a running transfer only
	// multiplies it. Other peers may still be asked, since each may hold
	// changes the others lack.
	retry := 6 * r.cfg.AntiEntropyInterval
	ready := r.Ready()
	kept := want[:0]
	for _, app := range want {
		if at, ok := r.ae.inflight.get(app, peer); ok && now.Sub(at) < retry {
			continue
		}
		if at, ok := r.ae.pending[app]; ok && !first && !ready {
			// The initial sync is bringing it: one copy is enough, unless
			// the ask was released, or nothing came of the sync for a
			// retry time (the answer was lost with its stream or peer:
			// BUG-11), then ask again.
			if !at.IsZero() && (now.Sub(at) < retry || (now.Sub(r.ae.progressAt) < retry && !sabotage.On(sabotage.SyncReasksWhileProgressing))) {
				continue
			}
			r.ae.pending[app] = now
		}
		r.ae.inflight.put(app, peer, now)
		kept = append(kept, app)
	}
	return kept, first
}

// releaseTransfers forgets that apps were asked of peer (the ask failed),
// so that the next digest asks again. The initial sync still waits for
// them: they stay pending, to be asked again at once (a released
// application that left the pending set would be neither waited for nor
// counted as progress, and a node joining a registry of a million
// instances was declared ready by the timeout holding a quarter of it).
func (r *Replicator) releaseTransfers(peer string, apps []string) {
	r.aeMu.Lock()
	defer r.aeMu.Unlock()
	for _, app := range apps {
		r.ae.inflight.drop(app, peer)
		if _, ok := r.ae.pending[app]; ok && !sabotage.On(sabotage.SyncReasksWhileProgressing) {
			r.ae.pending[app] = time.Time{}
		} else {
			delete(r.ae.pending, app)
		}
	}
}

// syncProgress reports whether recs carry records of applications the
// initial sync waits for, and marks those as heard of now (their retry
// time restarts). Fan-out of live changes to other applications is no
// progress: under client churn it would hold the ready timeout off for
// ever (BUG-11).
func (r *Replicator) syncProgress(recs []wire.InstanceRecord) bool {
	r.aeMu.Lock()
	defer r.aeMu.Unlock()
	now, progress := time.Now(), false
	for i := range recs {
		if _, ok := r.ae.pending[recs[i].App]; ok {
			r.ae.pending[recs[i].App] = now
			progress = true
		}
	}
	if progress {
		r.ae.progressAt = now
	}
	return progress
}

// syncDone records finished transfers.
func (r *Replicator) syncDone(apps []string) {
	r.aeMu.Lock()
	for _, a := range apps {
		delete(r.ae.pending, a)
		r.ae.inflight.dropApp(a)
	}
	ready := r.ae.initialAsk && len(r.ae.pending) == 0
	r.aeMu.Unlock()
	if ready {
		r.markReady("initial sync complete")
	}
}

// transferStep sends the next message of a transfer to l's peer: at most
// MaxBatch records, newer than or missing from the asker's versions, with
// the applications completed so far. It reports whether the transfer is
// over (finished, or abandoned after a failed send).
func (r *Replicator) transferStep(l *peerLink, tr *transfer) bool {
	return r.transferStepTo(l.ctx, l.name, tr, func(m wire.Message) error { return r.sendOn(l.name, classTransfers, m) })
}

// transferStepTo is transferStep for any way of sending to peer: a link,
// or the asker's own stream (answerExchange).
func (r *Replicator) transferStepTo(ctx context.Context, peer string, tr *transfer, send func(wire.Message) error) bool {
	apps := tr.req.Apps
	if !r.Ready() {
		// Half-synced data would be sent again by the node it came from;
		// say "done" so the asker does not wait, and let the next
		// anti-entropy round fetch what this node really has.
		done := make([]string, len(apps))
		for i, a := range apps {
			done[i] = a.App
		}
		if err := send(&wire.Records{Done: done}); err != nil {
			r.log.Debug("sync answer failed", "peer", peer, "err", err)
		}
		return true
	}
	var batch []wire.InstanceRecord
	for len(batch) < r.cfg.MaxBatch {
		if len(tr.recs) == 0 {
			if tr.cur != "" {
				tr.done = append(tr.done, tr.cur)
				tr.cur = ""
			}
			if tr.next >= len(apps) {
				break
			}
			sa := apps[tr.next]
			tr.next++
			recs, err := r.store.RecordsNewerThan(ctx, sa.App, versionsFromWire(sa.Have))
			if err != nil {
				r.log.Warn("reading records for sync failed", "app", sa.App, "err", err)
				if ctx.Err() != nil {
					return true
				}
				continue
			}
			tr.cur, tr.recs = sa.App, recs
			continue
		}
		n := min(len(tr.recs), r.cfg.MaxBatch-len(batch))
		for _, rec := range tr.recs[:n] {
			batch = append(batch, toWire(rec))
		}
		tr.recs = tr.recs[n:]
	}
	finished := tr.next >= len(apps) && len(tr.recs) == 0 && tr.cur == ""
	if len(batch) == 0 && len(tr.done) == 0 {
		return finished
	}
	if err := send(&wire.Records{Records: batch, Done: tr.done}); err != nil {
		r.log.Debug("sync transfer abandoned", "peer", peer, "err", err)
		return true
	}
	r.stats.transferRecs.Add(uint64(len(batch)))
	tr.size += len(batch)
	tr.done = nil
	return finished
}

func (r *Replicator) antiEntropyLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.AntiEntropyInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if sabotage.On(sabotage.NoAntiEntropy) {
				continue
			}
			o := r.own.Load()
			var others []string
			for _, m := range o.members {
				if m != o.self {
					others = append(others, m)
				}
			}
			peer := ""
			if len(others) > 0 {
				r.rndMu.Lock()
				peer = others[r.rnd.Intn(len(others))]
				r.rndMu.Unlock()
				r.pushDigest(peer, true)
			}
			var d *wire.Digest // built once for every silent peer
			for _, p := range r.silentPeers(others) {
				l := r.link(p)
				if p == peer || l == nil {
					continue
				}
				if d == nil {
					d = r.localDigest(true)
				}
				l.pushControl(d)
			}
		}
	}
}

// silentPeers returns the members among others whose renewal reports
// (load.go, every LoadInterval) stopped: they reported once, and not for
// three LoadIntervals. Such a member may be unable to dial this node (an
// asymmetric partition) while this node can still dial it, so the
// anti-entropy loop pulls from it every round, and the pull brings back
// what it could not send, renewals forwarded to this node included
// (answerRenewals). While every member reports, the list is empty and
// nothing extra is sent.
func (r *Replicator) silentPeers(others []string) []string {
	if sabotage.On(sabotage.ForwardedRenewalsDropped) {
		return nil
	}
	now := time.Now()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	var out []string
	for _, m := range others {
		if p, ok := r.loads[m]; ok && !p.fresh(now, r.cfg.LoadInterval) {
			out = append(out, m)
		}
	}
	return out
}

// answerRenewals sends, on the stream of peer's pull, the renewals this
// node holds for peer as their owner (forwards that could not be sent, or
// not yet), so that an owner that can dial this node gets them even when
// this node cannot dial it (BUG-7). A failed send puts them back.
func (r *Replicator) answerRenewals(peer string, send func(wire.Message) error) {
	if peer == "" || sabotage.On(sabotage.ForwardedRenewalsDropped) {
		return
	}
	l := r.link(peer)
	if l == nil {
		return
	}
	ren := l.takeRenewals()
	if ren == nil {
		return
	}
	if err := send(renewalsMessage(ren)); err != nil {
		r.log.Debug("renewals in a pull's answer failed; held", "owner", peer, "err", err)
		l.holdRenewals(ren)
		return
	}
	r.stats.renewalMsgs.Add(1)
	r.stats.renewals.Add(uint64(len(ren)))
}

// readyLoop gives up waiting for the initial sync when it stops making
// progress for ReadyTimeout (e.g. this is the first node, or its seeds are
// down), not while a large transfer is still arriving, and never while the
// membership reports its join refused (another protocol, another gossip
// key, another label): a node that cannot join must not serve its own
// empty registry as the cluster's. The refusal holds readiness for as long
// as it lasts (it is a misconfiguration; the status endpoints, the log and
// heureka_join_refused say which), and the timeout starts again from its
// end.
func (r *Replicator) readyLoop(ctx context.Context) {
	t := time.NewTicker(max(r.cfg.ReadyTimeout/20, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-r.ready:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			js := r.joinStatus()
			if js.State == JoinRefused && !sabotage.On(sabotage.ReadyDespiteRefusal) {
				r.progress.Store(time.Now().UnixNano())
				continue
			}
			if time.Since(time.Unix(0, r.progress.Load())) > r.cfg.ReadyTimeout {
				why := "no initial sync progress within the ready timeout"
				if js.State == JoinUnreachable || js.State == JoinJoining {
					why = "no seed reachable within the ready timeout: serving alone, with only what clients register here, until a seed answers"
				}
				r.markReady(why)
				return
			}
		}
	}
}

// useJoinStatus gives the Replicator the membership's JoinStatus;
// Membership.Start calls it.
func (r *Replicator) useJoinStatus(f func() JoinStatus) { r.ae.join.Store(&f) }

// joinStatus is the membership's JoinStatus, or "joined" when not told.
func (r *Replicator) joinStatus() JoinStatus {
	if f := r.ae.join.Load(); f != nil {
		return (*f)()
	}
	return JoinStatus{State: JoinJoined}
}

// Readiness is whether the node serves registry reads and why, in words
// for /readyz, /eureka/status and the dashboard.
type Readiness struct {
	Ready bool
	// Reason says why the node is (not) ready.
	Reason string
	// Alone: ready without having joined anyone (no seeds, every seed is
	// this node, or none reachable within the ready timeout).
	Alone bool
	// Join is the membership's join status.
	Join JoinStatus
}

// Readiness reports whether the node is ready and why.
func (r *Replicator) Readiness() Readiness {
	js := r.joinStatus()
	rd := Readiness{Ready: r.Ready(), Join: js}
	alone := (js.State == JoinAlone || js.State == JoinUnreachable) && len(r.aliveMembers()) <= 1
	switch {
	case rd.Ready && alone:
		rd.Alone, rd.Reason = true, "serving alone: "+js.Reason
	case rd.Ready:
		if w := r.ae.readyWhy.Load(); w != nil {
			rd.Reason = *w
		}
	case js.State == JoinRefused:
		rd.Reason = "not ready: join refused (" + string(js.Cause) + "): " + js.Reason
	case js.State == JoinUnreachable:
		rd.Reason = "not ready: " + js.Reason + "; ready alone after the ready timeout without progress"
	default:
		rd.Reason = "not ready: initial cluster sync in progress"
	}
	return rd
}

// aliveMembers lists the live members (nil before Start).
func (r *Replicator) aliveMembers() []string {
	if p := r.getPeers(); p != nil {
		return p.AliveMembers()
	}
	return nil
}

func (r *Replicator) markReady(why string) {
	r.readyOnce.Do(func() {
		r.ae.readyWhy.Store(&why)
		r.log.Info("node ready", "reason", why)
		r.aeMu.Lock()
		clear(r.ae.pending) // what did not arrive, anti-entropy will fetch
		r.aeMu.Unlock()
		close(r.ready)
	})
}

// LocalState implements memberlist's push/pull: the digest goes out.
func (r *Replicator) LocalState(join bool) []byte {
	if r.getPeers() == nil || sabotage.On(sabotage.NoAntiEntropy) {
		return nil
	}
	// The reader is not known here: the lowest version, which every
	// member reads.
	b, err := wire.EncodeVersion(r.localDigest(false), r.lowestProtocol())
	if err != nil {
		return nil
	}
	return b
}

// useExchanger gives the Replicator the membership's exchanges (see
// exchange.go); Membership.Start calls it.
func (r *Replicator) useExchanger(x exchanger) { r.ae.exch.Store(&x) }

// pull sends a digest that asks for a reply, or a sync request, to peer on
// a stream this node dials, and handles the answers that come back on it
// (BUG-7: the answers then need no stream from peer to this node). It
// reports false when it did not reach the peer that way or the peer did not
// answer (an older node, or a busy one): the caller then sends m the old way.
func (r *Replicator) pull(peer string, m wire.Message) bool {
	x := r.ae.exch.Load()
	if x == nil || sabotage.On(sabotage.SyncAnswerDialled) {
		return false
	}
	b, err := r.encodeTo(peer, m)
	if err != nil {
		r.log.Warn("encoding a pull failed", "type", m.Type(), "err", err)
		return true
	}
	if err := r.countSent(&r.stats.messages, &r.stats.bytes, b, (*x).exchange(peer, b, r.handleMessage)); err != nil {
		r.log.Debug("pull failed", "peer", peer, "type", m.Type(), "err", err)
		return false
	}
	r.pulled(peer)
	return true
}

// answerExchange answers a peer's pull on the peer's stream: a digest with
// the renewals held for the peer (answerRenewals) and the local digest (and the peer's digest is merged as if pushed, without
// a reply by dial), a sync request with its transfer. It implements
// exchangeUser.
func (r *Replicator) answerExchange(req []byte, reply func([]byte) error) {
	m, err := wire.Decode(req)
	if err != nil {
		r.log.Warn("refused peer pull", "err", err)
		return
	}
	if sabotage.On(sabotage.NoAntiEntropy) {
		return
	}
	v, _ := wire.FrameVersion(req) // answer in the version asked in
	send := func(m wire.Message) error {
		b, err := r.encodeIn(v, m)
		if err != nil {
			return err
		}
		return r.countSent(&r.stats.answerMsgs, &r.stats.answerBytes, b, reply(b))
	}
	switch m := m.(type) {
	case *wire.Digest:
		r.answerRenewals(m.Node, send)
		if err := send(r.localDigest(false)); err != nil {
			r.log.Debug("digest answer failed", "peer", m.Node, "err", err)
		}
		d := *m
		d.Reply = false // answered here
		select {
		case r.controlQ <- &d:
		default:
			r.log.Debug("digest dropped: control queue full", "peer", m.Node)
		}
	case *wire.SyncRequest:
		if m.Node == "" {
			return
		}
		tr := &transfer{req: m}
		for !r.transferStepTo(r.ctx, m.Node, tr, send) {
		}
	}
}
