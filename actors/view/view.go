// Package view folds registry events into immutable snapshots that serve
// every cached Eureka read (full registry, delta, one application, VIPs and
// secure VIPs) without a round trip to the actors.
//
// # Data flow
//
// The application actors call View.Apply synchronously for every event,
// before the command that caused it is answered, so a change is visible to
// the next read. Apply makes a new Snapshot: a persistent sorted map of
// applications (unchanged applications are shared with the previous
// snapshot), VIP indexes, the per-status counts behind the apps hashcode, and
// the recently-changed window behind /apps/delta. Readers load the current
// snapshot atomically and never lock.
//
// # Prepared responses
//
// Each application caches its encoded element per format (and its
// independently compressed gzip piece); a snapshot caches whole documents per
// format, built on first use by concatenating the applications' cached bytes.
// A write therefore re-encodes one application, never the whole registry.
// The delta document and the apps hashcode of a snapshot are computed from
// that one snapshot, so a client reconciling a delta against its hashcode can
// never see a mismatch caused by a concurrent write.
//
// Renewals are not events: like Eureka's response cache, cached documents
// show lease timestamps as of the instance's last change.
//
// The view does not know the wire formats; httpapi injects one Encoder per
// Format.
package view

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/immutable"

	"github.com/heureka/heureka/actors"
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
	// CacheUpdateInterval emulates Eureka's read-only response cache when
	// positive: readers see a snapshot refreshed at most this often.
	// Default 0: every change is visible to the next read.
	CacheUpdateInterval time.Duration
}

// DefaultConfig returns Eureka's delta retention and no read cache lag.
func DefaultConfig(enc [NumFormats]Encoder) Config {
	return Config{Encoders: enc, Clock: actors.SystemClock{}, DeltaRetention: 3 * time.Minute,
		DeltaRetentionInterval: 30 * time.Second}
}

// View is the read side of the registry. It implements actors.Sink.
type View struct {
	cfg Config

	mu     sync.Mutex // serializes writers; readers never take it
	cur    *Snapshot  // newest snapshot (guarded by mu)
	window []deltaEntry
	pub    atomic.Pointer[Snapshot] // what readers see
}

// New returns an empty view.
func New(cfg Config) *View {
	if cfg.Clock == nil {
		cfg.Clock = actors.SystemClock{}
	}
	v := &View{cfg: cfg}
	v.cur = &Snapshot{
		enc:      &v.cfg.Encoders,
		apps:     immutable.NewSortedMap[string, *App](nil),
		vips:     immutable.NewMap[string, *Group](nil),
		svips:    immutable.NewMap[string, *Group](nil),
		version:  1,
		docCache: newDocCache(),
	}
	v.pub.Store(v.cur)
	return v
}

// Snapshot returns the snapshot readers should use now.
func (v *View) Snapshot() *Snapshot { return v.pub.Load() }

// Latest returns the newest snapshot, even while CacheUpdateInterval hides
// it from readers. Live lookups (instance GETs, which Eureka serves from the
// registry rather than its cache) use it.
func (v *View) Latest() *Snapshot {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cur
}

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
		case <-refresh:
			v.mu.Lock()
			v.pub.Store(v.cur)
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

// PruneDelta drops delta entries older than DeltaRetention.
func (v *View) PruneDelta() {
	v.mu.Lock()
	defer v.mu.Unlock()
	cutoff := v.cfg.Clock.Now().Add(-positive(v.cfg.DeltaRetention, 3*time.Minute)).UnixMilli()
	i := 0
	for i < len(v.window) && v.window[i].at < cutoff {
		i++
	}
	if i == 0 {
		return
	}
	// Copy the survivors so that the dropped prefix can be collected;
	// older snapshots keep the array they were built with.
	v.window = append([]deltaEntry(nil), v.window[i:]...)
	next := v.cur.derive()
	next.window = v.window[:len(v.window):len(v.window)]
	v.install(next)
}

// ClearDelta empties the delta window. A node calls it when its initial
// cluster sync is over, so that the window does not replay the whole sync
// to clients as recent changes: they fetched nothing from it before (it
// refused reads while syncing) and start with a full fetch.
func (v *View) ClearDelta() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.window = nil
	next := v.cur.derive()
	next.window = nil
	v.install(next)
}

func (v *View) install(s *Snapshot) {
	v.cur = s
	if v.cfg.CacheUpdateInterval <= 0 {
		v.pub.Store(s)
	}
}

// deltaEntry is one change in the recently-changed window.
type deltaEntry struct {
	at   int64 // epoch ms when the change was applied
	inst *actors.Instance
}

// Apply folds one event into a new snapshot. It implements actors.Sink.
func (v *View) Apply(ev *actors.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	next := v.cur.derive()
	v.fold(next, ev, v.cfg.Clock.Now().UnixMilli())
	next.window = v.window[:len(v.window):len(v.window)]
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
	next := v.cur.derive()
	now := v.cfg.Clock.Now().UnixMilli()
	for i := range evs {
		v.fold(next, &evs[i], now)
	}
	next.window = v.window[:len(v.window):len(v.window)]
	v.install(next)
}

// fold applies one event to next, a snapshot under construction, and
// appends it to the delta window. v.mu must be held.
func (v *View) fold(next *Snapshot, ev *actors.Event, now int64) {
	inst := ev.Instance
	key := inst.Key()
	oldApp, _ := next.apps.Get(key.App)
	var old *actors.Instance
	if oldApp != nil {
		old = oldApp.find(key.ID)
	}
	var newApp *App
	if ev.Action == actors.ActionDeleted {
		newApp = oldApp.without(key.ID)
	} else {
		newApp = oldApp.with(key.App, inst, ev.Version)
	}
	if newApp == nil {
		next.apps = next.apps.Delete(key.App)
	} else {
		next.apps = next.apps.Set(key.App, newApp)
	}
	if old != nil {
		next.counts[statusIndex(old.Status)]--
		next.total--
	}
	if ev.Action != actors.ActionDeleted {
		next.counts[statusIndex(inst.Status)]++
		next.total++
	}
	var cur2 *actors.Instance
	if ev.Action != actors.ActionDeleted {
		cur2 = inst
	}
	next.vips = updateGroups(next.vips, key, old, cur2, func(i *actors.Instance) string { return i.VIPAddress })
	next.svips = updateGroups(next.svips, key, old, cur2, func(i *actors.Instance) string { return i.SecureVIPAddress })

	v.window = append(v.window, deltaEntry{at: now, inst: inst})
}

// Snapshot is an immutable state of the registry with lazily built, cached
// responses. All methods are safe for concurrent use.
type Snapshot struct {
	enc     *[NumFormats]Encoder
	version uint64
	apps    *immutable.SortedMap[string, *App]
	vips    *immutable.Map[string, *Group]
	svips   *immutable.Map[string, *Group]
	counts  [len(actors.AllStatuses)]int
	total   int
	window  []deltaEntry

	docCache *docCache
}

// derive returns a copy of s with a new version and empty document caches.
func (s *Snapshot) derive() *Snapshot {
	n := *s
	n.version++
	n.docCache = newDocCache()
	return &n
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
	a, _ := s.apps.Get(name)
	return a
}

// Apps calls fn for every application in name order until fn returns false.
func (s *Snapshot) Apps(fn func(*App) bool) {
	it := s.apps.Iterator()
	for !it.Done() {
		_, a, _ := it.Next()
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
		for _, in := range a.instances {
			if in.OverriddenStatus != actors.StatusUnknown && in.OverriddenStatus != "" {
				out[in.ID()] = in.OverriddenStatus
			}
		}
		return true
	})
	return out
}

// App is one application in a snapshot. It is immutable; its encoded bytes
// are built on first use and shared by every snapshot that holds it.
type App struct {
	name      string
	instances []*actors.Instance // sorted by id
	versions  []actors.Version   // versions[i] is the version of instances[i]
	elem      [NumFormats]lazy   // the application element
	gz        [NumFormats]lazyGz // the element as a gzip piece
	doc       [NumFormats][2]lazy
	digest    struct {
		once sync.Once
		v    uint64
	}
}

// Digest summarizes the application's instance versions: two nodes holding
// the same versions of the same instances get the same digest. It is an XOR
// of a hash of every instance's id and version, computed once per App.
func (a *App) Digest() uint64 {
	a.digest.once.Do(func() {
		var buf [8]byte
		for i, in := range a.instances {
			h := fnv.New64a()
			_, _ = h.Write([]byte(in.ID()))
			binary.LittleEndian.PutUint64(buf[:], a.versions[i].Clock)
			_, _ = h.Write(buf[:])
			_, _ = h.Write([]byte(a.versions[i].Node))
			a.digest.v ^= mix64(h.Sum64())
		}
	})
	return a.digest.v
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

// Name returns the application's upper-case name.
func (a *App) Name() string { return a.name }

// Instances returns the instances sorted by id. The slice must not be
// modified.
func (a *App) Instances() []*actors.Instance { return a.instances }

// Versions returns the versions of Instances(), index for index.
func (a *App) Versions() []actors.Version { return a.versions }

func (a *App) index(id string) (int, bool) {
	i := sort.Search(len(a.instances), func(i int) bool { return a.instances[i].ID() >= id })
	return i, i < len(a.instances) && a.instances[i].ID() == id
}

func (a *App) find(id string) *actors.Instance {
	if i, ok := a.index(id); ok {
		return a.instances[i]
	}
	return nil
}

// with returns a copy of a (nil means a new app) with inst set.
func (a *App) with(name string, inst *actors.Instance, v actors.Version) *App {
	n := &App{name: name}
	if a == nil {
		n.instances = []*actors.Instance{inst}
		n.versions = []actors.Version{v}
		return n
	}
	i, found := a.index(inst.ID())
	size := len(a.instances)
	if !found {
		size++
	}
	n.instances = make([]*actors.Instance, 0, size)
	n.versions = make([]actors.Version, 0, size)
	n.instances = append(n.instances, a.instances[:i]...)
	n.versions = append(n.versions, a.versions[:i]...)
	n.instances = append(n.instances, inst)
	n.versions = append(n.versions, v)
	if found {
		i++
	}
	n.instances = append(n.instances, a.instances[i:]...)
	n.versions = append(n.versions, a.versions[i:]...)
	return n
}

// without returns a copy of a without id, or nil when that leaves it empty.
func (a *App) without(id string) *App {
	if a == nil {
		return nil
	}
	i, found := a.index(id)
	if !found {
		return a
	}
	if len(a.instances) == 1 {
		return nil
	}
	n := &App{name: a.name}
	n.instances = append(append(make([]*actors.Instance, 0, len(a.instances)-1), a.instances[:i]...), a.instances[i+1:]...)
	n.versions = append(append(make([]actors.Version, 0, len(a.versions)-1), a.versions[:i]...), a.versions[i+1:]...)
	return n
}

// lazy is a byte slice built once on first use.
type lazy struct {
	once sync.Once
	b    []byte
}

func (l *lazy) get(build func() []byte) []byte {
	l.once.Do(func() { l.b = build() })
	return l.b
}

// lazyGz is a gzip piece built once on first use.
type lazyGz struct {
	once sync.Once
	p    gzPiece
}

func (l *lazyGz) get(build func() gzPiece) gzPiece {
	l.once.Do(func() { l.p = build() })
	return l.p
}

func (a *App) element(enc Encoder, f Format) []byte {
	return a.elem[f].get(func() []byte { return enc.AppendApplication(nil, a.name, a.instances) })
}

func (a *App) gzElement(enc Encoder, f Format) gzPiece {
	return a.gz[f].get(func() gzPiece { return compressPiece(a.element(enc, f)) })
}

// Document returns the document for GET apps/{app} in format f, gzipped if
// gz.
func (a *App) Document(enc Encoder, f Format, gz bool) []byte {
	g := 0
	if gz {
		g = 1
	}
	return a.doc[f][g].get(func() []byte {
		plain := enc.AppendApplicationDocument(nil, a.name, a.instances)
		if gz {
			return assembleGzip([]gzPiece{compressPiece(plain)})
		}
		return plain
	})
}
