package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
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
	// It must return within a bounded time (Config.StreamTimeout), also
	// when the member stops reading.
	SendReliable(name string, msg []byte) error
}

// Store is what the Replicator needs from the registry (actors.Registry
// implements it).
type Store interface {
	ApplyRecords(ctx context.Context, app string, recs []actors.Record, initial bool) (actors.ApplyStats, error)
	RecordsNewerThan(ctx context.Context, app string, theirs []actors.RecordVersion) ([]actors.Record, error)
	Versions(ctx context.Context, app string) ([]actors.RecordVersion, error)
	RenewRemote(app string, ids []string)
	LeaseAges(ctx context.Context, app string) ([]actors.LeaseAge, error)
	AdoptLeaseAges(app string, ages []actors.LeaseAge)
	OwnershipChanged()
	SelfPreservation() *actors.SelfPreservationStatus
}

// Snapshots gives the current read snapshot (view.View implements it).
type Snapshots interface {
	Snapshot() *view.Snapshot
}

// ReplicatorConfig configures a Replicator. DefaultReplicatorConfig gives
// the production values; Validate rejects bad ones.
type ReplicatorConfig struct {
	// Logger receives replication logs. Default: discard.
	Logger *slog.Logger
	// Clock tells the time of ownership changes (the per-lease eviction
	// grace counts from them). Default: system.
	Clock actors.Clock
	// RenewFlushInterval is how often coalesced renewals are forwarded to
	// their owners. Default 1s; it must be well below the lease duration.
	RenewFlushInterval time.Duration
	// AntiEntropyInterval is how often this node exchanges digests with a
	// random peer. Default 5s.
	AntiEntropyInterval time.Duration
	// LoadInterval is how often this node reports its renewal count to
	// every member (for cluster-wide self-preservation). It must be at most
	// a quarter of the registry's renewal window, so that every member hears
	// every quarter of it; 0 in DefaultReplicatorConfig means the node
	// assembling the cluster (package node) sets it to exactly that
	// quarter. NewReplicator rejects 0.
	LoadInterval time.Duration
	// MaxBatch is the most records in one message. Default 512.
	MaxBatch int
	// MaxQueue is the most records queued for one peer; beyond it the
	// oldest are dropped and anti-entropy repairs the peer. Default 100000.
	MaxQueue int
	// SilentMemberBound bounds how long an alive member whose load reports
	// stopped (cut off one way, wedged, too loaded to send) holds this
	// node's eviction: past it, counted from the member's last report, the
	// member counts as failed for ownership, so its applications get a live
	// owner and eviction resumes. 0 means DefaultSilentMemberFactor
	// LoadIntervals (2 minutes with the production 15s). When set it must
	// exceed 3 LoadIntervals, the age at which a report goes stale.
	SilentMemberBound time.Duration
	// ReadyTimeout bounds the wait for the initial sync: a joining node
	// reports ready once its sync is done, or once no sync progress came
	// for ReadyTimeout (e.g. its seeds are down). 0 means do not wait:
	// ready at once. Default 30s.
	ReadyTimeout time.Duration
	// Seed seeds the choice of anti-entropy peers. 0: time-based.
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
		RenewFlushInterval:  time.Second,
		AntiEntropyInterval: 5 * time.Second,
		MaxBatch:            512,
		MaxQueue:            100000,
		ReadyTimeout:        30 * time.Second,
	}
}

// ErrInvalidReplicatorConfig is wrapped by every error Validate returns.
var ErrInvalidReplicatorConfig = errors.New("cluster: invalid replicator config")

// Validate reports the first invalid setting.
func (c *ReplicatorConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidReplicatorConfig}, args...)...)
	}
	switch {
	case c.RenewFlushInterval <= 0:
		return bad("RenewFlushInterval %v must be positive", c.RenewFlushInterval)
	case c.AntiEntropyInterval <= 0:
		return bad("AntiEntropyInterval %v must be positive", c.AntiEntropyInterval)
	case c.LoadInterval <= 0:
		return bad("LoadInterval %v must be positive", c.LoadInterval)
	case c.SilentMemberBound < 0:
		return bad("SilentMemberBound %v must not be negative (0: %d LoadIntervals)", c.SilentMemberBound, DefaultSilentMemberFactor)
	case c.SilentMemberBound > 0 && c.SilentMemberBound <= 3*c.LoadInterval:
		return bad("SilentMemberBound %v must exceed 3 LoadIntervals (%v), when a report goes stale", c.SilentMemberBound, 3*c.LoadInterval)
	case c.MaxBatch <= 0:
		return bad("MaxBatch %d must be positive", c.MaxBatch)
	case c.MaxQueue < c.MaxBatch:
		return bad("MaxQueue %d must be at least MaxBatch %d", c.MaxQueue, c.MaxBatch)
	case c.ReadyTimeout < 0:
		return bad("ReadyTimeout %v must not be negative (0: do not wait)", c.ReadyTimeout)
	case len(c.Meta) > 500:
		return bad("Meta is %d bytes, at most 500", len(c.Meta))
	}
	return nil
}

// WireStats counts what this node sent to peers.
type WireStats struct {
	// Messages and Bytes count every message this node sent on streams it
	// dialled (its links, and its pulls' requests): one stream each.
	Messages, Bytes uint64
	// AnswerMessages and AnswerBytes count what it sent back on streams
	// peers dialled to pull from it: renewals and digests answering a
	// digest, a sync request's transfer (a joining node's initial sync).
	AnswerMessages, AnswerBytes     uint64
	RecordMessages, RenewalMessages uint64
	Renewals                        uint64 // renewals forwarded (after coalescing)
	DigestMessages, SyncMessages    uint64
	// TransferRecords is how many records anti-entropy transfers sent.
	TransferRecords uint64
	// Dropped is how many queued records were dropped because a peer's
	// queue was full (anti-entropy repairs them).
	Dropped uint64
	// SendErrors is how many sends failed.
	SendErrors uint64
	// HandoffMessages is how many handoffs of lease ages this node queued
	// for new owners of its applications (handoff.go).
	HandoffMessages uint64
}

// Sent is every message and byte this node sent to peers: on streams it
// dialled and back on streams peers dialled.
func (w WireStats) Sent() (messages, bytes uint64) {
	return w.Messages + w.AnswerMessages, w.Bytes + w.AnswerBytes
}

// Replicator replicates registry changes to every member, forwards renewals
// to owners, runs anti-entropy, reports renewal counts and decides
// ownership. It implements actors.Sink, actors.Ownership and
// actors.RenewalPeers, and the memberlist delegate callbacks (LocalState,
// MergeRemoteState, NotifyMsg, NodeMeta, GetBroadcasts).
//
// Each mechanism lives in its own file: ownership.go, peerlink.go (one
// sending goroutine and bounded queues per peer), forward.go (renewals),
// antientropy.go (digests, version exchange, readiness), load.go (renewal
// reports), receive.go (incoming messages), convert.go (wire types).
type Replicator struct {
	cfg   ReplicatorConfig
	log   *slog.Logger
	store Store
	snaps Snapshots
	peers atomic.Pointer[peersBox]

	ownMu sync.Mutex // serialises ownership changes
	own   atomic.Pointer[ownership]

	// membersMu serializes MembersChanged: each call reads the members and
	// applies them (ownership, then links) as one step, so a call that read
	// an older member list never applies it after a newer one. Lock order:
	// membersMu before ownMu and linkMu.
	membersMu sync.Mutex

	linkMu  sync.Mutex
	links   map[string]*peerLink   // guarded by linkMu: one per other alive member
	orphans map[string][]orphanAsk // guarded by linkMu: sync requests from members not yet alive here
	running bool                   // guarded by linkMu: between Start and Stop

	renewMu sync.Mutex
	renews  map[string]renewalSet // owner → coalesced renewals

	applyQ   chan received     // received records, applied in order by one goroutine
	controlQ chan wire.Message // received digests, handled by one goroutine

	aeMu  sync.Mutex
	ae    antiEntropy // guarded by aeMu
	ready chan struct{}
	// readyOnce guards close(ready).
	readyOnce sync.Once
	progress  atomic.Int64 // unix nanos of the last initial-sync progress

	loadMu  sync.Mutex
	loads   map[string]peerLoad // guarded by loadMu
	resumed time.Time           // guarded by loadMu: when reports last resumed after a gap
	// silent lists, with their last report's arrival, the alive members
	// silent for longer than SilentMemberBound: they own nothing here.
	// Guarded by loadMu.
	silent   map[string]time.Time
	loadKick chan struct{}        // a silent member reported: recheck at once
	answered map[string]time.Time // guarded by loadMu: when each member last answered a pull
	// disagree is the views-disagree hold's state (disagree.go); guarded
	// by loadMu. ring is what it yields to once bounded.
	disagree disagreement
	ring     atomic.Pointer[evictionRing]

	stats struct {
		messages, bytes, records, renewalMsgs, renewals, digests, syncs atomic.Uint64
		answerMsgs, answerBytes                                         atomic.Uint64
		transferRecs, dropped, sendErrors                               atomic.Uint64
		handoffs                                                        atomic.Uint64
	}
	// handoffQ feeds handoffLoop the applications MembersChanged moved
	// away from this node (handoff.go).
	handoffQ chan moves
	// leaving is set by HandOff: this node owns nothing from then on.
	leaving atomic.Bool

	rndMu    sync.Mutex
	rnd      *rand.Rand
	ctx      context.Context
	cancel   context.CancelFunc
	stopped  chan struct{} // closed by Stop
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// peersBox holds a Peers for atomic.Pointer.
type peersBox struct{ p Peers }

// NewReplicator returns a Replicator, or an error if cfg is invalid. Nil
// Logger and Clock get their defaults. Call Attach and Start before use.
func NewReplicator(cfg ReplicatorConfig) (*Replicator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = actors.SystemClock{}
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Replicator{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "replication"),
		links:    map[string]*peerLink{},
		orphans:  map[string][]orphanAsk{},
		renews:   map[string]renewalSet{},
		applyQ:   make(chan received, 64),
		controlQ: make(chan wire.Message, 64),
		handoffQ: make(chan moves, handoffQueue),
		ready:    make(chan struct{}),
		loads:    map[string]peerLoad{},
		silent:   map[string]time.Time{},
		answered: map[string]time.Time{},
		loadKick: make(chan struct{}, 1),
		stopped:  make(chan struct{}),
		rnd:      rand.New(rand.NewSource(cfg.Seed)),
		ctx:      ctx,
		cancel:   cancel,
	}
	r.ae.init()
	now := cfg.Clock.Now()
	r.own.Store(&ownership{base: now, changedAt: now, changedRT: time.Now()})
	return r, nil
}

// Attach connects the replicator to the registry and its view. It must be
// called before Start (the registry is built with the replicator as a Sink,
// Ownership and RenewalPeers, so they are created in two steps).
func (r *Replicator) Attach(store Store, snaps Snapshots) {
	r.store = store
	r.snaps = snaps
}

// Start begins replicating through peers. joining says whether this node
// expects to join others (then it reports ready only after its initial
// sync, or when no sync progress came for ReadyTimeout).
func (r *Replicator) Start(peers Peers, joining bool) {
	r.peers.Store(&peersBox{peers})
	r.linkMu.Lock()
	r.running = true
	r.linkMu.Unlock()
	r.MembersChanged()
	r.goLoop(r.applyLoop)
	r.goLoop(r.controlLoop)
	r.goLoop(r.renewLoop)
	r.goLoop(r.antiEntropyLoop)
	r.goLoop(r.loadLoop)
	r.goLoop(r.handoffLoop)
	if !joining || r.cfg.ReadyTimeout == 0 {
		r.markReady("not waiting for an initial sync")
		return
	}
	r.progress.Store(time.Now().UnixNano())
	r.goLoop(r.readyLoop)
}

// goLoop runs loop in a goroutine that Stop waits for.
func (r *Replicator) goLoop(loop func(ctx context.Context)) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		loop(r.ctx)
	}()
}

// Stop ends replication: each peer link gets a short while to send what is
// queued for it, then every goroutine stops. It is idempotent.
func (r *Replicator) Stop() {
	r.stopOnce.Do(func() {
		close(r.stopped)
		r.flushRenewals() // the last forwarded renewals go with the drain
		r.linkMu.Lock()
		r.running = false
		links := r.links
		r.links = map[string]*peerLink{}
		r.linkMu.Unlock()
		// Drain every link at once: a send to a peer that stopped reading
		// can take a whole stream timeout, and Stop should not add those up.
		deadline := time.Now().Add(drainTimeout)
		var wg sync.WaitGroup
		for _, l := range links {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.drainAndClose(deadline)
			}()
		}
		wg.Wait()
		r.cancel()
		r.wg.Wait()
	})
}

// drainTimeout bounds how long Stop lets each peer link send what is queued.
const drainTimeout = 2 * time.Second

// Ready reports whether the initial sync has finished (or was not waited
// for).
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

// Stats returns what this node has sent so far.
func (r *Replicator) Stats() WireStats {
	return WireStats{
		Messages: r.stats.messages.Load(), Bytes: r.stats.bytes.Load(),
		AnswerMessages: r.stats.answerMsgs.Load(), AnswerBytes: r.stats.answerBytes.Load(),
		RecordMessages: r.stats.records.Load(), RenewalMessages: r.stats.renewalMsgs.Load(),
		Renewals: r.stats.renewals.Load(), DigestMessages: r.stats.digests.Load(), SyncMessages: r.stats.syncs.Load(),
		TransferRecords: r.stats.transferRecs.Load(), Dropped: r.stats.dropped.Load(), SendErrors: r.stats.sendErrors.Load(),
		HandoffMessages: r.stats.handoffs.Load(),
	}
}

// getPeers returns the membership once Start has run, else nil.
func (r *Replicator) getPeers() Peers {
	if b := r.peers.Load(); b != nil {
		return b.p
	}
	return nil
}

// localName is this node's name ("" before Start).
func (r *Replicator) localName() string {
	if p := r.getPeers(); p != nil {
		return p.LocalName()
	}
	return ""
}

// send encodes m and sends it to one member. Only peer links call it, each
// for its own peer, so a member that does not read delays no one else.
func (r *Replicator) send(to string, m wire.Message) error {
	b, err := r.encodeTo(to, m)
	if err != nil {
		return err
	}
	return r.countSent(&r.stats.messages, &r.stats.bytes, b, r.getPeers().SendReliable(to, b))
}

// countSent counts a message of b's size sent in msgs and bytes, or a
// failed send, for Stats, and returns err.
func (r *Replicator) countSent(msgs, bytes *atomic.Uint64, b []byte, err error) error {
	if err != nil {
		r.stats.sendErrors.Add(1)
		return err
	}
	msgs.Add(1)
	bytes.Add(uint64(len(b)))
	return nil
}

// encodeIn encodes m, a record batch stamped with this node's wall clock
// (wire.Records.SentAt), in wire protocol version v.
func (r *Replicator) encodeIn(v uint8, m wire.Message) ([]byte, error) {
	if recs, ok := m.(*wire.Records); ok {
		recs.SentAt = r.cfg.Clock.Now().UnixMilli()
	}
	return wire.EncodeVersion(m, v)
}

// encodeTo encodes m for the named member, in the highest wire protocol
// both speak (a member of the previous release reads its own version
// only).
func (r *Replicator) encodeTo(to string, m wire.Message) ([]byte, error) {
	return r.encodeIn(r.peerProtocol(to), m)
}

// protocolPeers is what the membership says about the members' wire
// protocols (Membership implements it; a Peers that does not is taken to
// speak this build's highest version).
type protocolPeers interface {
	PeerProtocol(name string) uint8
	LowestProtocol() uint8
}

// protocols returns the membership's protocolPeers, or nil.
func (r *Replicator) protocols() protocolPeers {
	if p, ok := r.getPeers().(protocolPeers); ok {
		return p
	}
	if x := r.ae.exch.Load(); x != nil {
		if p, ok := (*x).(protocolPeers); ok {
			return p
		}
	}
	return nil
}

// peerProtocol is the version to write the named member's frames in.
func (r *Replicator) peerProtocol(to string) uint8 {
	if p := r.protocols(); p != nil {
		return p.PeerProtocol(to)
	}
	return wire.ProtocolVersion
}

// lowestProtocol is the version to write a frame in whose reader is not
// known (the push/pull state): the lowest this node speaks, which every
// member it accepted reads.
func (r *Replicator) lowestProtocol() uint8 {
	if p := r.protocols(); p != nil {
		return p.LowestProtocol()
	}
	return wire.ProtocolVersion
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
