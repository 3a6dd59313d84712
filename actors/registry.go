package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heureka/heureka/internal/sabotage"
)

// Errors returned by the Registry.
var (
	// ErrClosed means the registry has shut down.
	ErrClosed = errors.New("actors: registry closed")
	// ErrInternal means an application actor failed while handling the
	// command; the failure was logged and the actor kept its state.
	ErrInternal = errors.New("actors: internal error")
)

// Sink receives every registry event synchronously, from the application
// actor that made the change, before the command's caller gets its answer.
// Implementations must be safe for concurrent use (actors of different
// applications run in parallel) and must not block.
type Sink interface {
	Apply(ev *Event)
}

// BatchSink is a Sink that can also take several events at once, in order;
// bulk replication uses it to make one snapshot of a whole transfer.
type BatchSink interface {
	Sink
	ApplyBatch(evs []Event)
}

// Config configures a Registry. DefaultConfig gives Eureka's defaults.
type Config struct {
	// NodeName names this node in versions; it must be unique in a cluster.
	NodeName string
	// Clock is the wall clock: it tells the lease timestamps that go on the
	// wire and drives the HLC of versions. Default: SystemClock.
	Clock Clock
	// LeaseClock measures lease ages (expiry, the takeover grace, a
	// client's renewal here within a lease): it must not jump when the
	// wall clock is set (BUG-10). Default: Clock itself when it is a
	// *ManualClock (a test moves both together), SystemClock otherwise
	// (Go's monotonic clock).
	LeaseClock Clock
	// Logger receives the registry's logs and protoactor's. Default: discard.
	Logger *slog.Logger
	// EvictionInterval is how often expired leases are evicted. Default 60s.
	EvictionInterval time.Duration
	// SelfPreservation stops evictions when renewals fall below the
	// threshold. Default true.
	SelfPreservation bool
	// RenewalPercentThreshold is the share of expected renewals below which
	// self-preservation engages, and the eviction cap's complement.
	// Default 0.85.
	RenewalPercentThreshold float64
	// RenewalThresholdUpdateInterval is how often the expected number of
	// renewing clients is recounted from the registry, and how long
	// self-preservation may stay engaged before the measured renewal rate
	// becomes the expectation (see selfPreservation). Default 15m.
	RenewalThresholdUpdateInterval time.Duration
	// ExpectedClientRenewalInterval is how often clients are expected to
	// renew. Default 30s.
	ExpectedClientRenewalInterval time.Duration
	// RenewalWindow is the window over which renewals are counted against the
	// threshold (Eureka: one minute). Default 1m; tests shrink it.
	RenewalWindow time.Duration
	// ExpectedInitialRenewers is the expected number of renewing clients at
	// start (Spring Cloud's expected-number-of-clients-sending-renews).
	// Default 1.
	ExpectedInitialRenewers int
	// LeaseDurationDoubling reproduces the Java server's bug that a renewed
	// lease expires only after twice its durationInSecs. Default false: a
	// lease expires durationInSecs after its last renewal, as documented.
	LeaseDurationDoubling bool
	// TombstoneTTL is how long a deleted instance's tombstone is kept so
	// that stale peer copies cannot resurrect it, counted from the
	// deletion's HLC time. Copies that outlive it are refused (see
	// Record). Default 10m; it must exceed the longest lease duration in
	// use.
	TombstoneTTL time.Duration
	// RequestTimeout bounds one command's round trip to its application
	// actor when the caller's context has no earlier deadline. Default 5s.
	RequestTimeout time.Duration
	// Sinks receive every event (see Sink). The view is one.
	Sinks []Sink
	// Ownership restricts eviction to the applications this node owns; nil
	// owns all (single node).
	Ownership Ownership
	// Peers reports the renewals the other members counted, for
	// cluster-wide self-preservation; nil for a single node.
	Peers RenewalPeers
	// OnRenew, if set, is called by the application actor after every
	// successful renewal that came from a client (not a peer). It must not
	// block. The cluster layer forwards these renewals to the owner.
	OnRenew func(app, id string)
	// Seed seeds the random choice of evictions. Default: time-based.
	Seed int64
}

// DefaultConfig returns Eureka's defaults for one node named node.
func DefaultConfig(node string) Config {
	return Config{
		NodeName:                       node,
		Clock:                          SystemClock{},
		EvictionInterval:               60 * time.Second,
		SelfPreservation:               true,
		RenewalPercentThreshold:        0.85,
		RenewalThresholdUpdateInterval: 15 * time.Minute,
		ExpectedClientRenewalInterval:  30 * time.Second,
		RenewalWindow:                  time.Minute,
		ExpectedInitialRenewers:        1,
		TombstoneTTL:                   10 * time.Minute,
		RequestTimeout:                 5 * time.Second,
	}
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("actors: NodeName is empty")
	case c.EvictionInterval <= 0:
		return fmt.Errorf("actors: EvictionInterval %v must be positive", c.EvictionInterval)
	case c.RenewalPercentThreshold <= 0 || c.RenewalPercentThreshold > 1:
		return fmt.Errorf("actors: RenewalPercentThreshold %v must be in (0, 1]", c.RenewalPercentThreshold)
	case c.RenewalThresholdUpdateInterval <= 0:
		return fmt.Errorf("actors: RenewalThresholdUpdateInterval %v must be positive", c.RenewalThresholdUpdateInterval)
	case c.ExpectedClientRenewalInterval <= 0:
		return fmt.Errorf("actors: ExpectedClientRenewalInterval %v must be positive", c.ExpectedClientRenewalInterval)
	case c.RenewalWindow <= 0:
		return fmt.Errorf("actors: RenewalWindow %v must be positive", c.RenewalWindow)
	case c.ExpectedInitialRenewers < 0:
		return fmt.Errorf("actors: ExpectedInitialRenewers %d must not be negative", c.ExpectedInitialRenewers)
	case c.TombstoneTTL <= 0:
		return fmt.Errorf("actors: TombstoneTTL %v must be positive", c.TombstoneTTL)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("actors: RequestTimeout %v must be positive", c.RequestTimeout)
	}
	return nil
}

// Registry is the typed facade over the actor system that holds the
// registry: a front actor that routes each command by application name to
// that application's actor (spawned on first use, stopped when empty), an
// eviction actor and a self-preservation actor. Its methods are safe for
// concurrent use; each is one message to the front and one reply.
type Registry struct {
	cfg    Config
	log    *slog.Logger
	system *actor.ActorSystem
	root   *actor.RootContext
	front  *actor.PID
	evict  *actor.PID
	spPID  *actor.PID
	opts   *appOptions
	sinks  []Sink
	hlc    *HLC
	// evNow is evict for the self-preservation actor, which starts
	// first: on a release it asks for an eviction run at once.
	evNow atomic.Pointer[actor.PID]
	// disp runs the front's and the applications' mailboxes.
	disp *workerDispatcher

	leaseClock *leaseClock
	// owned maps application names to the ownership instant last
	// converted to the lease clock (see ownedSince).
	ownedMu sync.Mutex
	owned   map[string]ownedMark

	// apps maps application names to their actors' entries, so that
	// commands for a running application skip the front (see appEntry).
	apps sync.Map

	started  int64        // lease clock at NewRegistry: a single node's grace base
	count    atomic.Int64 // live leases
	renewals atomic.Int64 // renewals in the current window
	sp       atomic.Pointer[SelfPreservationStatus]
	// spAdded and spRemoved count the new and removed leases spSink saw
	// since the self-preservation actor last took them; spNotified is set
	// while a spEvents message is on its way to it.
	spAdded, spRemoved atomic.Int64
	// spEvicted counts, of spRemoved, the evictions (here or a peer's).
	spEvicted  atomic.Int64
	spNotified atomic.Bool
	// spSilentAdded counts the leases copied in after a recovery release
	// that it measured (see measuredLease): not counted in spAdded, they
	// are silent if their copy had run out. spMeasuredBefore and
	// spMeasuredUntil are that release's time and the end of its settling,
	// wall-clock ms (0: none); the self-preservation actor sets them.
	spSilentAdded                     atomic.Int64
	spMeasuredBefore, spMeasuredUntil atomic.Int64

	closeOnce sync.Once
	closed    chan struct{}
}

// mailboxThroughput is how many messages a mailbox processes per run
// (protoactor's default).
const mailboxThroughput = 300

// NewRegistry starts a registry with cfg. Call Close to stop it.
func NewRegistry(cfg Config) (*Registry, error) {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.LeaseClock == nil {
		cfg.LeaseClock = SystemClock{}
		if mc, ok := cfg.Clock.(*ManualClock); ok {
			cfg.LeaseClock = mc
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	log := cfg.Logger.With("component", "registry")
	actorLog := cfg.Logger.With("component", "actor")
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return actorLog }))
	r := &Registry{
		cfg:    cfg,
		log:    log,
		system: system,
		root:   system.Root,
		hlc:    NewHLC(cfg.Clock),
		closed: make(chan struct{}),
		disp:   newWorkerDispatcher(mailboxThroughput, max(16, 8*runtime.GOMAXPROCS(0))),
	}
	r.leaseClock = newLeaseClock(cfg.Clock, cfg.LeaseClock)
	r.started = r.leaseClock.now()
	r.opts = &appOptions{node: cfg.NodeName, clock: cfg.Clock, leaseClock: r.leaseClock, hlc: r.hlc,
		leaseDurationDoubling: cfg.LeaseDurationDoubling, tombstoneTTL: cfg.TombstoneTTL,
		tombstoneSlack: cfg.RenewalWindow + cfg.EvictionInterval}
	newSP := func() selfPreservation {
		return selfPreservation{enabled: cfg.SelfPreservation, percent: cfg.RenewalPercentThreshold,
			expectedInterval: cfg.ExpectedClientRenewalInterval, window: cfg.RenewalWindow,
			releaseAfter: cfg.RenewalThresholdUpdateInterval, expected: cfg.ExpectedInitialRenewers,
			warming: cfg.Peers != nil && !sabotage.On(sabotage.SPNoWarmUp)}
	}
	sp0 := newSP()
	r.sp.Store(sp0.status())

	var err error
	spProps := actor.PropsFromProducer(func() actor.Actor {
		return &selfPreservationActor{r: r, sp: newSP()}
	})
	if r.spPID, err = r.root.SpawnNamed(spProps, "self-preservation"); err != nil {
		return nil, fmt.Errorf("actors: spawn self-preservation: %w", err)
	}
	r.sinks = append(append([]Sink{}, cfg.Sinks...), spSink{r})
	// The front supervises the application actors; a panic resumes the
	// actor with its leases intact (a restart would lose them).
	frontProps := actor.PropsFromProducer(func() actor.Actor { return &frontActor{r: r, apps: map[string]*appEntry{}} },
		actor.WithDispatcher(r.disp),
		actor.WithSupervisor(actor.NewOneForOneStrategy(100, time.Minute, func(reason any) actor.Directive {
			log.Error("application actor panicked; resuming", "reason", reason)
			return actor.ResumeDirective
		})))
	if r.front, err = r.root.SpawnNamed(frontProps, "registry"); err != nil {
		return nil, fmt.Errorf("actors: spawn registry: %w", err)
	}
	evProps := actor.PropsFromProducer(func() actor.Actor {
		return &evictorActor{r: r, rnd: rand.New(rand.NewSource(cfg.Seed))}
	})
	if r.evict, err = r.root.SpawnNamed(evProps, "evictor"); err != nil {
		return nil, fmt.Errorf("actors: spawn evictor: %w", err)
	}
	r.evNow.Store(r.evict)
	return r, nil
}

// Close stops the actors (draining their mailboxes) and the actor system.
// It is idempotent.
func (r *Registry) Close() {
	r.closeOnce.Do(func() {
		_ = r.root.PoisonFuture(r.evict).Wait()
		_ = r.root.PoisonFuture(r.front).Wait()
		_ = r.root.PoisonFuture(r.spPID).Wait()
		close(r.closed)
		r.system.Shutdown()
		r.disp.close()
	})
}

// Count returns the number of live leases.
func (r *Registry) Count() int { return int(r.count.Load()) }

// SelfPreservation returns the latest self-preservation reading.
func (r *Registry) SelfPreservation() *SelfPreservationStatus { return r.sp.Load() }

// HLC returns the registry's hybrid logical clock.
func (r *Registry) HLC() *HLC { return r.hlc }

// NodeName returns the node name the registry stamps versions with.
func (r *Registry) NodeName() string { return r.cfg.NodeName }

// owns reports whether this node owns app (always true without Ownership).
func (r *Registry) owns(app string) bool {
	return r.cfg.Ownership == nil || r.cfg.Ownership.Owns(app)
}

// ownedMark is an ownership instant by the wall clock and the lease-clock
// reading it was converted to.
type ownedMark struct{ wall, lease int64 }

// ownedSince reports whether this node may evict app's leases and since
// when it has owned app (lease clock; see appState.expiredSince).
// Ownership tells the instant by the wall clock; it is converted to the
// lease clock when first seen (its age then, never negative) and the
// conversion kept while it stays the same, so a wall clock set back or
// forward afterwards moves no takeover grace.
func (r *Registry) ownedSince(app string) (int64, bool) {
	if r.cfg.Ownership == nil {
		return r.started, true
	}
	t, ok := r.cfg.Ownership.OwnedSince(app)
	if sabotage.On(sabotage.EvictWithoutOwnership) {
		ok = true
	}
	wall := t.UnixMilli()
	r.ownedMu.Lock()
	defer r.ownedMu.Unlock()
	if m, found := r.owned[app]; found && m.wall == wall {
		return m.lease, ok
	}
	lease := r.leaseClock.fromWall(wall, r.cfg.Clock.Now().UnixMilli(), r.leaseClock.now(), 0)
	if r.owned == nil {
		r.owned = map[string]ownedMark{}
	}
	r.owned[app] = ownedMark{wall: wall, lease: lease}
	return lease, ok
}

// countRenewal counts, for self-preservation, a renewal (or registration)
// that a client sent to this node. Each client renewal is counted once in
// the cluster, by the node it arrived at; the members add up each other's
// counts (see RenewalPeers).
func (r *Registry) countRenewal(app string) {
	if !sabotage.On(sabotage.SelfPreservationPerOwner) || r.owns(app) {
		r.renewals.Add(1)
	}
}

// countForwarded counts a renewal forwarded by the member that received
// it: never, except under the sabotage switch that restores per-owner
// counting, where the owner counted the renewals forwarded to it.
func (r *Registry) countForwarded(app string) {
	if sabotage.On(sabotage.SelfPreservationPerOwner) && r.owns(app) {
		r.renewals.Add(1)
	}
}

// expectedCount is the instance count self-preservation expects renewals
// for: the whole registry, which every member holds.
func (r *Registry) expectedCount() int {
	if sabotage.On(sabotage.SelfPreservationPerOwner) && r.cfg.Ownership != nil {
		return r.cfg.Ownership.OwnedCount()
	}
	return r.Count()
}

// ownedCount is the number of instances this node may evict (the base of
// its eviction cap).
func (r *Registry) ownedCount() int {
	if r.cfg.Ownership == nil {
		return r.Count()
	}
	return r.cfg.Ownership.OwnedCount()
}

// OwnershipChanged tells the registry that the set of owned applications
// changed. Self-preservation counts the whole registry, so nothing changes,
// except under the sabotage switch that restores per-owner counting.
func (r *Registry) OwnershipChanged() {
	if sabotage.On(sabotage.SelfPreservationPerOwner) {
		r.root.Send(r.spPID, &spRecountTick{force: true})
	}
}

// reply is the answer to any application command.
type reply struct {
	ok       bool
	expired  bool
	renew    RenewResult
	inst     *Instance
	records  []Record
	versions []RecordVersion
	ages     []LeaseAge
	applied  int
	refused  int
	err      error
}

var (
	replyPool = sync.Pool{New: func() any { return make(chan reply, 1) }}
	// timerPool recycles the timers that bound a call, so the hot path
	// (renew) allocates none. Since Go 1.23 a stopped timer delivers
	// nothing stale, so a timer can be reset and reused safely.
	timerPool = sync.Pool{New: func() any {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return t
	}}
)

// call sends cmd to its application actor and waits for the reply, at most
// RequestTimeout (or until ctx ends).
func (r *Registry) call(ctx context.Context, cmd appCommand) (reply, error) {
	select {
	case <-r.closed:
		return reply{}, ErrClosed
	default:
	}
	ch := replyPool.Get().(chan reply)
	cmd.setReply(ch)
	t := timerPool.Get().(*time.Timer)
	t.Reset(r.cfg.RequestTimeout)
	defer func() {
		t.Stop()
		timerPool.Put(t)
	}()
	if v, ok := r.apps.Load(cmd.appName()); ok && v.(*appEntry).tryRoute() {
		r.root.Send(v.(*appEntry).pid, cmd)
	} else {
		r.root.Send(r.front, cmd)
	}
	select {
	case rep := <-ch:
		replyPool.Put(ch) // only a drained channel goes back to the pool
		return rep, rep.err
	case <-ctx.Done():
		return reply{}, ctx.Err()
	case <-t.C:
		return reply{}, context.DeadlineExceeded
	case <-r.closed:
		return reply{}, ErrClosed
	}
}

// Register adds or replaces an instance (spec §4.3). inst must have been
// normalized (Instance.Normalize) and validated. The registry takes
// ownership of inst: the caller must not modify it (or its maps) afterwards.
// replicated marks a change that came from a peer.
func (r *Registry) Register(ctx context.Context, inst *Instance, replicated bool) error {
	_, err := r.call(ctx, &registerCmd{appCmd: appCmd{app: inst.App}, inst: inst, replicated: replicated})
	return err
}

// RegisterOwned is Register for an instance that the caller made for this
// call alone (a decoded request body) and never uses again, not even to
// read: the registry stamps and stores inst itself instead of a copy, one
// allocation of an Instance less per registration. An instance that is
// registered more than once, or shared, must go through Register.
func (r *Registry) RegisterOwned(ctx context.Context, inst *Instance, replicated bool) error {
	_, err := r.call(ctx, &registerCmd{appCmd: appCmd{app: inst.App}, inst: inst, replicated: replicated, owned: true})
	return err
}

// Renew renews a lease (spec §4.4). A client's renewal that changes
// nothing visible is answered without a round trip to the application
// actor (see fastrenew.go).
func (r *Registry) Renew(ctx context.Context, req RenewRequest) (RenewResult, error) {
	if res, ok := r.fastRenew(req); ok {
		return res, nil
	}
	rep, err := r.call(ctx, &renewCmd{appCmd: appCmd{app: req.App}, req: req})
	return rep.renew, err
}

// Cancel removes an instance; it reports false when there was none.
func (r *Registry) Cancel(ctx context.Context, app, id string, replicated bool) (bool, error) {
	rep, err := r.call(ctx, &cancelCmd{appCmd: appCmd{app: app}, id: id, replicated: replicated})
	return rep.ok, err
}

// SetStatus sets a status override (PUT …/status); it reports false when the
// instance is unknown.
func (r *Registry) SetStatus(ctx context.Context, app, id string, s Status, lastDirty *int64, replicated bool) (bool, error) {
	rep, err := r.call(ctx, &statusCmd{appCmd: appCmd{app: app}, id: id, status: s, lastDirty: lastDirty, replicated: replicated})
	return rep.ok, err
}

// DeleteOverride removes a status override and sets the status to s
// (DELETE …/status); it reports false when the instance is unknown.
func (r *Registry) DeleteOverride(ctx context.Context, app, id string, s Status, lastDirty *int64, replicated bool) (bool, error) {
	rep, err := r.call(ctx, &statusCmd{appCmd: appCmd{app: app}, id: id, status: s, lastDirty: lastDirty, replicated: replicated, delete: true})
	return rep.ok, err
}

// UpdateMetadata merges kv into an instance's metadata and re-registers it;
// it reports false when the instance is unknown.
func (r *Registry) UpdateMetadata(ctx context.Context, app, id string, kv map[string]string, replicated bool) (bool, error) {
	rep, err := r.call(ctx, &metadataCmd{appCmd: appCmd{app: app}, id: id, kv: kv, replicated: replicated})
	return rep.ok, err
}

// Get returns the live state of an instance (lease timestamps as of now),
// whether its lease has expired, and whether it exists. Only the owner of an
// application sees all its renewals, so other nodes never report expiry.
func (r *Registry) Get(ctx context.Context, app, id string) (inst *Instance, expired, ok bool, err error) {
	since, owner := r.ownedSince(app)
	rep, err := r.call(ctx, &getCmd{appCmd: appCmd{app: app}, id: id, since: since})
	return rep.inst, rep.expired && owner, rep.ok, err
}

// ApplyStats says what ApplyRecords did.
type ApplyStats struct {
	// Applied is how many records changed the registry.
	Applied int
	// Refused is how many stale copies were refused and answered with an
	// eviction tombstone (see Record).
	Refused int
}

// ApplyRecords installs peers' records for one application, each only if it
// is newer than what this node holds. initial marks records of this node's
// initial sync, which are never refused as stale (see appState.applyRecord).
func (r *Registry) ApplyRecords(ctx context.Context, app string, recs []Record, initial bool) (ApplyStats, error) {
	rep, err := r.call(ctx, &applyCmd{appCmd: appCmd{app: app}, recs: recs, initial: initial})
	return ApplyStats{Applied: rep.applied, Refused: rep.refused}, err
}

// Records returns the records (leases and unexpired tombstones) of one
// application.
func (r *Registry) Records(ctx context.Context, app string) ([]Record, error) {
	rep, err := r.call(ctx, &recordsCmd{appCmd: appCmd{app: app}})
	return rep.records, err
}

// RecordsNewerThan returns the records of one application that are newer
// than the versions theirs lists or missing from it: what a peer holding
// theirs lacks.
func (r *Registry) RecordsNewerThan(ctx context.Context, app string, theirs []RecordVersion) ([]Record, error) {
	if theirs == nil {
		theirs = []RecordVersion{}
	}
	rep, err := r.call(ctx, &recordsCmd{appCmd: appCmd{app: app}, theirs: theirs})
	return rep.records, err
}

// Versions returns the id and version of every record (lease or unexpired
// tombstone) of one application.
func (r *Registry) Versions(ctx context.Context, app string) ([]RecordVersion, error) {
	rep, err := r.call(ctx, &versionsCmd{appCmd: appCmd{app: app}})
	return rep.versions, err
}

// RenewRemote renews leases on behalf of a peer that received the renewals
// (cluster renewal forwarding). It does not wait for the result.
func (r *Registry) RenewRemote(app string, ids []string) {
	cmd := &renewBatchCmd{appCmd: appCmd{app: app}, ids: ids}
	if v, ok := r.apps.Load(app); ok && v.(*appEntry).tryRoute() {
		r.root.Send(v.(*appEntry).pid, cmd)
		return
	}
	r.root.Send(r.front, cmd)
}

// SetSelfPreservation switches self-preservation on or off at run time (the
// operator's override of --self-preservation). It returns once the new state
// is published.
func (r *Registry) SetSelfPreservation(ctx context.Context, enabled bool) error {
	select {
	case <-r.closed:
		return ErrClosed
	default:
	}
	timeout := r.cfg.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	_, err := r.root.RequestFuture(r.spPID, &spSetEnabled{enabled: enabled}, timeout).Result()
	return err
}
