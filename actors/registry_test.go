package actors

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// Registry is closed by its test, and Close must stop every actor, ticker and
// protoactor goroutine it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Generous deadlines for polling: the tests run with -race on small machines.
const (
	waitFor = 10 * time.Second
	tick    = 5 * time.Millisecond
)

// testLogWriter sends log lines to t.Log until the test ends; later lines
// (from goroutines that outlive Close briefly) are dropped.
type testLogWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// testRegistryConfig is DefaultConfig with test logging, a fixed seed and no
// initial expected renewer, so self-preservation arithmetic counts only the
// test's instances.
func testRegistryConfig(t *testing.T) Config {
	w := &testLogWriter{t: t}
	t.Cleanup(w.stop) // runs after the registry's Close (cleanups are LIFO)
	cfg := DefaultConfig("node-a")
	cfg.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.Seed = 1
	cfg.ExpectedInitialRenewers = 0
	return cfg
}

// newTestRegistry starts a registry with testRegistryConfig changed by
// mutate, and closes it when the test ends.
func newTestRegistry(t *testing.T, mutate func(*Config)) *Registry {
	t.Helper()
	cfg := testRegistryConfig(t)
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := NewRegistry(cfg)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// regInstance returns a normalized UP instance with a lease of durSecs.
func regInstance(app, id string, durSecs int) *Instance {
	in := &Instance{InstanceID: id, HostName: id + ".example.org", App: app, Status: StatusUp,
		VIPAddress: strings.ToLower(app), LeaseInfo: LeaseInfo{DurationSecs: durSecs}}
	in.Normalize()
	return in
}

// recordingSink records every event it receives.
type recordingSink struct {
	mu     sync.Mutex
	events []Event
}

func (s *recordingSink) Apply(ev *Event) {
	s.mu.Lock()
	s.events = append(s.events, *ev)
	s.mu.Unlock()
}

func (s *recordingSink) all() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

func (s *recordingSink) count(match func(Event) bool) int {
	n := 0
	for _, ev := range s.all() {
		if match(ev) {
			n++
		}
	}
	return n
}

func (s *recordingSink) has(k Key, a ActionType) bool {
	return s.count(func(ev Event) bool { return ev.Key() == k && ev.Action == a }) > 0
}

func isEviction(ev Event) bool { return ev.Cause == CauseEvict }

// appActorIDs lists the process ids of the application actors alive in r's
// actor system (children of the front, "registry/…"). It scans the whole
// process registry, which is slow: use it for final checks, not for polling.
func appActorIDs(r *Registry) []string {
	var ids []string
	for _, m := range r.system.ProcessRegistry.LocalPIDs.LocalPIDs {
		for _, k := range m.Keys() {
			if strings.HasPrefix(k, "registry/") {
				ids = append(ids, k)
			}
		}
	}
	return ids
}

// appActorAlive reports whether app's actor, spawned under its name, is
// registered in r's actor system. (A replacement spawned while the old one
// was still stopping is unnamed; appActorIDs finds those too.)
func appActorAlive(r *Registry, app string) bool {
	_, ok := r.system.ProcessRegistry.GetLocal("registry/app-" + app)
	return ok
}

func TestNewRegistryValidates(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"node", func(c *Config) { c.NodeName = "" }, "NodeName"},
		{"eviction interval", func(c *Config) { c.EvictionInterval = 0 }, "EvictionInterval"},
		{"percent zero", func(c *Config) { c.RenewalPercentThreshold = 0 }, "RenewalPercentThreshold"},
		{"percent above one", func(c *Config) { c.RenewalPercentThreshold = 1.5 }, "RenewalPercentThreshold"},
		{"recount interval", func(c *Config) { c.RenewalThresholdUpdateInterval = -1 }, "RenewalThresholdUpdateInterval"},
		{"client interval", func(c *Config) { c.ExpectedClientRenewalInterval = 0 }, "ExpectedClientRenewalInterval"},
		{"window", func(c *Config) { c.RenewalWindow = 0 }, "RenewalWindow"},
		{"initial renewers", func(c *Config) { c.ExpectedInitialRenewers = -1 }, "ExpectedInitialRenewers"},
		{"tombstone ttl", func(c *Config) { c.TombstoneTTL = 0 }, "TombstoneTTL"},
		{"request timeout", func(c *Config) { c.RequestTimeout = 0 }, "RequestTimeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig("n")
			tc.mutate(&cfg)
			r, err := NewRegistry(cfg)
			require.Error(t, err)
			assert.Nil(t, r)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "actors: "))
		})
	}
	cfg := DefaultConfig("n")
	assert.NoError(t, cfg.Validate())
}

func TestRegistryFacade(t *testing.T) {
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) { c.Sinks = []Sink{sink} })
	ctx := context.Background()
	assert.Equal(t, "node-a", r.NodeName())
	require.NotNil(t, r.HLC())

	require.NoError(t, r.Register(ctx, regInstance("ORDERS", "o-1", 30), false))
	assert.Equal(t, 1, r.Count())

	inst, expired, ok, err := r.Get(ctx, "ORDERS", "o-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.False(t, expired)
	assert.Equal(t, StatusUp, inst.Status)
	assert.Equal(t, "ORDERS", inst.App)

	for _, tc := range []struct {
		name string
		req  RenewRequest
		want RenewOutcome
	}{
		{"known", RenewRequest{App: "ORDERS", ID: "o-1"}, RenewOK},
		{"unknown id", RenewRequest{App: "ORDERS", ID: "nope"}, RenewNotFound},
		{"unknown app", RenewRequest{App: "NOPE", ID: "o-1"}, RenewNotFound},
		{"newer client data", RenewRequest{App: "ORDERS", ID: "o-1", LastDirtyTimestamp: ptr(inst.LastDirtyTimestamp + 1)}, RenewNotFound},
		{"older replica data", RenewRequest{App: "ORDERS", ID: "o-1", LastDirtyTimestamp: ptr(inst.LastDirtyTimestamp - 1), Replicated: true}, RenewConflict},
	} {
		res, err := r.Renew(ctx, tc.req)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, res.Outcome, tc.name)
	}

	ok, err = r.SetStatus(ctx, "ORDERS", "o-1", StatusOutOfService, nil, false)
	require.NoError(t, err)
	assert.True(t, ok)
	inst, _, _, _ = r.Get(ctx, "ORDERS", "o-1")
	assert.Equal(t, StatusOutOfService, inst.Status)
	ok, err = r.SetStatus(ctx, "NOPE", "o-1", StatusOutOfService, nil, false)
	require.NoError(t, err)
	assert.False(t, ok)

	ok, err = r.DeleteOverride(ctx, "ORDERS", "o-1", StatusUp, nil, false)
	require.NoError(t, err)
	assert.True(t, ok)
	inst, _, _, _ = r.Get(ctx, "ORDERS", "o-1")
	assert.Equal(t, StatusUp, inst.Status)
	assert.Equal(t, StatusUnknown, inst.OverriddenStatus)

	ok, err = r.UpdateMetadata(ctx, "ORDERS", "o-1", map[string]string{"k": "v"}, false)
	require.NoError(t, err)
	assert.True(t, ok)
	inst, _, _, _ = r.Get(ctx, "ORDERS", "o-1")
	assert.Equal(t, "v", inst.Metadata["k"])
	ok, err = r.UpdateMetadata(ctx, "ORDERS", "nope", map[string]string{"k": "v"}, false)
	require.NoError(t, err)
	assert.False(t, ok)

	recs, err := r.Records(ctx, "ORDERS")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "o-1", recs[0].ID)
	recs, err = r.Records(ctx, "NOPE")
	require.NoError(t, err)
	assert.Empty(t, recs)

	ok, err = r.Cancel(ctx, "ORDERS", "o-1", false)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 0, r.Count())
	ok, err = r.Cancel(ctx, "ORDERS", "o-1", false)
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, ok, err = r.Get(ctx, "ORDERS", "o-1")
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, ok, err = r.Get(ctx, "NOPE", "o-1")
	require.NoError(t, err)
	assert.False(t, ok)

	// A peer's records: the newer one applies, the stale copy does not.
	peerRec := Record{App: "PAYMENTS", ID: "p-1", Version: Version{Clock: r.HLC().Now(), Node: "node-b"},
		Instance: regInstance("PAYMENTS", "p-1", 30)}
	stale := peerRec
	stale.Version.Clock--
	n, err := r.ApplyRecords(ctx, "PAYMENTS", []Record{peerRec, stale}, false)
	require.NoError(t, err)
	assert.Equal(t, ApplyStats{Applied: 1}, n)
	assert.Equal(t, 1, r.Count())
	_, _, ok, _ = r.Get(ctx, "PAYMENTS", "p-1")
	assert.True(t, ok)

	var actions []string
	for _, ev := range sink.all() {
		actions = append(actions, fmt.Sprintf("%s/%s %s %s", ev.Instance.App, ev.Instance.ID(), ev.Action, ev.Cause))
	}
	assert.Equal(t, []string{
		"ORDERS/o-1 ADDED register",
		"ORDERS/o-1 MODIFIED status-update",
		"ORDERS/o-1 MODIFIED delete-override",
		"ORDERS/o-1 ADDED metadata",
		"ORDERS/o-1 DELETED cancel",
		"PAYMENTS/p-1 ADDED register",
	}, actions)
}

// Sinks run in the application actor before the command is answered, so a
// caller that got its answer always finds the event delivered.
func TestRegistrySinkSeesEventsBeforeReturn(t *testing.T) {
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) { c.Sinks = []Sink{sink} })
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		in := regInstance(fmt.Sprintf("APP%d", i%7), fmt.Sprintf("i-%d", i), 30)
		require.NoError(t, r.Register(ctx, in, false))
		assert.True(t, sink.has(in.Key(), ActionAdded), "ADDED for %v missing after Register returned", in.Key())
		assert.Equal(t, i+1, r.Count())
	}
	for i := 0; i < 100; i += 3 {
		k := Key{App: fmt.Sprintf("APP%d", i%7), ID: fmt.Sprintf("i-%d", i)}
		ok, err := r.Cancel(ctx, k.App, k.ID, false)
		require.NoError(t, err)
		require.True(t, ok)
		assert.True(t, sink.has(k, ActionDeleted), "DELETED for %v missing after Cancel returned", k)
		ok, err = r.SetStatus(ctx, k.App, fmt.Sprintf("i-%d", i+1), StatusDown, nil, false)
		require.NoError(t, err)
		if ok {
			assert.True(t, sink.has(Key{App: k.App, ID: fmt.Sprintf("i-%d", i+1)}, ActionModified))
		}
	}
}

func TestRegistryConcurrentRegistrations(t *testing.T) {
	const (
		apps       = 50
		goroutines = 8
		perWorker  = 250
	)
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) { c.Sinks = []Sink{sink} })
	ctx := context.Background()

	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				n := g*perWorker + i
				in := regInstance(fmt.Sprintf("APP-%02d", n%apps), fmt.Sprintf("i-%d", n), 30)
				if !assert.NoError(t, r.Register(ctx, in, false)) {
					return
				}
				if i%5 == 0 { // re-registration must not count twice
					assert.NoError(t, r.Register(ctx, in, false))
				}
			}
		}()
	}
	wg.Wait()

	const total = goroutines * perWorker
	assert.Equal(t, total, r.Count())
	assert.Equal(t, total, sink.count(func(ev Event) bool { return ev.NewLease }))
	sum := 0
	for a := 0; a < apps; a++ {
		recs, err := r.Records(ctx, fmt.Sprintf("APP-%02d", a))
		require.NoError(t, err)
		assert.Len(t, recs, total/apps)
		sum += len(recs)
	}
	assert.Equal(t, total, sum)
	assert.Len(t, appActorIDs(r), apps)
	// Self-preservation learns every new lease (asynchronously).
	require.Eventually(t, func() bool { return r.SelfPreservation().Expected == total }, waitFor, tick)
}

// emptyingConfig makes emptied applications stop quickly: tombstones live
// 1 ms and are collected by a sweep every 5 ms.
func emptyingConfig(c *Config) {
	c.SelfPreservation = false
	c.EvictionInterval = 5 * time.Millisecond
	c.RenewalWindow = 5 * time.Millisecond
	c.TombstoneTTL = time.Millisecond
}

// emptyingLease is the lease (s) of emptyingConfig's instances: a
// tombstone is kept for its lease plus a renewal window and an eviction
// interval, so the shortest lease there is.
const emptyingLease = 1

func TestRegistryStopsEmptyAppActor(t *testing.T) {
	r := newTestRegistry(t, emptyingConfig)
	ctx := context.Background()

	require.NoError(t, r.Register(ctx, regInstance("SHORT", "s-1", emptyingLease), false))
	assert.Equal(t, []string{"registry/app-SHORT"}, appActorIDs(r))

	ok, err := r.Cancel(ctx, "SHORT", "s-1", false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool { return !appActorAlive(r, "SHORT") }, waitFor, tick,
		"the application actor should stop once its tombstone is collected")
	assert.Empty(t, appActorIDs(r))

	// The application comes back with a fresh actor.
	require.NoError(t, r.Register(ctx, regInstance("SHORT", "s-1", emptyingLease), false))
	_, _, ok, err = r.Get(ctx, "SHORT", "s-1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 1, r.Count())
	assert.Equal(t, []string{"registry/app-SHORT"}, appActorIDs(r))
}

// Registering and cancelling the same application over and over, while other
// callers renew and read it, loses no command even though its actor is
// stopped and respawned many times.
func TestRegistryNoLostCommandsAcrossAppRestarts(t *testing.T) {
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) {
		emptyingConfig(c)
		c.Sinks = []Sink{sink}
	})
	ctx := context.Background()
	const rounds = 200

	var (
		done     = make(chan struct{})
		wg       sync.WaitGroup
		renewOK  atomic.Int64
		renew404 atomic.Int64
	)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				res, err := r.Renew(ctx, RenewRequest{App: "FLAP", ID: "f-1"})
				if !assert.NoError(t, err) {
					return
				}
				switch res.Outcome {
				case RenewOK:
					renewOK.Add(1)
				case RenewNotFound:
					renew404.Add(1)
				default:
					assert.Fail(t, "unexpected renew outcome", "%v", res.Outcome)
				}
				_, _, _, err = r.Get(ctx, "FLAP", "f-1")
				assert.NoError(t, err)
			}
		}()
	}

	restarts := 0 // times the named actor was seen alive and then stopped
	for i := 0; i < rounds; i++ {
		require.NoError(t, r.Register(ctx, regInstance("FLAP", "f-1", emptyingLease), false))
		ok, err := r.Cancel(ctx, "FLAP", "f-1", false)
		require.NoError(t, err)
		require.True(t, ok, "round %d: the registration must be there to cancel", i)
		if i%20 == 19 {
			// Let the actor stop before the next round registers again.
			if appActorAlive(r, "FLAP") {
				restarts++
			}
			require.Eventually(t, func() bool { return !appActorAlive(r, "FLAP") }, waitFor, tick)
		}
	}
	close(done)
	wg.Wait()
	t.Logf("renewals: %d ok, %d not found; actor seen stopping %d times", renewOK.Load(), renew404.Load(), restarts)
	assert.Positive(t, restarts, "the test should exercise actor restarts")

	assert.Equal(t, 0, r.Count())
	assert.Equal(t, rounds, sink.count(func(ev Event) bool { return ev.NewLease }))
	assert.Equal(t, rounds, sink.count(func(ev Event) bool { return ev.Action == ActionDeleted }))
	require.Eventually(t, func() bool { return len(appActorIDs(r)) == 0 }, waitFor, 100*time.Millisecond,
		"no application actor is left once the last tombstone is collected")

	require.NoError(t, r.Register(ctx, regInstance("FLAP", "f-1", emptyingLease), false))
	_, _, ok, err := r.Get(ctx, "FLAP", "f-1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 1, r.Count())
	require.Eventually(t, func() bool { return r.SelfPreservation().Expected == 1 }, waitFor, tick)
}

// renewLoop renews keys every interval until the returned stop function is
// called (stop waits for the loop to end).
func renewLoop(t *testing.T, r *Registry, keys []Key, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			for _, k := range keys {
				_, err := r.Renew(ctx, RenewRequest{App: k.App, ID: k.ID})
				if ctx.Err() != nil {
					return
				}
				assert.NoError(t, err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// exists reports whether k is registered.
func exists(t *testing.T, r *Registry, k Key) bool {
	_, _, ok, err := r.Get(context.Background(), k.App, k.ID)
	assert.NoError(t, err)
	return ok
}

// shortTimers shrinks eviction and the renewal window to 100 ms and makes
// the renewal threshold count renewals per 100 ms window (one per instance).
func shortTimers(c *Config) {
	c.EvictionInterval = 100 * time.Millisecond
	c.RenewalWindow = 100 * time.Millisecond
	c.ExpectedClientRenewalInterval = 100 * time.Millisecond
}

// With self-preservation off, a never-renewed 1 s lease is evicted while a
// sibling renewed every 200 ms survives.
func TestRegistryEvictsUnrenewed(t *testing.T) {
	t.Parallel()
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) {
		shortTimers(c)
		c.SelfPreservation = false
		c.Sinks = []Sink{sink}
	})
	ctx := context.Background()
	stale, live := Key{App: "SVC", ID: "stale"}, Key{App: "SVC", ID: "live"}
	require.NoError(t, r.Register(ctx, regInstance(stale.App, stale.ID, 1), false))
	require.NoError(t, r.Register(ctx, regInstance(live.App, live.ID, 1), false))
	stop := renewLoop(t, r, []Key{live}, 200*time.Millisecond)

	require.Eventually(t, func() bool { return !exists(t, r, stale) }, waitFor, 10*time.Millisecond)
	assert.True(t, exists(t, r, live))
	assert.True(t, r.SelfPreservation().ExpirationEnabled)
	evictions := sink.all()
	require.Len(t, evictions, 3, "two registrations and one eviction")
	assert.Equal(t, stale, evictions[2].Key())
	assert.Equal(t, CauseEvict, evictions[2].Cause)
	assert.False(t, evictions[2].Replicated)
	assert.NotZero(t, evictions[2].Instance.LeaseInfo.EvictionTimestamp)

	// The renewed sibling outlives several more lease durations' worth of
	// sweeps, and is evicted once its renewals stop.
	assert.Never(t, func() bool { return !exists(t, r, live) }, 1500*time.Millisecond, 50*time.Millisecond)
	stop()
	require.Eventually(t, func() bool { return !exists(t, r, live) }, waitFor, 10*time.Millisecond)
	assert.Equal(t, 0, r.Count())
}

// With self-preservation on, a collapse of renewals blocks eviction of
// expired leases, and eviction resumes once renewals are above the threshold.
func TestRegistrySelfPreservationBlocksEviction(t *testing.T) {
	t.Parallel()
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) {
		shortTimers(c)
		c.Sinks = []Sink{sink}
	})
	ctx := context.Background()

	const n = 20
	var keys []Key
	for i := 0; i < n; i++ {
		in := regInstance(fmt.Sprintf("SP%d", i%4), fmt.Sprintf("sp-%d", i), 1)
		require.NoError(t, r.Register(ctx, in, false))
		keys = append(keys, in.Key())
	}
	// Threshold: int(20 × (100ms/100ms) × 0.85) = 17 renewals per window.
	stop := renewLoop(t, r, keys, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		st := r.SelfPreservation()
		return st.Expected == n && st.Threshold == 17 && st.ExpirationEnabled
	}, waitFor, tick, "healthy renewals enable expiration")

	// Collapse: nobody renews.
	stop()
	require.Eventually(t, func() bool { return !r.SelfPreservation().ExpirationEnabled }, waitFor, tick)
	require.Eventually(t, func() bool {
		for _, k := range keys {
			if _, expired, ok, err := r.Get(ctx, k.App, k.ID); err != nil || !ok || !expired {
				return false
			}
		}
		return true
	}, waitFor, 20*time.Millisecond, "every lease should expire")
	// Several sweeps run while every lease is expired; none evicts.
	assert.Never(t, func() bool { return r.Count() < n }, 600*time.Millisecond, 20*time.Millisecond)
	st := r.SelfPreservation()
	assert.False(t, st.ExpirationEnabled)
	assert.Equal(t, n, st.Expected)
	assert.LessOrEqual(t, st.RenewsLastWindow, int64(st.Threshold))
	assert.Zero(t, sink.count(isEviction))

	// Recovery: 15 of the 20 renew again, well above the threshold; the
	// other 5 are evicted (at most evictionLimit per sweep).
	survivors, dead := keys[:15], keys[15:]
	renewLoop(t, r, survivors, 5*time.Millisecond)
	require.Eventually(t, func() bool { return r.Count() == len(survivors) }, waitFor, 10*time.Millisecond)
	for _, k := range survivors {
		assert.True(t, exists(t, r, k), "%v should survive", k)
	}
	var evicted []Key
	for _, ev := range sink.all() {
		if isEviction(ev) {
			evicted = append(evicted, ev.Key())
		}
	}
	assert.ElementsMatch(t, dead, evicted)
	assert.True(t, r.SelfPreservation().ExpirationEnabled)
	require.Eventually(t, func() bool { return r.SelfPreservation().Expected == len(survivors) }, waitFor, tick)
}

// oneSweepPolicy is an Ownership that owns everything but, once armed,
// lets exactly one whole eviction sweep through. A sweep asks once per
// application, so a sweep ends when an application is asked again; arming
// takes effect at the next sweep's start, never in the middle of one.
type oneSweepPolicy struct {
	clock *ManualClock
	owned int // what OwnedCount reports
	mu    sync.Mutex
	last  time.Time
	seen  map[string]bool // applications asked in the current sweep
	armed bool            // arm was called
	state int             // 0 waiting, 1 this sweep is allowed, 2 done
}

func (p *oneSweepPolicy) OwnedSince(app string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = p.clock.Now()
	if p.seen == nil || p.seen[app] { // a new sweep begins
		p.seen = map[string]bool{}
		switch {
		case p.state == 1:
			p.state = 2
		case p.state == 0 && p.armed:
			p.state = 1
		}
	}
	p.seen[app] = true
	return time.Time{}, p.state == 1
}

func (p *oneSweepPolicy) Owns(string) bool { return true }

func (p *oneSweepPolicy) OwnedCount() int { return p.owned }

// sweptAt reports whether a sweep at or after t has asked the policy.
func (p *oneSweepPolicy) sweptAt(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.last.Before(t)
}

func (p *oneSweepPolicy) arm() {
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
}

// Spec §4.10: one sweep evicts at most evictionLimit(size) leases, even when
// every lease has expired (self-preservation off).
func TestRegistryEvictionCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		apps int
	}{
		{"one app", 1},
		{"twenty apps", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := NewManualClock(testEpoch)
			const n = 20
			policy := &oneSweepPolicy{clock: clock, owned: n}
			sink := &recordingSink{}
			r := newTestRegistry(t, func(c *Config) {
				c.Clock = clock
				c.SelfPreservation = false
				c.EvictionInterval = 20 * time.Millisecond
				c.Ownership = policy
				c.Sinks = []Sink{sink}
			})
			ctx := context.Background()
			for i := 0; i < n; i++ {
				require.NoError(t, r.Register(ctx, regInstance(fmt.Sprintf("CAP%d", i%tc.apps), fmt.Sprintf("c-%d", i), 1), false))
			}
			clock.Advance(2 * time.Second) // every lease has expired
			// The evictor reads a clock jump as a late timer and adds it
			// as slack (Eureka's compensation); let one sweep absorb it.
			expiredAt := clock.Now()
			require.Eventually(t, func() bool { return policy.sweptAt(expiredAt) }, waitFor, tick)
			policy.arm()

			limit := evictionLimit(n, 0.85)
			require.Equal(t, 3, limit)
			require.Eventually(t, func() bool { return sink.count(isEviction) == limit }, waitFor, tick)
			assert.Never(t, func() bool { return sink.count(isEviction) > limit }, 300*time.Millisecond, 10*time.Millisecond)
			assert.Equal(t, n-limit, r.Count())
		})
	}
}

func TestRegistryRenewRemote(t *testing.T) {
	clock := NewManualClock(testEpoch)
	r := newTestRegistry(t, func(c *Config) { c.Clock = clock })
	ctx := context.Background()
	require.NoError(t, r.Register(ctx, regInstance("REM", "r-1", 30), false))
	require.NoError(t, r.Register(ctx, regInstance("REM", "r-2", 30), false))

	clock.Advance(10 * time.Second)
	r.RenewRemote("REM", []string{"r-1", "nope"})
	r.RenewRemote("UNKNOWN", []string{"x"})
	want := ms(clock.Now())
	require.Eventually(t, func() bool {
		inst, _, ok, err := r.Get(ctx, "REM", "r-1")
		return err == nil && ok && inst.LeaseInfo.LastRenewalTimestamp == want
	}, waitFor, tick)
	inst, _, _, err := r.Get(ctx, "REM", "r-2")
	require.NoError(t, err)
	assert.Equal(t, ms(testEpoch), inst.LeaseInfo.LastRenewalTimestamp, "not renewed")
}

func TestRegistrySelfPreservationTracksLeases(t *testing.T) {
	r := newTestRegistry(t, func(c *Config) { c.ExpectedInitialRenewers = 1 })
	ctx := context.Background()
	st := r.SelfPreservation()
	assert.True(t, st.Enabled)
	assert.Equal(t, 1, st.Expected)
	assert.Equal(t, 1, st.Threshold)
	assert.False(t, st.ExpirationEnabled, "no renewals counted yet")

	for i := 0; i < 3; i++ {
		require.NoError(t, r.Register(ctx, regInstance("TRK", fmt.Sprintf("t-%d", i), 30), false))
	}
	require.NoError(t, r.Register(ctx, regInstance("TRK", "t-0", 30), false)) // not a new lease
	require.Eventually(t, func() bool { return r.SelfPreservation().Expected == 4 }, waitFor, tick)
	assert.Equal(t, 6, r.SelfPreservation().Threshold, "int(4 × 2 × 0.85)")

	ok, err := r.Cancel(ctx, "TRK", "t-1", false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool { return r.SelfPreservation().Expected == 3 }, waitFor, tick)
}

// staticOwnership owns a fixed set of applications.
type staticOwnership struct {
	owned map[string]bool
	count atomic.Int64 // what OwnedCount reports
}

func (o *staticOwnership) Owns(app string) bool { return o.owned[app] }
func (o *staticOwnership) OwnedSince(app string) (time.Time, bool) {
	return time.Time{}, o.owned[app]
}
func (o *staticOwnership) OwnedCount() int { return int(o.count.Load()) }

// With Ownership, only owned applications report expiry; self-preservation
// still expects and counts the whole registry (every node holds it all, and
// each client renewal is counted where it arrives), and every successful
// renewal, a Eureka peer's relayed one included, is reported through OnRenew
// so that it reaches the owner.
func TestRegistryOwnership(t *testing.T) {
	clock := NewManualClock(testEpoch)
	own := &staticOwnership{owned: map[string]bool{"MINE": true}}
	var (
		mu      sync.Mutex
		renewed []Key
	)
	r := newTestRegistry(t, func(c *Config) {
		c.Clock = clock
		c.Ownership = own
		c.OnRenew = func(app, id string) {
			mu.Lock()
			renewed = append(renewed, Key{App: app, ID: id})
			mu.Unlock()
		}
	})
	ctx := context.Background()
	require.NoError(t, r.Register(ctx, regInstance("MINE", "m-1", 30), false))
	require.NoError(t, r.Register(ctx, regInstance("MINE", "m-2", 30), false))
	require.NoError(t, r.Register(ctx, regInstance("THEIRS", "t-1", 30), false))
	assert.Equal(t, 3, r.Count())
	require.Eventually(t, func() bool { return r.SelfPreservation().Expected == 3 }, waitFor, tick,
		"every new lease raises the expectation, owned or not")

	for _, req := range []RenewRequest{
		{App: "MINE", ID: "m-1"},
		{App: "MINE", ID: "m-2", Replicated: true},
		{App: "THEIRS", ID: "t-1"},
		{App: "MINE", ID: "nope"},
	} {
		_, err := r.Renew(ctx, req)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(3+3), r.renewals.Load(), "three registrations and three successful renewals")
	r.RenewRemote("MINE", []string{"m-1"})
	_, _, _, err := r.Get(ctx, "MINE", "m-1") // the forwarded renewal is processed before this
	require.NoError(t, err)
	assert.Equal(t, int64(6), r.renewals.Load(), "a forwarded renewal was counted by the member it reached")
	mu.Lock()
	assert.Equal(t, []Key{{App: "MINE", ID: "m-1"}, {App: "MINE", ID: "m-2"}, {App: "THEIRS", ID: "t-1"}}, renewed,
		"OnRenew sees every successful renewal, a Eureka peer's included")
	mu.Unlock()

	clock.Advance(time.Hour)
	_, expired, ok, err := r.Get(ctx, "MINE", "m-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, expired)
	_, expired, ok, err = r.Get(ctx, "THEIRS", "t-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.False(t, expired, "only the owner reports expiry")

	own.count.Store(7)
	r.OwnershipChanged()
	assert.Never(t, func() bool { return r.SelfPreservation().Expected != 3 }, 100*time.Millisecond, tick,
		"an ownership change does not touch the cluster-wide expectation")
}

// Tombstones are forgotten after TombstoneTTL even when this node may not
// evict: for applications another node owns, and while self-preservation
// blocks eviction (in a small registry, possibly forever). Otherwise every
// cancelled id, and the actor of every emptied application, is kept for good.
func TestRegistryCollectsTombstonesWithoutEviction(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		apps   []string
	}{
		{"application not owned", func(c *Config) {
			c.Ownership = &staticOwnership{owned: map[string]bool{"MINE": true}}
		}, []string{"MINE", "THEIRS"}},
		{"self-preservation engaged", func(c *Config) {
			c.SelfPreservation = true // no renewals: expiration stays disabled
		}, []string{"ANY"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, func(c *Config) {
				emptyingConfig(c)
				tc.mutate(c)
			})
			ctx := context.Background()
			for _, app := range tc.apps {
				require.NoError(t, r.Register(ctx, regInstance(app, "x-1", emptyingLease), false))
				ok, err := r.Cancel(ctx, app, "x-1", false)
				require.NoError(t, err)
				require.True(t, ok)
			}
			for _, app := range tc.apps {
				require.Eventually(t, func() bool {
					recs, err := r.Records(ctx, app)
					return err == nil && len(recs) == 0
				}, 5*time.Second, tick, "%s: tombstone should be collected", app)
				require.Eventually(t, func() bool { return !appActorAlive(r, app) }, waitFor, tick, "%s: actor should stop", app)
			}
			if r.cfg.SelfPreservation {
				assert.False(t, r.SelfPreservation().ExpirationEnabled, "eviction stayed blocked throughout")
			}
		})
	}
}

func TestRegistryClose(t *testing.T) {
	r := newTestRegistry(t, nil)
	ctx := context.Background()
	require.NoError(t, r.Register(ctx, regInstance("CL", "c-1", 30), false))
	r.Close()
	r.Close() // idempotent

	assert.ErrorIs(t, r.Register(ctx, regInstance("CL", "c-2", 30), false), ErrClosed)
	_, err := r.Renew(ctx, RenewRequest{App: "CL", ID: "c-1"})
	assert.ErrorIs(t, err, ErrClosed)
	_, _, _, err = r.Get(ctx, "CL", "c-1")
	assert.ErrorIs(t, err, ErrClosed)
	assert.Equal(t, 1, r.Count())
}

// sinkFunc adapts a function to Sink.
type sinkFunc func(ev *Event)

func (f sinkFunc) Apply(ev *Event) { f(ev) }

// A failure inside an application actor answers ErrInternal and leaves the
// actor and its leases in place.
func TestRegistryPanicAnswersErrInternal(t *testing.T) {
	var armed atomic.Bool
	boom := sinkFunc(func(ev *Event) {
		if ev.Instance.App == "BOOM" && armed.CompareAndSwap(true, false) {
			panic("sink failure")
		}
	})
	r := newTestRegistry(t, func(c *Config) { c.Sinks = []Sink{boom} })
	ctx := context.Background()
	require.NoError(t, r.Register(ctx, regInstance("BOOM", "b-1", 30), false))

	armed.Store(true)
	err := r.Register(ctx, regInstance("BOOM", "b-2", 30), false)
	assert.ErrorIs(t, err, ErrInternal)
	assert.Equal(t, 2, r.Count(), "the change was applied before the sink failed")

	for _, id := range []string{"b-1", "b-2"} {
		_, _, ok, err := r.Get(ctx, "BOOM", id)
		require.NoError(t, err)
		assert.True(t, ok, id)
	}
	res, err := r.Renew(ctx, RenewRequest{App: "BOOM", ID: "b-1"})
	require.NoError(t, err)
	assert.Equal(t, RenewOK, res.Outcome)
}

// A command whose application actor is busy times out after RequestTimeout
// (or the caller's earlier deadline) without holding up other applications,
// and the late reply never reaches a later caller.
func TestRegistryRequestTimeout(t *testing.T) {
	gate := make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	var blocked atomic.Bool
	block := sinkFunc(func(ev *Event) {
		if ev.Instance.App == "SLOW" && blocked.CompareAndSwap(false, true) {
			<-gate // the first SLOW event holds SLOW's actor
		}
	})
	r := newTestRegistry(t, func(c *Config) {
		c.RequestTimeout = 50 * time.Millisecond
		c.Sinks = []Sink{block}
	})
	t.Cleanup(open) // before Close, which would wait for the blocked actor
	ctx := context.Background()

	err := r.Register(ctx, regInstance("SLOW", "s-1", 30), false)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "RequestTimeout applies without a deadline")
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = r.Renew(short, RenewRequest{App: "SLOW", ID: "s-1"})
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, r.Register(ctx, regInstance("FAST", "f-1", 30), false), "other applications go on")

	open()
	require.Eventually(t, func() bool {
		_, _, ok, err := r.Get(ctx, "SLOW", "s-1")
		return err == nil && ok
	}, waitFor, tick, "the timed-out registration still completes")
	res, err := r.Renew(ctx, RenewRequest{App: "SLOW", ID: "s-1"})
	require.NoError(t, err)
	assert.Equal(t, RenewOK, res.Outcome)
	for i := 0; i < 50; i++ {
		inst, _, ok, err := r.Get(ctx, "FAST", "f-1")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "FAST", inst.App, "a late reply for another call was delivered here")
	}
}
