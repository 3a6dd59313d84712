// Package view folds registry events into immutable snapshots that serve
// every cached Eureka read (full registry, delta, one application, VIPs and
// secure VIPs) without a round trip to the actors.
//
// # Data flow
//
// The application actors call View.Apply synchronously for every event,
// before the command that caused it is answered, so a change is visible to
// the next read. Apply makes a new Snapshot: a persistent B+tree of
// applications (btree.go; unchanged applications and tree nodes are shared
// with the previous snapshot), VIP indexes, the per-status counts behind
// the apps hashcode, and the recently changed instances behind /apps/delta. An
// application's instances are a persistent B+tree too, so a write copies
// one path of each, whatever the size of its application or of the
// registry. Readers load the current snapshot atomically and never lock.
//
// # Prepared responses
//
// Each instance state is a piece (app.go) whose bytes per format are encoded
// on first use and shared by the application that holds it, the delta entry
// of the change that made it and every document built from them. An
// application caches its gzip element per format (compressed from its
// pieces, one gzip chunk per leaf), and a snapshot caches whole documents
// per format, built on first use by concatenating cached bytes (gzip ones
// from one block per leaf of the tree, reused from the previous snapshot).
// A write therefore encodes nothing: it rebuilds its application's leaf and
// path and makes one piece; the next read of a
// format encodes the changed instance once, and no format is encoded that
// nobody reads. The delta document and the apps hashcode of a snapshot are
// computed from that one snapshot, so a client reconciling a delta against
// its hashcode can never see a mismatch caused by a concurrent write.
//
// # Memory
//
// The delta's group of each application holds the latest piece of each
// changed instance (for additions and modifications the same piece the
// application holds), stamped with the time of its change; it holds only
// pieces, not the instance and version slices of a registry App. So churn
// retains one instance state per changed instance, not one per change: a
// state superseded by a later change (a registration followed by its
// cancel) is collected at once. What pruning visits is kept per tick of
// the retention (a 180th of it): the applications changed during the
// tick and the bytes their pieces hold, nothing per change. What the
// delta holds beyond the registry is bounded (Config.DeltaMaxBytes): past
// the bound, a write wakes Run, which prunes the oldest ticks early. The
// VIP index holds applications, nothing per instance (the View counts
// instances per address and application).
//
// Renewals are not events: like Eureka's response cache, cached documents
// show lease timestamps as of the instance's last change.
//
// The view does not know the wire formats; package eureka provides one
// Encoder per Format, which node hands to it.
package view

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/immutable"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
)

// Config configures a View.
type Config struct {
	// Encoders renders each Format. Required.
	Encoders [NumFormats]Encoder
	// Clock stamps delta entries. Default: actors.SystemClock.
	Clock actors.Clock
	// DeltaRetention is how long a change stays in /apps/delta. Default 3m.
	DeltaRetention time.Duration
	// DeltaRetentionInterval is how often expired delta entries are
	// dropped, so an entry lives between DeltaRetention and
	// DeltaRetention+DeltaRetentionInterval (Eureka: 180–210 s). Default 30s.
	DeltaRetentionInterval time.Duration
	// DeltaMaxBytes bounds the memory the delta holds beyond the registry
	// (an estimate: the cancelled and evicted instances' packed states and
	// every entry's slot). When a write takes it past the bound, the oldest
	// changes leave the delta early, before DeltaRetention, until it holds
	// 7/8 of the bound. A Java client that fetches the delta less often
	// than the window then lasts sees the gap in the apps hashcode and
	// fetches the full registry. 0: no bound. DefaultConfig: 128 MiB, about
	// 280,000 cancelled instances (DefaultDeltaMaxBytes).
	DeltaMaxBytes int64
	// CacheUpdateInterval emulates Eureka's read-only response cache when
	// positive: readers see a snapshot refreshed at most this often.
	// Default 0: every change is visible to the next read.
	CacheUpdateInterval time.Duration
}

// DefaultDeltaMaxBytes is DefaultConfig's DeltaMaxBytes.
const DefaultDeltaMaxBytes = 128 << 20

// DefaultConfig returns Eureka's delta retention, the delta's default
// memory bound and no read cache lag.
func DefaultConfig(enc [NumFormats]Encoder) Config {
	return Config{Encoders: enc, Clock: actors.SystemClock{}, DeltaRetention: 3 * time.Minute,
		DeltaRetentionInterval: 30 * time.Second, DeltaMaxBytes: DefaultDeltaMaxBytes}
}

// View is the read side of the registry. It implements actors.Sink.
//
// Writes to different applications run in parallel up to one short critical
// section: an event's application is rebuilt (its slices copied, a piece
// made for the new instance state) before the lock is taken, which is safe
// because only that application's actor writes it; under the lock the new
// App is put into the sorted map (O(log apps)), the counts, VIP groups,
// delta group and the tick's set of changed applications are updated, and
// the snapshot is published. Nothing is
// encoded on the write path.
type View struct {
	cfg Config

	mu   sync.Mutex               // serializes installing snapshots; readers never take it
	head atomic.Pointer[Snapshot] // newest snapshot (written under mu)
	// recent lists the applications changed per tick, oldest first
	// (guarded by mu): what pruning visits.
	recent []recentApps
	tick   int64 // the length of a tick of recent (ms)
	// held keeps every change's piece until it is pruned, only under the
	// sabotage switch ViewDeltaHoldsStates (guarded by mu), as the window
	// once did.
	held []*piece
	// vipN and svipN count the instances per address and application
	// behind the snapshots' VIP indexes (guarded by mu).
	vipN, svipN groupCounts
	pub         atomic.Pointer[Snapshot] // what readers see
	// notify is closed when pub changes, made on demand by Changed (nil
	// while nobody asked since the last change), guarded by notifyMu.
	notify   chan struct{}
	notifyMu sync.Mutex
	// overBound is signalled (without blocking) by a write that takes the
	// delta past DeltaMaxBytes: Run prunes it then.
	overBound chan struct{}
	// pruneComputed, when set (by tests), runs between PruneDelta's
	// computing pruned groups (try 0: all of them; try 1: those a write
	// replaced meanwhile) and installing them.
	pruneComputed func(try int)
}

// New returns an empty view.
func New(cfg Config) *View {
	if cfg.Clock == nil {
		cfg.Clock = actors.SystemClock{}
	}
	v := &View{cfg: cfg, vipN: groupCounts{}, svipN: groupCounts{}, overBound: make(chan struct{}, 1),
		tick: max(1, positive(cfg.DeltaRetention, 3*time.Minute).Milliseconds()/recentTicks)}
	s := &Snapshot{
		enc:     &v.cfg.Encoders,
		vips:    immutable.NewMap[string, *Group](nil),
		svips:   immutable.NewMap[string, *Group](nil),
		version: 1,
	}
	v.head.Store(s)
	v.pub.Store(s)
	return v
}

// Snapshot returns the snapshot readers should use now.
func (v *View) Snapshot() *Snapshot { return v.pub.Load() }

// Changed returns a channel that is closed when the snapshot readers see
// next changes. Take it before reading the snapshot: a change published
// after the read then closes it, so none is missed. The channel is shared
// by every caller until the change, and a view nobody asks costs one
// uncontended lock per published snapshot.
func (v *View) Changed() <-chan struct{} {
	v.notifyMu.Lock()
	defer v.notifyMu.Unlock()
	if v.notify == nil {
		v.notify = make(chan struct{})
	}
	return v.notify
}

// publish makes s the snapshot readers see and wakes the Changed waiters.
func (v *View) publish(s *Snapshot) {
	v.pub.Store(s)
	v.notifyMu.Lock()
	if v.notify != nil {
		close(v.notify)
		v.notify = nil
	}
	v.notifyMu.Unlock()
}

// Latest returns the newest snapshot, even while CacheUpdateInterval hides
// it from readers. Live lookups (instance GETs, which Eureka serves from the
// registry rather than its cache) use it.
func (v *View) Latest() *Snapshot { return v.head.Load() }

// Run prunes the delta window and, when CacheUpdateInterval is set,
// refreshes the readers' snapshot, until ctx ends.
func (v *View) Run(ctx context.Context) {
	prune := time.NewTicker(positive(v.cfg.DeltaRetentionInterval, 30*time.Second))
	defer prune.Stop()
	var refresh <-chan time.Time
	if v.cfg.CacheUpdateInterval > 0 {
		t := time.NewTicker(v.cfg.CacheUpdateInterval)
		defer t.Stop()
		refresh = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			v.PruneDelta()
		case <-v.overBound:
			v.PruneDelta()
		case <-refresh:
			v.mu.Lock()
			if h := v.head.Load(); h != v.pub.Load() {
				v.publish(h)
			}
			v.mu.Unlock()
		}
	}
}

func positive(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// PruneDelta drops from the delta the instances whose latest change is
// older than DeltaRetention, and when the delta holds more than
// DeltaMaxBytes, those of its oldest ticks until it holds 7/8 of that (at
// most everything written up to now). It visits only the applications
// changed in the ticks that began before the cutoff and computes their
// groups without the expired pieces outside the lock; under the lock it
// installs them a batch at a time, so a write waits for one batch at most
// however much expired (at 1,000 writes a second, 30,000 pieces expire per interval).
// A group that a write changed since it was computed is computed again.
// Nothing is re-encoded: the survivors keep their pieces.
func (v *View) PruneDelta() {
	now := v.cfg.Clock.Now()
	cutoff := now.Add(-positive(v.cfg.DeltaRetention, 3*time.Minute)).UnixMilli()
	v.mu.Lock()
	cutoff = v.boundCutoff(cutoff, now.UnixMilli())
	i := 0
	for i < len(v.recent) && v.recent[i].from < cutoff {
		i++
	}
	if i == 0 {
		v.mu.Unlock()
		return
	}
	visit := map[string]struct{}{}
	for _, r := range v.recent[:i] {
		for app := range r.apps {
			visit[app] = struct{}{}
		}
	}
	// A tick that ended by the cutoff is done with; the one the cutoff
	// falls in is visited again next time.
	done := 0
	for done < i && v.recent[done].from+v.tick <= cutoff {
		done++
	}
	v.recent = append([]recentApps(nil), v.recent[done:]...)
	if v.held != nil {
		v.held = slices.DeleteFunc(v.held, func(p *piece) bool { return p.at < cutoff })
	}
	head := v.head.Load()
	v.mu.Unlock()

	// A published piece's time is never written again, so the head's
	// groups can be read without the lock. Changes made meanwhile are
	// newer than the cutoff.
	var work []prunedGroup
	for app := range visit {
		g := head.delta.Get(app)
		if g == nil {
			continue
		}
		var ids []string
		for p := range g.pieces.All() {
			if p.at < cutoff {
				ids = append(ids, p.key())
			}
		}
		if len(ids) > 0 {
			work = append(work, prunedGroup{app: app, ids: ids, from: g, to: g.withoutExpired(ids, cutoff)})
		}
	}
	// A group that a write replaced since it was computed is computed
	// again, once; one replaced again meanwhile (its application is
	// written without pause) is pruned under the lock a batch of ids at a
	// time.
	for try := 0; len(work) > 0; try++ {
		if v.pruneComputed != nil {
			v.pruneComputed(try)
		}
		var stale []prunedGroup
		for batch := range slices.Chunk(work, pruneBatch) {
			stale = append(stale, v.installPruned(batch)...)
		}
		if try == 0 {
			work = reprune(v.head.Load(), stale, cutoff)
			continue
		}
		for _, w := range stale {
			for ids := range slices.Chunk(w.ids, pruneBatch) {
				v.pruneLocked(w.app, ids, cutoff)
			}
		}
		break
	}
}

// boundCutoff returns the cutoff that brings the delta within
// DeltaMaxBytes: cutoff itself when it is within, otherwise the end of
// the oldest ticks whose changes hold what exceeds 7/8 of the bound, but
// never past now: the changes of the current millisecond go too when they
// are what exceeds it (a tiny bound empties the delta), and a change made
// while pruning, in a later millisecond, stays. A tick's bytes count every
// piece it added, some since superseded by a later change, so the
// estimate never drops more ticks than needed; a write that still finds
// the delta past the bound signals another pruning. v.mu must be held.
func (v *View) boundCutoff(cutoff, now int64) int64 {
	limit := v.cfg.DeltaMaxBytes
	if limit <= 0 || sabotage.On(sabotage.ViewDeltaUnbounded) {
		return cutoff
	}
	excess := v.head.Load().deltaHeld - limit
	if excess <= 0 {
		return cutoff
	}
	excess += limit / 8
	for _, r := range v.recent {
		if excess <= 0 {
			break
		}
		excess -= r.held
		cutoff = max(cutoff, min(r.from+v.tick, now+1))
	}
	return cutoff
}

// pruneBatch bounds the work PruneDelta does under one hold of the lock:
// this many pruned delta groups installed, or ids pruned from one group
// (about 0.1 ms either way on this machine; BenchmarkPruneDelta).
const pruneBatch = 32

// prunedGroup is a delta group pruned outside the lock: the application's
// group from, and to, the same without the expired pieces of ids.
type prunedGroup struct {
	app      string
	ids      []string
	from, to *App
}

// installPruned installs a batch of pruned groups in one new snapshot, and
// returns those that a write replaced since they were computed.
func (v *View) installPruned(batch []prunedGroup) (stale []prunedGroup) {
	v.mu.Lock()
	defer v.mu.Unlock()
	next := v.head.Load().derive()
	changed := false
	for _, w := range batch {
		cur := next.delta.Get(w.app)
		if cur != w.from && !sabotage.On(sabotage.ViewStaleAppInstalled) {
			stale = append(stale, w)
			continue
		}
		changed = true
		next.replaceDeltaGroup(w.app, cur, w.to)
	}
	if changed {
		v.install(next)
	}
	return stale
}

// reprune computes the stale groups again from head. An instance changed
// again since holds a newer piece and stays.
func reprune(head *Snapshot, stale []prunedGroup, cutoff int64) []prunedGroup {
	var out []prunedGroup
	for _, w := range stale {
		g := head.delta.Get(w.app)
		if to := g.withoutExpired(w.ids, cutoff); to != g {
			out = append(out, prunedGroup{app: w.app, ids: w.ids, from: g, to: to})
		}
	}
	return out
}

// pruneLocked prunes the expired pieces of ids from app's delta group
// under the lock.
func (v *View) pruneLocked(app string, ids []string, cutoff int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	next := v.head.Load().derive()
	cur := next.delta.Get(app)
	g := cur.withoutExpired(ids, cutoff)
	if g == cur {
		return
	}
	next.replaceDeltaGroup(app, cur, g)
	v.install(next)
}

// replaceDeltaGroup puts g (nil: none) in place of cur as app's delta group
// in s, a snapshot under construction.
func (s *Snapshot) replaceDeltaGroup(app string, cur, g *App) {
	s.deltaN += g.Len() - cur.Len()
	s.deltaHeld += g.heldBytes() - cur.heldBytes()
	if g == nil {
		s.delta, _ = s.delta.Delete(app)
	} else {
		s.delta = s.delta.Set(g)
	}
}

// recentTicks is how many ticks the delta retention is cut into for
// pruning: an instance leaves the delta at most one tick (and one pruning
// interval) after its latest change expired.
const recentTicks = 180

// recentApps is one tick of the delta window: the applications changed
// during it, and the bytes its changes' pieces held when they were made.
type recentApps struct {
	from int64 // when the tick began (epoch ms)
	apps map[string]struct{}
	held int64
}

// noteChange records that app changed at now (epoch ms) with a piece that
// holds held bytes. v.mu must be held.
func (v *View) noteChange(app string, now, held int64) {
	n := len(v.recent)
	if n == 0 || now >= v.recent[n-1].from+v.tick {
		v.recent = append(v.recent, recentApps{from: now, apps: map[string]struct{}{}})
		n++
	}
	v.recent[n-1].apps[app] = struct{}{}
	v.recent[n-1].held += held
}

// ClearDelta empties the delta window. A node calls it when its initial
// cluster sync is over, so that the window does not replay the whole sync
// to clients as recent changes: they fetched nothing from it before (it
// refused reads while syncing) and start with a full fetch.
func (v *View) ClearDelta() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.recent = nil
	v.held = nil
	next := v.head.Load().derive()
	next.deltaN, next.deltaHeld = 0, 0
	next.delta = btree[*App]{}
	v.install(next)
}

// install publishes s as the newest snapshot. v.mu must be held.
func (v *View) install(s *Snapshot) {
	v.head.Store(s)
	if v.cfg.CacheUpdateInterval <= 0 {
		v.publish(s)
	}
}

// change is one event prepared for installing: the piece of its new state
// and its application rebuilt from base.
type change struct {
	ev     *actors.Event
	key    actors.Key
	p      *piece
	base   *App   // the App the change was computed from (nil: none)
	newApp *App   // base with the change (nil: the application is gone)
	old    *piece // base's piece of the instance (set only when not deleted)
	// deltaBase and newDelta are the same for the application's group in
	// the delta.
	deltaBase, newDelta *App
}

func prepare(ev *actors.Event, base, deltaBase *App) change {
	var p *piece
	if ev.Action == actors.ActionDeleted && !sabotage.On(sabotage.ViewDeltaHoldsStates) &&
		!sabotage.On(sabotage.ViewDeltaUnpacked) {
		p = newPackedPiece(ev.Instance, ev.Version)
	} else {
		p = newPiece(ev.Instance, ev.Version)
	}
	c := change{ev: ev, key: ev.Instance.Key(), p: p, base: base}
	c.rebase(base)
	c.rebaseDelta(deltaBase)
	return c
}

func (c *change) rebaseDelta(deltaBase *App) {
	c.deltaBase = deltaBase
	c.newDelta, _ = deltaBase.with(c.key.App, c.p) // a delta group changes as an App does
}

func (c *change) rebase(base *App) {
	c.base = base
	if c.ev.Action == actors.ActionDeleted {
		c.newApp = base.without(c.key.ID)
	} else {
		c.newApp, c.old = base.with(c.key.App, c.p)
	}
}

// Apply folds one event into a new snapshot. It implements actors.Sink.
func (v *View) Apply(ev *actors.Event) {
	h := v.head.Load()
	c := prepare(ev, h.App(ev.Instance.App), h.deltaApp(ev.Instance.App))
	v.install1(&c)
}

// install1 folds one prepared change into a new snapshot and publishes it.
func (v *View) install1(c *change) {
	v.mu.Lock()
	defer v.mu.Unlock()
	next := v.head.Load().derive()
	v.fold(next, c, v.cfg.Clock.Now().UnixMilli())
	v.install(next)
}

// ApplyBatch folds several events into one new snapshot (bulk replication
// and anti-entropy transfers). It implements actors.BatchSink.
func (v *View) ApplyBatch(evs []actors.Event) {
	if len(evs) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	next := v.head.Load().derive()
	now := v.cfg.Clock.Now().UnixMilli()
	for i := range evs {
		c := prepare(&evs[i], next.App(evs[i].Instance.App), next.deltaApp(evs[i].Instance.App))
		v.fold(next, &c, now)
	}
	v.install(next)
}

// fold applies one prepared change to next, a snapshot under construction,
// and to its delta. v.mu must be held. If another writer
// changed the application (or its delta group; pruning does) since c was
// prepared (only possible when events of
// one application come from more than one goroutine, which the registry
// never does), the change is recomputed here.
func (v *View) fold(next *Snapshot, c *change, now int64) {
	// Install c's application, reading the one it replaces in the same
	// descent; in the rare case that it is not the one c was computed
	// from, recompute c and install it again.
	var oldApp *App
	switch {
	case c.newApp == c.base: // c changes nothing
		oldApp = next.apps.Get(c.key.App)
	case c.newApp == nil: // c deletes the application's last instance
		oldApp = next.apps.Get(c.key.App)
		next.apps, _ = next.apps.Delete(c.key.App)
	default:
		next.apps, oldApp = next.apps.Swap(c.newApp)
	}
	if oldApp != c.base && !sabotage.On(sabotage.ViewStaleAppInstalled) {
		c.rebase(oldApp)
		if c.newApp == nil {
			next.apps, _ = next.apps.Delete(c.key.App)
		} else {
			next.apps = next.apps.Set(c.newApp)
		}
	}
	deleted := c.ev.Action == actors.ActionDeleted
	var old *actors.Instance
	switch {
	case !deleted: // with found it (c is computed from oldApp by now)
		if c.old != nil {
			old = c.old.state()
		}
	case oldApp != nil:
		old = oldApp.find(c.key.ID)
	}
	if old != nil {
		next.counts[statusIndex(old.Status)]--
		next.total--
	}
	var cur *actors.Instance
	if !deleted {
		cur = c.p.inst
		next.counts[statusIndex(cur.Status)]++
		next.total++
	}
	next.vips = updateGroups(next.vips, v.vipN, c.key, old, cur, vipOf)
	next.svips = updateGroups(next.svips, v.svipN, c.key, old, cur, svipOf)

	c.p.at = now
	v.noteChange(c.key.App, now, c.p.heldBytes())
	if sabotage.On(sabotage.ViewDeltaHoldsStates) {
		v.held = append(v.held, c.p)
	}
	var g *App
	next.delta, g = next.delta.Swap(c.newDelta)
	if g != c.deltaBase && !sabotage.On(sabotage.ViewStaleAppInstalled) {
		c.rebaseDelta(g)
		next.delta = next.delta.Set(c.newDelta)
	}
	next.deltaN += c.newDelta.Len() - c.deltaBase.Len()
	next.deltaHeld += c.newDelta.heldBytes() - c.deltaBase.heldBytes()
	if limit := v.cfg.DeltaMaxBytes; limit > 0 && next.deltaHeld > limit {
		select {
		case v.overBound <- struct{}{}:
		default:
		}
	}
}

// deltaApp returns the delta's group of application name, or nil.
func (s *Snapshot) deltaApp(name string) *App {
	return s.delta.Get(name)
}

// Snapshot is an immutable state of the registry with lazily built, cached
// responses. All methods are safe for concurrent use.
type Snapshot struct {
	enc     *[NumFormats]Encoder
	version uint64
	apps    btree[*App]
	vips    *immutable.Map[string, *Group]
	svips   *immutable.Map[string, *Group]
	counts  [len(actors.AllStatuses)]int
	total   int
	// delta holds, per application, the latest piece of every instance
	// changed within the retention, sorted by id: the delta document's
	// applications, each with its own cached bytes, so a write changes one
	// of them.
	delta     btree[*App]
	deltaN    int   // the instances in delta
	deltaHeld int64 // what delta holds beyond the registry (App.heldBytes)

	// cache holds the documents built from this snapshot, allocated by the
	// first reader: a snapshot that nobody reads (most, under a burst of
	// writes) costs no cache.
	cache atomic.Pointer[docCache]
	// reuse holds, per document kind and format, the gzip blocks of the
	// latest predecessor that built them (cleared once s builds its own).
	reuse [2][NumFormats]atomic.Pointer[gzLayout]
}

// docs returns s's document cache, allocating it on first use.
func (s *Snapshot) docs() *docCache {
	if c := s.cache.Load(); c != nil {
		return c
	}
	s.cache.CompareAndSwap(nil, newDocCache())
	return s.cache.Load()
}

// derive returns a copy of s with a new version and empty document caches.
func (s *Snapshot) derive() *Snapshot {
	n := &Snapshot{enc: s.enc, version: s.version + 1, apps: s.apps, vips: s.vips, svips: s.svips,
		counts: s.counts, total: s.total, delta: s.delta, deltaN: s.deltaN, deltaHeld: s.deltaHeld}
	c := s.cache.Load()
	for k := range n.reuse {
		for f := range n.reuse[k] {
			if c != nil {
				if b := c.blocks[k][f].Load(); b != nil {
					n.reuse[k][f].Store(b)
					continue
				}
			}
			n.reuse[k][f].Store(s.reuse[k][f].Load())
		}
	}
	return n
}

// Version increases with every change (and every delta pruning).
func (s *Snapshot) Version() uint64 { return s.version }

// Count returns the number of instances.
func (s *Snapshot) Count() int { return s.total }

// HashCode returns the apps hashcode of the whole registry (spec §4.8).
func (s *Snapshot) HashCode() string { return hashCode(&s.counts) }

func statusIndex(st actors.Status) int {
	for i, s := range actors.AllStatuses {
		if s == st {
			return i
		}
	}
	return 3 // UNKNOWN
}

func hashCode(counts *[len(actors.AllStatuses)]int) string {
	var b strings.Builder
	for i, n := range counts {
		if n > 0 {
			b.WriteString(string(actors.AllStatuses[i]))
			b.WriteByte('_')
			b.WriteString(strconv.Itoa(n))
			b.WriteByte('_')
		}
	}
	return b.String()
}

// App returns one application, or nil.
func (s *Snapshot) App(name string) *App {
	return s.apps.Get(name)
}

// Apps calls fn for every application in name order until fn returns false.
func (s *Snapshot) Apps(fn func(*App) bool) {
	for a := range s.apps.All() {
		if !fn(a) {
			return
		}
	}
}

// Instance returns one instance as last changed, or nil.
func (s *Snapshot) Instance(app, id string) *actors.Instance {
	if a := s.App(app); a != nil {
		return a.find(id)
	}
	return nil
}

// InstanceByID returns the first instance with id in any application.
func (s *Snapshot) InstanceByID(id string) *actors.Instance {
	var found *actors.Instance
	s.Apps(func(a *App) bool {
		found = a.find(id)
		return found == nil
	})
	return found
}

// Overrides returns the status overrides in force, by instance id.
func (s *Snapshot) Overrides() map[string]actors.Status {
	out := map[string]actors.Status{}
	s.Apps(func(a *App) bool {
		for in := range a.All() {
			if in.OverriddenStatus != actors.StatusUnknown && in.OverriddenStatus != "" {
				out[in.ID()] = in.OverriddenStatus
			}
		}
		return true
	})
	return out
}
