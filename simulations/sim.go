package simulations

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/node"
)

// Scenario is one simulation: a story of clients and faults, and the
// invariants that judge it.
type Scenario struct {
	// Name is the scenario's flag value, e.g. "partition-heal".
	Name string
	// Summary says in one sentence what happens.
	Summary string
	// Invariants lists the checkers that judge the run (see Checkers).
	Invariants []string
	// DefaultDuration is the main phase when Config.Duration is zero.
	DefaultDuration time.Duration
	// ShortDuration is the shortest main phase that still exercises every
	// fault of the scenario; the tests use it.
	ShortDuration time.Duration
	// Timers, if set, adjusts the cluster's timers for this scenario; Run
	// applies it to every run (scale-down shortens the recount interval so
	// that a self-release fits in the run). The thresholds stay those of
	// the configuration's timers, so it should only change timers no
	// threshold derives from, or make the thresholds stricter.
	Timers func(t *Timers)
	// ShortTimers, if set, adjusts the timers further for the short runs of
	// the tests and the sabotage harness (long-partition shortens the
	// tombstone TTL, and with it the partition). Same restriction.
	ShortTimers func(t *Timers)
	// Drive runs the scenario's story on s: it starts clients, waits,
	// injects and lifts faults, and calls s.FaultsOver at the end of the
	// faults. The harness then waits for the cluster to settle, stops every
	// client and checks the invariants.
	Drive func(s *Sim) error
}

// Result is the outcome of one scenario run.
type Result struct {
	Scenario string
	Summary  string
	Seed     int64
	Nodes    int
	// Timers and Thresholds are those the run used.
	Timers     Timers
	Thresholds Thresholds
	// Duration is the main phase; Wall the whole run, set-up included.
	Duration, Wall time.Duration
	Timeline       []Event
	Verdicts       []Verdict
	Clients        ClientStats
	// Instances is the number of instance ids used; Samples and Probes
	// count the observations.
	Instances, Samples, Probes int
	// Net is what the nodes sent over the memnet network.
	Net memnet.NetStats
	// Wire is what the nodes' replicators sent (every process, stopped ones
	// included), and Heals the faults lifted (heals, restarts, unstalls,
	// unblocks, clocks set right) that anti-entropy had to repair.
	Wire  cluster.WireStats
	Heals int
	// Silent is what became of the instances of clients that died without
	// cancelling (and did not come back).
	Silent SilentFigures
	// SP is how much self-preservation was engaged.
	SP SPFigures
	// Err is set when the run itself broke (not an invariant).
	Err string
	// Pass reports that the run completed and every verdict passed.
	Pass bool
	// Observations are kept for tests; the report does not print them.
	Observations *Observations `json:"-"`
}

// Sim is a running scenario: the cluster, the clients, the recorder and the
// scenario's random source. Scenario Drive functions use its methods.
type Sim struct {
	cfg  Config
	sc   Scenario
	c    *Cluster
	rec  *Recorder
	http *http.Client
	dur  time.Duration
	ctx  context.Context

	rngMu sync.Mutex
	rng   *rand.Rand

	mu      sync.Mutex
	clients []*Client
	apps    map[string]bool
	seq     map[string]int

	// phases tracks the churn and the end of the faults.
	phases Phases

	stats clientCounters

	// fingerprint, if set, replaces Fingerprint in the probes (join-loaded:
	// a fingerprint of 100k instances is megabytes, and the checkers scan
	// it per instance and probe).
	fingerprint func(*node.Node) string
}

// Run runs sc with cfg and judges it. An error means the run could not be
// carried out (the cluster did not start); invariant failures are in the
// Result.
func Run(ctx context.Context, sc Scenario, cfg Config) (*Result, error) {
	if cfg.Duration == 0 {
		cfg.Duration = sc.DefaultDuration
	}
	if sc.Timers != nil {
		sc.Timers(&cfg.Timers)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	wallStart := time.Now()
	c, err := NewCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	h := fnv.New64a()
	_, _ = h.Write([]byte(sc.Name))
	s := &Sim{
		cfg:  cfg,
		sc:   sc,
		c:    c,
		dur:  cfg.Duration,
		ctx:  ctx,
		rng:  rand.New(rand.NewPCG(uint64(cfg.Seed), h.Sum64())),
		apps: map[string]bool{},
		seq:  map[string]int{},
		http: &http.Client{Transport: &http.Transport{
			MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
		}},
	}
	defer s.http.CloseIdleConnections()
	var progress func(Event)
	if cfg.Progress != nil {
		progress = func(ev Event) { cfg.Progress(sc.Name, ev) }
	}
	s.rec = NewRecorder(time.Now(), c.Names(), progress)
	s.rec.obs.SampleInterval = cfg.Timers.SampleInterval
	s.rec.obs.LeaseDuration = cfg.Timers.LeaseDuration
	s.rec.obs.Timers = cfg.Timers
	s.rec.Event("start", fmt.Sprintf("%d nodes formed a cluster in %v", cfg.Nodes, time.Since(wallStart).Round(time.Millisecond)))

	obsCtx, stopObs := context.WithCancel(ctx)
	var obsWG sync.WaitGroup
	obsWG.Add(2)
	go func() { defer obsWG.Done(); s.sampler(obsCtx) }()
	go func() { defer obsWG.Done(); s.prober(obsCtx) }()

	res := &Result{Scenario: sc.Name, Summary: sc.Summary, Seed: cfg.Seed, Nodes: cfg.Nodes, Duration: cfg.Duration,
		Timers: cfg.Timers, Thresholds: cfg.Thresholds}
	driveErr := sc.Drive(s)
	s.FaultsOver()
	if driveErr == nil {
		s.settle(ctx)
	}
	quietEnd := time.Now()
	s.rec.Mark(func(o *Observations) { o.QuietEnd = quietEnd })
	// A probe that started before the end of the quiet phase may still be
	// reading the nodes; the teardown's cancels must not land in it (the
	// convergence checker judges the last probe before QuietEnd). The
	// prober is sequential: once a probe that started after QuietEnd is in,
	// every earlier one is complete.
	for limit := time.Now().Add(5 * time.Second); time.Now().Before(limit); {
		if p := s.rec.LastProbe(); p != nil && p.At.After(quietEnd) {
			break
		}
		if !sleepCtx(ctx, 10*time.Millisecond) {
			break
		}
	}
	s.teardown(ctx)
	s.rec.Mark(func(o *Observations) { o.End = time.Now() })
	stopObs()
	obsWG.Wait()

	obs := s.rec.Observations()
	res.Observations = obs
	res.Timeline = obs.Timeline
	res.Clients = s.stats.snapshot()
	res.Instances = len(obs.Instances)
	res.Samples = len(obs.Samples)
	res.Probes = len(obs.Probes)
	res.Net = c.Net().TotalStats()
	res.Wire = c.WireStats()
	for _, ev := range obs.Timeline {
		switch ev.Kind {
		case "heal", "restart", "unstall", "unblock":
			res.Heals++
		}
	}
	res.Silent = silentFigures(obs)
	res.SP = spFigures(obs)
	res.Pass = driveErr == nil
	if driveErr != nil {
		res.Err = driveErr.Error()
	}
	for _, name := range sc.Invariants {
		check, ok := Checkers[name]
		if !ok {
			return nil, fmt.Errorf("simulations: scenario %s: unknown invariant %q", sc.Name, name)
		}
		v := check(obs, cfg.Thresholds)
		res.Verdicts = append(res.Verdicts, v)
		res.Pass = res.Pass && v.Pass
	}
	res.Wall = time.Since(wallStart)
	return res, nil
}

// settle waits, after the faults, until every node holds the same registry
// and sees every other, or until the larger bound (plus a second) passed;
// then it keeps observing for SettleTail so that late misses show.
func (s *Sim) settle(ctx context.Context) {
	th := s.cfg.Thresholds
	limit := time.Now().Add(max(th.Convergence, th.Membership) + time.Second)
	for time.Now().Before(limit) {
		if p := s.rec.LastProbe(); p != nil && p.At.After(s.settledAt()) && p.Converged() && p.MembersComplete() {
			break
		}
		if !sleepCtx(ctx, s.cfg.Timers.ProbeInterval) {
			return
		}
	}
	sleepCtx(ctx, s.cfg.SettleTail)
}

func (s *Sim) settledAt() time.Time {
	var t time.Time
	s.rec.Mark(func(o *Observations) { t = o.settled() })
	return t
}

// teardown stops every client gracefully (each cancels its instance) and
// waits until no node holds a cancelled instance any more and the nodes
// agree (or the convergence bound passed), then for a sampling round that
// started after that, so that every node's last sample shows where the
// cancels went.
func (s *Sim) teardown(ctx context.Context) {
	s.mu.Lock()
	clients := append([]*Client(nil), s.clients...)
	s.mu.Unlock()
	var wg sync.WaitGroup
	var stopped []*Client
	for _, cl := range clients {
		if cl.running() {
			stopped = append(stopped, cl)
			wg.Add(1)
			go func() { defer wg.Done(); cl.stop(true) }()
		}
	}
	wg.Wait()
	s.rec.Event("teardown", fmt.Sprintf("%d clients cancelled", len(stopped)))
	since := time.Now()
	limit := since.Add(s.cfg.Thresholds.Convergence)
	keys := instanceKeys(stopped)
	for time.Now().Before(limit) {
		if p := s.rec.LastProbe(); p != nil && p.At.After(since) && p.Converged() && !p.HoldsAny(keys) {
			break
		}
		if !sleepCtx(ctx, s.cfg.Timers.ProbeInterval) {
			return
		}
	}
	settled := time.Now()
	for time.Now().Before(limit.Add(time.Second)) && !s.rec.SampledSince(settled) {
		if !sleepCtx(ctx, s.cfg.Timers.ProbeInterval) {
			return
		}
	}
}

// ---- helpers for Drive -------------------------------------------------------

// Cluster returns the simulated cluster.
func (s *Sim) Cluster() *Cluster { return s.c }

// Duration returns the main phase's length.
func (s *Sim) Duration() time.Duration { return s.dur }

// Timers returns the cluster's timers.
func (s *Sim) Timers() Timers { return s.cfg.Timers }

// Event adds an entry to the timeline.
func (s *Sim) Event(kind, format string, args ...any) {
	s.rec.Event(kind, fmt.Sprintf(format, args...))
}

// Sleep waits d; it returns an error once the run's context has ended.
func (s *Sim) Sleep(d time.Duration) error {
	if !sleepCtx(s.ctx, d) {
		return errStopped
	}
	return nil
}

// IntN returns a seeded random int in [0, n).
func (s *Sim) IntN(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

// Float returns a seeded random float in [0, 1).
func (s *Sim) Float() float64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64()
}

// Between returns a seeded random duration in [lo, hi].
func (s *Sim) Between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// Shuffled returns a seeded permutation of names.
func (s *Sim) Shuffled(names []string) []string {
	out := append([]string(nil), names...)
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	s.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// NewClient creates and starts a client of app living next to node loc.
// Its node list is loc first, then the other nodes in a seeded order.
func (s *Sim) NewClient(app, loc string) *Client { return s.newClientWithLease(app, loc, 0) }

// newClientWithLease is NewClient for a client that asks for a lease of
// secs seconds (0: the timers' lease).
func (s *Sim) newClientWithLease(app, loc string, secs int) *Client {
	app = strings.ToUpper(app)
	var others []string
	for _, n := range s.c.Names() {
		if n != loc {
			others = append(others, n)
		}
	}
	s.mu.Lock()
	s.seq[app]++
	id := fmt.Sprintf("%s-%03d", strings.ToLower(app), s.seq[app])
	s.apps[app] = true
	s.mu.Unlock()
	cl := &Client{
		sim:       s,
		App:       app,
		ID:        id,
		Location:  loc,
		leaseSecs: secs,
		order:     append([]string{loc}, s.Shuffled(others)...),
		phase:     s.Between(0, s.cfg.Timers.RenewInterval),
	}
	s.mu.Lock()
	s.clients = append(s.clients, cl)
	s.mu.Unlock()
	cl.start()
	return cl
}

// NewClients starts perNode clients next to every node, their apps drawn
// from apps round-robin in a seeded order.
func (s *Sim) NewClients(perNode int, apps []string) []*Client {
	var out []*Client
	names := s.c.Names()
	k := s.IntN(len(apps))
	for i := 0; i < perNode; i++ {
		for _, loc := range s.Shuffled(names) {
			out = append(out, s.NewClient(apps[k%len(apps)], loc))
			k++
		}
	}
	return out
}

// WaitRegistered waits until every client in cs has registered. The first
// time it succeeds marks the end of the warm-up (Observations.SteadyAt).
func (s *Sim) WaitRegistered(cs []*Client, within time.Duration) error {
	limit := time.Now().Add(within)
	ids := make([]string, len(cs))
	for i, cl := range cs {
		ids[i] = cl.ID
	}
	for {
		if s.rec.AllAcked(ids) {
			now := time.Now()
			s.rec.Mark(func(o *Observations) {
				if o.SteadyAt.IsZero() {
					o.SteadyAt = now
				}
			})
			return nil
		}
		if time.Now().After(limit) {
			return fmt.Errorf("simulations: clients not registered within %v", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ChurnSpec describes short-lived clients coming and going.
type ChurnSpec struct {
	// Every is the mean time between two new clients (drawn in
	// [Every/2, 3·Every/2]).
	Every time.Duration
	// MinLife and MaxLife bound a client's life.
	MinLife, MaxLife time.Duration
	// Silent is the share of clients that die without cancelling.
	Silent float64
	// Apps are the applications the clients belong to.
	Apps []string
	// Locations are the nodes the clients live next to; nil means all.
	Locations []string
}

// StartChurn starts clients as spec says until FaultsOver. Clients alive
// then keep running until the teardown.
func (s *Sim) StartChurn(spec ChurnSpec) {
	if spec.Locations == nil {
		spec.Locations = s.c.Names()
	}
	s.Event("churn", "a client every ~%v, living %v–%v, %.0f%% die silently", spec.Every, spec.MinLife, spec.MaxLife, spec.Silent*100)
	s.phases.Churn(func() time.Duration { return s.Between(spec.Every/2, spec.Every*3/2) }, func() (time.Duration, func()) {
		app := spec.Apps[s.IntN(len(spec.Apps))]
		loc := spec.Locations[s.IntN(len(spec.Locations))]
		life := s.Between(spec.MinLife, spec.MaxLife)
		silent := s.Float() < spec.Silent
		cl := s.NewClient(app, loc)
		return life, func() { cl.stop(!silent) }
	})
}

// StopClients stops cs: gracefully (they cancel) or silently (a crash).
func (s *Sim) StopClients(cs []*Client, graceful bool) {
	var wg sync.WaitGroup
	for _, cl := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); cl.stop(graceful) }()
	}
	wg.Wait()
}

// Partition cuts the cluster into groups.
func (s *Sim) Partition(groups ...[]string) {
	s.fault()
	s.c.Partition(groups...)
	var parts []string
	for _, g := range groups {
		parts = append(parts, "{"+strings.Join(g, ",")+"}")
	}
	s.Event("partition", "%s", strings.Join(parts, " | "))
}

// Heal removes every partition.
func (s *Sim) Heal() {
	s.c.Heal()
	s.lifted()
	s.Event("heal", "all links restored")
}

// Crash crashes the node name.
func (s *Sim) Crash(name, why string) error {
	s.fault()
	at := time.Now()
	if err := s.c.Crash(name); err != nil {
		return err
	}
	s.rec.Crashed(name, at)
	s.Event("crash", "%s %s", name, why)
	return nil
}

// Restart starts a fresh process for the crashed node name and waits until
// it is ready, or ReadyTimeout plus five seconds. A node that does not
// become ready is a finding, not a broken run: the timeline says so, the
// scenario goes on, and the convergence invariant (which wants every node
// ready) judges it.
func (s *Sim) Restart(ctx context.Context, name string) error {
	if err := s.c.Restart(ctx, name); err != nil {
		return err
	}
	s.lifted()
	s.Event("restart", "%s restarted (fresh process, same address)", name)
	start := time.Now()
	nd := s.c.Node(name)
	for nd != nil && !nd.Ready() {
		if waited := time.Since(start); waited > s.cfg.Timers.ReadyTimeout+5*time.Second {
			s.Event("not-ready", "%s still not ready %v after its restart, holding %d instances",
				name, waited.Round(time.Millisecond), nd.View().Snapshot().Count())
			return nil
		}
		if err := s.Sleep(10 * time.Millisecond); err != nil {
			return err
		}
	}
	if nd != nil {
		s.Event("ready", "%s ready %v after its restart, holding %d instances", name,
			time.Since(start).Round(time.Millisecond), nd.View().Snapshot().Count())
	}
	return nil
}

// Stall stalls the network input of the node name (see Cluster.Stall).
func (s *Sim) Stall(name string) error {
	if err := s.c.Stall(name); err != nil {
		return err
	}
	s.fault()
	s.Event("stall", "%s stalls: streams to it are accepted but not read; it gossips and serves HTTP", name)
	return nil
}

// Unstall lets the node name read its network input again.
func (s *Sim) Unstall(name string) error {
	if err := s.c.Unstall(name); err != nil {
		return err
	}
	s.lifted()
	s.Event("unstall", "%s reads its streams again", name)
	return nil
}

// SetLoss drops node-to-node packets with probability p.
func (s *Sim) SetLoss(p float64) {
	if p > 0 {
		s.fault()
	} else {
		s.lifted()
	}
	s.c.SetLoss(p)
	s.Event("loss", "packet loss %.0f%%", p*100)
}

// SetDelay delays node-to-node packets by [lo, hi].
func (s *Sim) SetDelay(lo, hi time.Duration) {
	if hi > 0 {
		s.fault()
	} else {
		s.lifted()
	}
	s.c.SetDelay(lo, hi)
	s.Event("delay", "packet delay %v–%v", lo, hi)
}

// CrashClients makes cs die silently and marks the mass failure.
func (s *Sim) CrashClients(cs []*Client) {
	s.StopClients(cs, false)
	ids := make([]string, 0, len(cs))
	for _, cl := range cs {
		ids = append(ids, cl.ID)
	}
	sort.Strings(ids)
	s.rec.Mark(func(o *Observations) {
		o.ClientsCrashed = time.Now()
		o.CrashedIDs = ids
	})
	s.Event("clients-crash", "%d clients died silently", len(cs))
}

// KillClients makes cs die silently for good (a scale-down that went
// wrong, not a blip) and marks the deaths like CrashClients, without a
// recovery.
func (s *Sim) KillClients(cs []*Client) {
	s.StopClients(cs, false)
	ids := make([]string, 0, len(cs))
	for _, cl := range cs {
		ids = append(ids, cl.ID)
	}
	sort.Strings(ids)
	s.rec.Mark(func(o *Observations) {
		o.ClientsCrashed = time.Now()
		o.CrashedIDs = ids
	})
	s.Event("clients-die", "%d clients died silently for good: %s", len(cs), strings.Join(ids, ", "))
}

// RecoverClients restarts cs with their instance ids and marks the
// recovery.
func (s *Sim) RecoverClients(cs []*Client) {
	s.rec.Mark(func(o *Observations) { o.ClientsRecovered = time.Now() })
	for _, cl := range cs {
		cl.start()
	}
	s.Event("clients-recover", "%d clients restarted with their instance ids", len(cs))
}

// fault notes that the scenario injected a fault.
func (s *Sim) fault() { s.phases.Fault() }

// lifted notes that a fault was just lifted.
func (s *Sim) lifted() { s.phases.Lifted() }

// FaultsOver marks the end of the churn and of the faults (which end, for
// the checkers, when the last one was lifted): from now on the cluster
// should settle. It is idempotent; the harness calls it after Drive.
func (s *Sim) FaultsOver() {
	mark := s.phases.FaultsOver()
	if mark == nil {
		return
	}
	s.rec.Mark(mark)
	s.Event("faults-end", "faults lifted and churn stopped; waiting for the cluster to settle")
}

// appNames returns the applications the clients use, sorted.
func (s *Sim) appNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.apps))
	for a := range s.apps {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// errStopped is returned by Drive helpers when the run's context ended.
var errStopped = errors.New("simulations: run stopped")
