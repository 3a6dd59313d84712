package cluster

// Replication design
//
// Every node holds the whole registry. A change made on a node (register,
// cancel, status, metadata, and the owner's evictions) reaches the
// Replicator as an actors.Event and is queued for every other member; one
// goroutine per peer drains its queue in batches (wire.Records over a
// reliable stream), so a burst of changes costs one message per peer per
// batch and a slow or dead peer delays no one else. Changes that arrive from
// peers are applied as replicated and never sent on.
//
// Each record carries its actors.Version (HLC + node), and the registry keeps
// the newer of two records for the same instance; deletions leave
// tombstones, so a stale copy never resurrects a cancelled instance.
//
// Renewals are the hot path and are not broadcast: a renewal is applied
// where it arrives and, if that node is not the application's owner,
// coalesced into a per-owner set that is flushed every RenewFlushInterval as
// one wire.Renewals message. A renewal therefore costs at most one message
// (to one node), whatever the cluster size.
//
// Ownership is rendezvous hashing of the application name over the alive
// members. Only the owner evicts, and a node that just took an application
// over waits TakeoverGrace (one lease duration) before evicting it, so that
// the renewals now forwarded to it have time to arrive.
//
// Anti-entropy repairs whatever the fan-out missed (loss, partitions,
// restarts): nodes exchange per-application digests (an XOR of instance
// versions) through memberlist's push/pull and, on every membership change
// and every AntiEntropyInterval, directly with a random peer. Each side asks
// for the records of every application whose digest differs, and applies
// them last-writer-wins. A joining node reports ready once the transfers
// asked for after its first digest exchange have arrived.

import (
	"context"
	"hash/fnv"
	"log/slog"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/wire"
)

// Peers is what the Replicator needs from the membership layer.
type Peers interface {
	// LocalName is this node's name.
	LocalName() string
	// AliveMembers lists the names of the members that are alive or
	// suspect, this node included.
	AliveMembers() []string
	// SendReliable sends msg to the named member over a reliable stream.
	SendReliable(name string, msg []byte) error
}

// Store is what the Replicator needs from the registry (actors.Registry
// implements it).
type Store interface {
	ApplyRecords(ctx context.Context, app string, recs []actors.Record) (int, error)
	Records(ctx context.Context, app string) ([]actors.Record, error)
	RenewRemote(app string, ids []string)
	OwnershipChanged()
}

// Snapshots gives the current read snapshot (view.View implements it).
type Snapshots interface {
	Snapshot() *view.Snapshot
}

// ReplicatorConfig configures a Replicator.
type ReplicatorConfig struct {
	// Logger receives replication logs. Default: discard.
	Logger *slog.Logger
	// Clock tells the time for ownership grace periods. Default: system.
	Clock actors.Clock
	// TakeoverGrace is how long a node that takes over an application
	// waits before evicting it. Default 90s (one lease duration).
	TakeoverGrace time.Duration
	// RenewFlushInterval is how often coalesced renewals are forwarded to
	// their owners. Default 1s; must be well below the lease duration.
	RenewFlushInterval time.Duration
	// AntiEntropyInterval is how often this node exchanges digests with a
	// random peer. Default 5s.
	AntiEntropyInterval time.Duration
	// MaxBatch is the most records in one message. Default 512.
	MaxBatch int
	// MaxQueue is the most records queued for one peer; beyond it the
	// oldest are dropped and anti-entropy repairs the peer. Default 100000.
	MaxQueue int
	// ReadyTimeout bounds the wait for the initial sync; after it the node
	// reports ready anyway (e.g. it is the first node). Default 30s.
	ReadyTimeout time.Duration
	// Seed seeds the choice of anti-entropy peers. Default: time-based.
	Seed int64
	// Meta is this node's metadata for its peers (memberlist NodeMeta),
	// e.g. its Eureka API URL. At most 500 bytes.
	Meta []byte
}

// DefaultReplicatorConfig returns the defaults documented on
// ReplicatorConfig.
func DefaultReplicatorConfig() ReplicatorConfig {
	return ReplicatorConfig{
		Clock:               actors.SystemClock{},
		TakeoverGrace:       90 * time.Second,
		RenewFlushInterval:  time.Second,
		AntiEntropyInterval: 5 * time.Second,
		MaxBatch:            512,
		MaxQueue:            100000,
		ReadyTimeout:        30 * time.Second,
	}
}

// WireStats counts what this node sent to peers.
type WireStats struct {
	Messages, Bytes                 uint64 // all messages
	RecordMessages, RenewalMessages uint64
	Renewals                        uint64 // renewals forwarded (after coalescing)
	DigestMessages, SyncMessages    uint64
}

// Replicator replicates registry changes to every member, forwards renewals
// to owners, runs anti-entropy and decides ownership. It implements
// actors.Sink and actors.Ownership, and the memberlist delegate callbacks
// through Delegate.
type Replicator struct {
	cfg   ReplicatorConfig
	log   *slog.Logger
	store Store
	snaps Snapshots
	peers Peers

	own atomic.Pointer[ownership]

	mu      sync.Mutex
	queues  map[string]*peerQueue // guarded by mu
	running bool                  // guarded by mu: between Start and Stop

	renewMu sync.Mutex
	renews  map[string]map[actors.Key]uint32 // owner → key → count

	inbox chan wire.Message

	readyOnce  sync.Once
	ready      chan struct{}
	syncMu     sync.Mutex
	pending    map[string]bool       // apps asked for in the initial sync
	inflight   map[syncKey]time.Time // transfers asked for and not yet done, by when
	initialAsk bool
	progress   atomic.Int64  // unix nanos of the last sync transfer received
	serving    chan struct{} // bounds concurrent serveSync calls

	stats struct {
		messages, bytes, records, renewalMsgs, renewals, digests, syncs atomic.Uint64
	}

	rnd      *rand.Rand
	cancel   context.CancelFunc
	stopped  chan struct{} // closed by Stop
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// NewReplicator returns a Replicator; call Attach and Start before use.
func NewReplicator(cfg ReplicatorConfig) *Replicator {
	def := DefaultReplicatorConfig()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = def.Clock
	}
	if cfg.TakeoverGrace <= 0 {
		cfg.TakeoverGrace = def.TakeoverGrace
	}
	if cfg.RenewFlushInterval <= 0 {
		cfg.RenewFlushInterval = def.RenewFlushInterval
	}
	if cfg.AntiEntropyInterval <= 0 {
		cfg.AntiEntropyInterval = def.AntiEntropyInterval
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = def.MaxBatch
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = def.MaxQueue
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = def.ReadyTimeout
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	r := &Replicator{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "replication"),
		queues:   map[string]*peerQueue{},
		renews:   map[string]map[actors.Key]uint32{},
		inbox:    make(chan wire.Message, 256),
		ready:    make(chan struct{}),
		stopped:  make(chan struct{}),
		pending:  map[string]bool{},
		inflight: map[syncKey]time.Time{},
		serving:  make(chan struct{}, 2),
		rnd:      rand.New(rand.NewSource(cfg.Seed)),
	}
	r.own.Store(&ownership{base: cfg.Clock.Now(), self: ""})
	return r
}

// Attach connects the replicator to the registry and its view. It must be
// called before Start (the registry is built with the replicator as a Sink
// and Ownership, so they are created in two steps).
func (r *Replicator) Attach(store Store, snaps Snapshots) {
	r.store = store
	r.snaps = snaps
}

// Start begins replicating through peers. joining says whether this node
// expects to join others (then it reports ready only after its initial sync
// or ReadyTimeout).
func (r *Replicator) Start(peers Peers, joining bool) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.mu.Lock()
	r.peers = peers
	r.running = true
	r.mu.Unlock()
	r.MembersChanged()
	r.wg.Add(3)
	go r.receiveLoop(ctx)
	go r.renewLoop(ctx)
	go r.antiEntropyLoop(ctx)
	if !joining {
		r.markReady("no peers to join")
		return
	}
	// Give up waiting for the initial sync only when it stops making
	// progress for ReadyTimeout (e.g. this is the first node, or its seeds
	// are down), not while a large transfer is still arriving.
	r.progress.Store(time.Now().UnixNano())
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(max(r.cfg.ReadyTimeout/20, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-r.ready:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if time.Since(time.Unix(0, r.progress.Load())) > r.cfg.ReadyTimeout {
					r.markReady("no initial sync progress within the ready timeout")
					return
				}
			}
		}
	}()
}

// Stop ends replication and waits for its goroutines.
func (r *Replicator) Stop() {
	r.stopOnce.Do(func() { close(r.stopped) })
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.mu.Lock()
	r.running = false
	for name, q := range r.queues {
		q.close()
		delete(r.queues, name)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// Ready reports whether the initial sync has finished (or timed out).
func (r *Replicator) Ready() bool {
	select {
	case <-r.ready:
		return true
	default:
		return false
	}
}

// ReadyC is closed when the node becomes ready.
func (r *Replicator) ReadyC() <-chan struct{} { return r.ready }

func (r *Replicator) markReady(why string) {
	r.readyOnce.Do(func() {
		r.log.Info("node ready", "reason", why)
		r.syncMu.Lock()
		clear(r.pending) // what did not arrive, anti-entropy will fetch
		r.syncMu.Unlock()
		close(r.ready)
	})
}

// sendSoon is send for transfers, retried for a short while: right after a
// node (re)joins, one side may hear from the other before its membership
// has marked that node alive, and the first send fails.
func (r *Replicator) sendSoon(ctx context.Context, to string, m wire.Message) error {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = r.send(to, m); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// Stats returns what this node has sent so far.
func (r *Replicator) Stats() WireStats {
	return WireStats{
		Messages: r.stats.messages.Load(), Bytes: r.stats.bytes.Load(),
		RecordMessages: r.stats.records.Load(), RenewalMessages: r.stats.renewalMsgs.Load(),
		Renewals: r.stats.renewals.Load(), DigestMessages: r.stats.digests.Load(), SyncMessages: r.stats.syncs.Load(),
	}
}

// getPeers returns the membership once Start has run, else nil.
func (r *Replicator) getPeers() Peers {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peers
}

// send encodes m and sends it to one member.
func (r *Replicator) send(to string, m wire.Message) error {
	b, err := wire.Encode(m)
	if err != nil {
		return err
	}
	if err := r.getPeers().SendReliable(to, b); err != nil {
		return err
	}
	r.stats.messages.Add(1)
	r.stats.bytes.Add(uint64(len(b)))
	return nil
}

// ---- ownership -------------------------------------------------------------

// ownership is an immutable assignment of applications to members.
type ownership struct {
	self    string
	members []string             // alive members, sorted
	base    time.Time            // no evictions before base+grace
	takenAt map[string]time.Time // apps this node took over at this change
	cache   sync.Map             // app → owner
}

// rendezvous returns the member with the highest hash of (member, app).
func rendezvous(members []string, app string) string {
	var best string
	var bestH uint64
	for _, m := range members {
		h := fnv.New64a()
		_, _ = h.Write([]byte(m))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(app))
		if v := mix64(h.Sum64()); best == "" || v > bestH {
			best, bestH = m, v
		}
	}
	return best
}

// mix64 is a finalizer that spreads FNV's output over all bits.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (o *ownership) owner(app string) string {
	if len(o.members) == 0 {
		return o.self
	}
	if v, ok := o.cache.Load(app); ok {
		return v.(string)
	}
	w := rendezvous(o.members, app)
	o.cache.Store(app, w)
	return w
}

// OwnerOf returns the member that owns app.
func (r *Replicator) OwnerOf(app string) string { return r.own.Load().owner(app) }

// Owns implements actors.Ownership.
func (r *Replicator) Owns(app string) bool {
	o := r.own.Load()
	return o.owner(app) == o.self
}

// MayEvict implements actors.Ownership: the owner evicts, after a grace
// period when it just started or just took the application over.
func (r *Replicator) MayEvict(app string, now time.Time) bool {
	o := r.own.Load()
	if o.owner(app) != o.self {
		return false
	}
	since := o.base
	if t, ok := o.takenAt[app]; ok && t.After(since) {
		since = t
	}
	return !now.Before(since.Add(r.cfg.TakeoverGrace))
}

// OwnedCount implements actors.Ownership.
func (r *Replicator) OwnedCount() int {
	if r.snaps == nil {
		return 0
	}
	n := 0
	o := r.own.Load()
	r.snaps.Snapshot().Apps(func(a *view.App) bool {
		if o.owner(a.Name()) == o.self {
			n += len(a.Instances())
		}
		return true
	})
	return n
}

// OwnedShare returns, per member, the share of applications it owns.
func (r *Replicator) OwnedShare() map[string]float64 {
	out := map[string]float64{}
	if r.snaps == nil {
		return out
	}
	o := r.own.Load()
	total := 0
	r.snaps.Snapshot().Apps(func(a *view.App) bool {
		out[o.owner(a.Name())]++
		total++
		return true
	})
	for k := range out {
		out[k] /= float64(total)
	}
	return out
}

// MembersChanged recomputes ownership and the peer queues after a
// membership change, and starts an anti-entropy exchange with new members.
// The membership layer calls it on every join, leave and update.
func (r *Replicator) MembersChanged() {
	peers := r.getPeers()
	if peers == nil {
		return
	}
	self := peers.LocalName()
	members := append([]string(nil), peers.AliveMembers()...)
	sort.Strings(members)
	old := r.own.Load()
	now := r.cfg.Clock.Now()
	next := &ownership{self: self, members: members, base: old.base, takenAt: map[string]time.Time{}}
	if old.self == "" {
		next.base = now
	}
	if r.snaps != nil {
		r.snaps.Snapshot().Apps(func(a *view.App) bool {
			name := a.Name()
			if next.owner(name) == self && old.owner(name) != self {
				next.takenAt[name] = now
			} else if t, ok := old.takenAt[name]; ok && next.owner(name) == self {
				next.takenAt[name] = t
			}
			return true
		})
	}
	r.own.Store(next)
	if r.store != nil && old.self != "" {
		r.store.OwnershipChanged()
	}

	// Peer queues: one per other alive member.
	alive := map[string]bool{}
	var added []string
	r.mu.Lock()
	for _, m := range members {
		if m == self {
			continue
		}
		alive[m] = true
		if r.queues[m] == nil && r.running {
			q := newPeerQueue(r, m)
			r.queues[m] = q
			added = append(added, m)
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				q.run()
			}()
		}
	}
	for name, q := range r.queues {
		if !alive[name] {
			q.close()
			delete(r.queues, name)
		}
	}
	r.mu.Unlock()
	for _, m := range added {
		r.log.Debug("peer added", "peer", m)
		r.pushDigest(m, true)
	}
}

// ---- fan-out of local changes ---------------------------------------------

// Apply implements actors.Sink: local changes are queued for every peer;
// replicated ones are not sent again.
func (r *Replicator) Apply(ev *actors.Event) {
	if ev.Replicated {
		return
	}
	rec := toWire(actors.Record{App: ev.Instance.App, ID: ev.Instance.ID(), Version: ev.Version,
		Deleted: ev.Action == actors.ActionDeleted, Evicted: ev.Cause == actors.CauseEvict, Instance: ev.Instance})
	r.mu.Lock()
	for _, q := range r.queues {
		q.push(rec)
	}
	r.mu.Unlock()
}

// peerQueue holds the records waiting for one peer and the goroutine that
// sends them.
type peerQueue struct {
	r       *Replicator
	name    string
	mu      sync.Mutex
	pending []wire.InstanceRecord
	dropped bool
	wake    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newPeerQueue(r *Replicator, name string) *peerQueue {
	return &peerQueue{r: r, name: name, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (q *peerQueue) push(rec wire.InstanceRecord) {
	q.mu.Lock()
	if len(q.pending) >= q.r.cfg.MaxQueue {
		q.pending = q.pending[1:]
		q.dropped = true
	}
	q.pending = append(q.pending, rec)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *peerQueue) close() { q.once.Do(func() { close(q.done) }) }

func (q *peerQueue) run() {
	for {
		select {
		case <-q.done:
			return
		case <-q.wake:
		}
		for {
			q.mu.Lock()
			n := min(len(q.pending), q.r.cfg.MaxBatch)
			batch := q.pending[:n:n]
			q.pending = q.pending[n:]
			if len(q.pending) == 0 {
				q.pending = nil
			}
			dropped := q.dropped
			q.dropped = false
			q.mu.Unlock()
			if dropped {
				q.r.log.Warn("replication queue overflowed; anti-entropy will repair", "peer", q.name)
				q.r.pushDigest(q.name, true)
			}
			if n == 0 {
				break
			}
			if err := q.r.send(q.name, &wire.Records{Records: batch}); err != nil {
				q.r.log.Debug("replication send failed; anti-entropy will repair", "peer", q.name, "err", err)
			} else {
				q.r.stats.records.Add(1)
			}
			select {
			case <-q.done:
				return
			default:
			}
		}
	}
}

// ---- renewal forwarding ----------------------------------------------------

// OnRenew is the registry's renewal hook: a renewal of an application owned
// by another member is coalesced for forwarding to it.
func (r *Replicator) OnRenew(app, id string) {
	o := r.own.Load()
	owner := o.owner(app)
	if owner == o.self || owner == "" {
		return
	}
	r.renewMu.Lock()
	m := r.renews[owner]
	if m == nil {
		m = map[actors.Key]uint32{}
		r.renews[owner] = m
	}
	m[actors.Key{App: app, ID: id}]++
	r.renewMu.Unlock()
}

func (r *Replicator) renewLoop(ctx context.Context) {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.RenewFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.flushRenewals()
		}
	}
}

// flushRenewals sends each owner one message with the renewals coalesced
// since the last flush.
func (r *Replicator) flushRenewals() {
	r.renewMu.Lock()
	renews := r.renews
	r.renews = map[string]map[actors.Key]uint32{}
	r.renewMu.Unlock()
	for owner, keys := range renews {
		msg := &wire.Renewals{Renewals: make([]wire.Renewal, 0, len(keys))}
		for k, n := range keys {
			msg.Renewals = append(msg.Renewals, wire.Renewal{App: k.App, ID: k.ID, Count: n})
		}
		if err := r.send(owner, msg); err != nil {
			r.log.Debug("renewal forwarding failed", "owner", owner, "err", err)
			continue
		}
		r.stats.renewalMsgs.Add(1)
		r.stats.renewals.Add(uint64(len(keys)))
	}
}

// ---- receiving ---------------------------------------------------------------

// handleMessage decodes a peer message and queues it for the receive loop.
func (r *Replicator) handleMessage(b []byte) {
	m, err := wire.Decode(b)
	if err != nil {
		r.log.Warn("refused peer message", "err", err)
		return
	}
	select {
	case r.inbox <- m:
	case <-r.stopped:
	}
}

func (r *Replicator) receiveLoop(ctx context.Context) {
	defer r.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-r.inbox:
			r.receive(ctx, m)
		}
	}
}

func (r *Replicator) receive(ctx context.Context, m wire.Message) {
	switch m := m.(type) {
	case *wire.Records:
		if len(m.Done) > 0 || !r.Ready() {
			r.progress.Store(time.Now().UnixNano())
		}
		r.applyRecords(ctx, m.Records)
		if len(m.Done) > 0 {
			r.syncDone(m.Done)
		}
	case *wire.Renewals:
		byApp := map[string][]string{}
		for _, rn := range m.Renewals {
			byApp[rn.App] = append(byApp[rn.App], rn.ID)
		}
		for app, ids := range byApp {
			r.store.RenewRemote(app, ids)
		}
	case *wire.Digest:
		r.mergeDigest(m)
	case *wire.SyncRequest:
		// Serve from another goroutine, so that this node keeps applying
		// what it receives while it sends; at most cap(serving) at once.
		select {
		case r.serving <- struct{}{}:
		case <-ctx.Done():
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() { <-r.serving }()
			r.serveSync(ctx, m)
		}()
	}
}

func (r *Replicator) applyRecords(ctx context.Context, recs []wire.InstanceRecord) {
	byApp := map[string][]actors.Record{}
	var order []string
	for _, w := range recs {
		rec := fromWire(w)
		if _, ok := byApp[rec.App]; !ok {
			order = append(order, rec.App)
		}
		byApp[rec.App] = append(byApp[rec.App], rec)
	}
	for _, app := range order {
		if _, err := r.store.ApplyRecords(ctx, app, byApp[app]); err != nil {
			r.log.Warn("applying replicated records failed", "app", app, "err", err)
		}
	}
}

// ---- anti-entropy ------------------------------------------------------------

// localDigest summarizes the registry per application.
func (r *Replicator) localDigest(reply bool) *wire.Digest {
	d := &wire.Digest{Node: r.getPeers().LocalName(), Reply: reply}
	if r.snaps == nil {
		return d
	}
	r.snaps.Snapshot().Apps(func(a *view.App) bool {
		d.Apps = append(d.Apps, wire.AppDigest{App: a.Name(), Hash: a.Digest(), Count: uint32(len(a.Instances()))})
		return true
	})
	return d
}

// pushDigest sends this node's digest to a peer, asking for its digest back
// when reply is set.
func (r *Replicator) pushDigest(to string, reply bool) {
	if err := r.send(to, r.localDigest(reply)); err != nil {
		r.log.Debug("digest send failed", "peer", to, "err", err)
		return
	}
	r.stats.digests.Add(1)
}

// mergeDigest compares a peer's digest with ours and asks the peer for every
// application that differs, including ones only we have (the peer may hold
// tombstones for them).
func (r *Replicator) mergeDigest(d *wire.Digest) {
	peers := r.getPeers()
	if d.Node == "" || peers == nil || d.Node == peers.LocalName() {
		return
	}
	local := map[string]uint64{}
	if r.snaps != nil {
		r.snaps.Snapshot().Apps(func(a *view.App) bool {
			local[a.Name()] = a.Digest()
			return true
		})
	}
	var want []string
	for _, ad := range d.Apps {
		if h, ok := local[ad.App]; !ok || h != ad.Hash {
			want = append(want, ad.App)
		}
		delete(local, ad.App)
	}
	for app := range local {
		want = append(want, app)
	}
	if d.Reply {
		r.pushDigest(d.Node, false)
	}
	r.syncMu.Lock()
	first := !r.initialAsk
	r.initialAsk = true
	if first {
		for _, app := range want {
			r.pending[app] = true
		}
	}
	// Do not ask a peer again for a transfer it is still sending: digests
	// arrive from several timers, and re-requesting a running transfer only
	// multiplies it. Other peers may still be asked, since each may hold
	// changes the others lack.
	now := time.Now()
	retry := 6 * r.cfg.AntiEntropyInterval
	kept := want[:0]
	for _, app := range want {
		k := syncKey{peer: d.Node, app: app}
		if at, ok := r.inflight[k]; ok && now.Sub(at) < retry {
			continue
		}
		if !first && r.pending[app] && !r.Ready() {
			continue // the initial sync is bringing it: one copy is enough
		}
		r.inflight[k] = now
		kept = append(kept, app)
	}
	want = kept
	r.syncMu.Unlock()
	if first && len(want) == 0 {
		r.markReady("in sync with " + d.Node)
	}
	for len(want) > 0 {
		n := min(len(want), 1024)
		if err := r.send(d.Node, &wire.SyncRequest{Node: peers.LocalName(), Apps: want[:n]}); err != nil {
			r.log.Debug("sync request failed", "peer", d.Node, "err", err)
			r.syncMu.Lock()
			for _, app := range want {
				delete(r.inflight, syncKey{peer: d.Node, app: app})
			}
			r.syncMu.Unlock()
			return
		}
		r.stats.syncs.Add(1)
		want = want[n:]
	}
}

// syncKey names a transfer asked of a peer.
type syncKey struct{ peer, app string }

// syncDone records finished transfers.
func (r *Replicator) syncDone(apps []string) {
	r.syncMu.Lock()
	finished := map[string]bool{}
	for _, a := range apps {
		delete(r.pending, a)
		finished[a] = true
	}
	for k := range r.inflight {
		if finished[k.app] {
			delete(r.inflight, k)
		}
	}
	ready := r.initialAsk && len(r.pending) == 0
	r.syncMu.Unlock()
	if ready {
		r.markReady("initial sync complete")
	}
}

// serveSync sends the records (leases and tombstones) of the requested
// applications, in batches, marking each application done in the message
// that completes it.
func (r *Replicator) serveSync(ctx context.Context, req *wire.SyncRequest) {
	if !r.Ready() {
		// Half-synced data would be sent again by the node it came from;
		// say "done" so the asker does not wait, and let the next
		// anti-entropy round fetch what this node really has.
		if err := r.sendSoon(ctx, req.Node, &wire.Records{Done: req.Apps}); err != nil {
			r.log.Debug("sync answer failed", "peer", req.Node, "err", err)
		}
		return
	}
	var batch []wire.InstanceRecord
	var done []string
	flush := func() {
		if len(batch) == 0 && len(done) == 0 {
			return
		}
		if err := r.sendSoon(ctx, req.Node, &wire.Records{Records: batch, Done: done}); err != nil {
			r.log.Debug("sync transfer failed", "peer", req.Node, "err", err)
		}
		batch, done = nil, nil
	}
	for _, app := range req.Apps {
		recs, err := r.store.Records(ctx, app)
		if err != nil {
			r.log.Warn("reading records for sync failed", "app", app, "err", err)
			continue
		}
		for _, rec := range recs {
			batch = append(batch, toWire(rec))
			if len(batch) >= r.cfg.MaxBatch {
				flush()
			}
		}
		done = append(done, app)
	}
	flush()
}

func (r *Replicator) antiEntropyLoop(ctx context.Context) {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.AntiEntropyInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			o := r.own.Load()
			var others []string
			for _, m := range o.members {
				if m != o.self {
					others = append(others, m)
				}
			}
			if len(others) > 0 {
				r.pushDigest(others[r.rnd.Intn(len(others))], true)
			}
		}
	}
}

// LocalState implements memberlist's push/pull: the digest goes out.
func (r *Replicator) LocalState(join bool) []byte {
	if r.getPeers() == nil {
		return nil
	}
	b, err := wire.Encode(r.localDigest(false))
	if err != nil {
		return nil
	}
	return b
}

// MergeRemoteState implements memberlist's push/pull: the peer's digest
// comes in.
func (r *Replicator) MergeRemoteState(buf []byte, join bool) {
	if len(buf) == 0 {
		return
	}
	r.handleMessage(buf)
}

// NodeMeta implements memberlist.Delegate.
func (r *Replicator) NodeMeta(limit int) []byte {
	if len(r.cfg.Meta) > limit {
		return nil
	}
	return r.cfg.Meta
}

// GetBroadcasts implements memberlist.Delegate: replication uses its own
// streams, not gossip piggybacking, so that latency does not depend on the
// gossip interval.
func (r *Replicator) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// NotifyMsg implements memberlist's user messages.
func (r *Replicator) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	r.handleMessage(b)
}

// ---- conversions -------------------------------------------------------------

func toWire(rec actors.Record) wire.InstanceRecord {
	w := wire.InstanceRecord{App: rec.App, ID: rec.ID, Clock: rec.Version.Clock, Node: rec.Version.Node,
		Deleted: rec.Deleted, Evicted: rec.Evicted}
	if !rec.Deleted && rec.Instance != nil {
		w.Instance = instanceToWire(rec.Instance)
	}
	return w
}

func fromWire(w wire.InstanceRecord) actors.Record {
	rec := actors.Record{App: w.App, ID: w.ID, Version: actors.Version{Clock: w.Clock, Node: w.Node},
		Deleted: w.Deleted, Evicted: w.Evicted}
	if w.Instance != nil {
		rec.Instance = instanceFromWire(w.Instance)
	}
	return rec
}

func instanceToWire(i *actors.Instance) *wire.InstanceData {
	return &wire.InstanceData{
		InstanceID: i.InstanceID, HostName: i.HostName, App: i.App, IPAddr: i.IPAddr, SID: i.SID,
		Status: string(i.Status), OverriddenStatus: string(i.OverriddenStatus),
		Port:       wire.PortData{Number: i.Port.Number, Enabled: i.Port.Enabled},
		SecurePort: wire.PortData{Number: i.SecurePort.Number, Enabled: i.SecurePort.Enabled},
		CountryID:  i.CountryID,
		DataCenterInfo: wire.DataCenterData{Class: i.DataCenterInfo.Class, Name: i.DataCenterInfo.Name,
			Metadata: i.DataCenterInfo.Metadata},
		LeaseInfo: wire.LeaseData{RenewalIntervalSecs: i.LeaseInfo.RenewalIntervalSecs, DurationSecs: i.LeaseInfo.DurationSecs,
			RegistrationTimestamp: i.LeaseInfo.RegistrationTimestamp, LastRenewalTimestamp: i.LeaseInfo.LastRenewalTimestamp,
			EvictionTimestamp: i.LeaseInfo.EvictionTimestamp, ServiceUpTimestamp: i.LeaseInfo.ServiceUpTimestamp},
		Metadata:     i.Metadata,
		AppGroupName: i.AppGroupName, HomePageURL: i.HomePageURL, StatusPageURL: i.StatusPageURL,
		HealthCheckURL: i.HealthCheckURL, SecureHealthCheckURL: i.SecureHealthCheckURL,
		VIPAddress: i.VIPAddress, SecureVIPAddress: i.SecureVIPAddress,
		IsCoordinatingDiscoveryServer: i.IsCoordinatingDiscoveryServer,
		LastUpdatedTimestamp:          i.LastUpdatedTimestamp, LastDirtyTimestamp: i.LastDirtyTimestamp,
		ActionType: string(i.ActionType), ASGName: i.ASGName,
	}
}

func instanceFromWire(w *wire.InstanceData) *actors.Instance {
	return &actors.Instance{
		InstanceID: w.InstanceID, HostName: w.HostName, App: w.App, IPAddr: w.IPAddr, SID: w.SID,
		Status: actors.LenientStatus(w.Status), OverriddenStatus: actors.LenientStatus(w.OverriddenStatus),
		Port:       actors.Port{Number: w.Port.Number, Enabled: w.Port.Enabled},
		SecurePort: actors.Port{Number: w.SecurePort.Number, Enabled: w.SecurePort.Enabled},
		CountryID:  w.CountryID,
		DataCenterInfo: actors.DataCenterInfo{Class: w.DataCenterInfo.Class, Name: w.DataCenterInfo.Name,
			Metadata: w.DataCenterInfo.Metadata},
		LeaseInfo: actors.LeaseInfo{RenewalIntervalSecs: w.LeaseInfo.RenewalIntervalSecs, DurationSecs: w.LeaseInfo.DurationSecs,
			RegistrationTimestamp: w.LeaseInfo.RegistrationTimestamp, LastRenewalTimestamp: w.LeaseInfo.LastRenewalTimestamp,
			EvictionTimestamp: w.LeaseInfo.EvictionTimestamp, ServiceUpTimestamp: w.LeaseInfo.ServiceUpTimestamp},
		Metadata:     w.Metadata,
		AppGroupName: w.AppGroupName, HomePageURL: w.HomePageURL, StatusPageURL: w.StatusPageURL,
		HealthCheckURL: w.HealthCheckURL, SecureHealthCheckURL: w.SecureHealthCheckURL,
		VIPAddress: w.VIPAddress, SecureVIPAddress: w.SecureVIPAddress,
		IsCoordinatingDiscoveryServer: w.IsCoordinatingDiscoveryServer,
		LastUpdatedTimestamp:          w.LastUpdatedTimestamp, LastDirtyTimestamp: w.LastDirtyTimestamp,
		ActionType: actors.ActionType(w.ActionType), ASGName: w.ASGName,
	}
}
