//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/heureka/heureka/simulations"
)

// The clients' timers and the observer's period, as in the in-process
// simulations (simulations.DefaultTimers).
const (
	LeaseDuration  = 3 * time.Second
	RenewInterval  = time.Second
	SampleInterval = 200 * time.Millisecond
)

// Timers are the timers the nodes run with (ServerFlags), in the
// simulations' terms, for the checkers.
func Timers() simulations.Timers {
	t := simulations.DefaultTimers()
	t.SampleInterval = SampleInterval
	t.ProbeInterval = SampleInterval // probes come from the same rounds
	return t
}

// Config configures the runs.
type Config struct {
	// Run names the run; every namespace is hk-<Run>-<scenario>-….
	Run string
	// Bin is the heureka binary.
	Bin string
	// LogDir receives one log file per node process.
	LogDir string
	// Nodes is the cluster size (default 5).
	Nodes int
	// Seed seeds the harness's choices (default 1).
	Seed int64
	// Thresholds are the checkers' bounds (default
	// simulations.DefaultThresholds(Timers())).
	Thresholds simulations.Thresholds
	// SettleTail is how long to keep observing once the cluster settled
	// (default one lease).
	SettleTail time.Duration
	// Progress receives every timeline event as it happens.
	Progress func(scenario string, ev simulations.Event)
	// PanicAt, if set, makes the run panic right after its first timeline
	// event of this kind (e.g. "partition": in the middle of the faults),
	// to check the cleanup end to end (HK_NETNS_PANIC_AT for make
	// chaos-netns). Off by default.
	PanicAt string
}

func (c *Config) defaults() {
	if c.Nodes == 0 {
		c.Nodes = 5
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Thresholds.MaxMissing == 0 {
		c.Thresholds = simulations.DefaultThresholds(Timers())
	}
	if c.SettleTail == 0 {
		c.SettleTail = LeaseDuration
	}
}

// Scenario is one fault story.
type Scenario struct {
	Name, Summary string
	// Invariants are the simulations checkers that judge it.
	Invariants []string
	// Drive starts clients, injects faults and lifts them.
	Drive func(r *Run) error
	// Thresholds, if set, adjusts the bounds for this scenario (the
	// report shows the bound each verdict was held to).
	Thresholds func(th *simulations.Thresholds)
}

// Result is one scenario run.
type Result struct {
	Scenario, Summary string
	// Namespaces is the prefix of the run's namespaces.
	Namespaces string
	Nodes      int
	Wall       time.Duration
	Pass       bool
	// Err is why the run itself failed (set-up, a fault that could not be
	// injected, a forced failure).
	Err      string
	Verdicts []simulations.Verdict
	Timeline []simulations.Event
	// Figures are measurements of the faults themselves (ping through a
	// loss filter or a partition).
	Figures []string
	// Counts of what was observed.
	Instances, Samples, Probes int
	// Leftovers are the namespaces and processes still there after the
	// cleanup: it must be empty.
	Leftovers []string
	// Known maps a failed invariant to the evidence that explains it by a
	// documented finding (FindingLateRegistration); OnlyKnown says that
	// every failure of the run is so explained.
	Known     map[string][]string
	OnlyKnown bool
	// Pids are every heureka process the run started, Logs their logs.
	Pids         []int
	Logs         []string
	Observations *simulations.Observations
	// Charts are the run's charts (simulations.WriteCharts), if drawn,
	// their files relative to the report.
	Charts []simulations.Chart
}

// Run is one scenario in progress; Drive uses its methods.
type Run struct {
	ctx  context.Context
	cfg  Config
	sc   Scenario
	lab  *Lab
	http *http.Client
	rec  *recorder
	rng  *rand.Rand
	topo atomic.Pointer[simulations.Topology]

	mu        sync.Mutex
	procs     map[string]*Proc
	pids      []int
	logs      []string
	unreached map[string]bool // paused or link down: the observer does not ask
	clients   []*Client
	seq       map[string]int
	faulted   bool
	lastLift  time.Time
	quiet     bool
	churnStop chan struct{}
	churnWG   sync.WaitGroup
	figures   []string
}

// RunScenario runs sc on a fresh lab: namespaces, bridge, one heureka
// process per node, clients, observer. Whatever happens (an error, a
// panic in Drive), every process it started is killed and every namespace
// deleted before it returns; Result.Leftovers lists anything still there.
func RunScenario(ctx context.Context, sc Scenario, cfg Config) (res *Result, err error) {
	cfg.defaults()
	wall := time.Now()
	nodes := make([]string, cfg.Nodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("n%d", i)
	}
	labRun := cfg.Run + "-" + sc.Name
	res = &Result{Scenario: sc.Name, Summary: sc.Summary, Namespaces: Prefix + labRun + "-", Nodes: cfg.Nodes}
	h := fnv.New64a()
	_, _ = h.Write([]byte(sc.Name))
	r := &Run{ctx: ctx, cfg: cfg, sc: sc, procs: map[string]*Proc{}, unreached: map[string]bool{}, seq: map[string]int{},
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), h.Sum64()))}
	r.topo.Store(&simulations.Topology{Down: map[string]bool{}})
	defer func() {
		// Cleanup runs on every path, a panic included (it goes on
		// after the cleanup).
		r.stopAll()
		if cerr := CleanupRun(labRun); cerr != nil {
			res.Leftovers = append(res.Leftovers, cerr.Error())
		}
		res.Pids, res.Logs = r.pids, r.logs
		for _, pid := range r.pids {
			if alive(pid) {
				res.Leftovers = append(res.Leftovers, fmt.Sprintf("process %d still running", pid))
			}
		}
		if left, _ := Namespaces(labRun); len(left) > 0 {
			res.Leftovers = append(res.Leftovers, left...)
		}
		res.Wall = time.Since(wall)
		if err != nil {
			res.Err = err.Error()
			res.Pass = false
		}
		if len(res.Leftovers) > 0 {
			res.Pass = false
		}
	}()

	if r.lab, err = NewLab(ctx, labRun, nodes); err != nil {
		return res, err
	}
	r.http = &http.Client{Transport: &http.Transport{
		DialContext:  dialIn(r.lab.NSPath("c")),
		MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
	}}
	defer r.http.CloseIdleConnections()
	for _, n := range nodes {
		if err := r.startProc(n); err != nil {
			return res, err
		}
	}
	if err := r.waitFormed(30 * time.Second); err != nil {
		return res, err
	}
	var progress func(simulations.Event)
	if cfg.Progress != nil {
		progress = func(ev simulations.Event) { cfg.Progress(sc.Name, ev) }
	}
	r.rec = newRecorder(time.Now(), nodes, progress)
	r.rec.mark(func(o *simulations.Observations) {
		o.SampleInterval, o.LeaseDuration, o.Timers = SampleInterval, LeaseDuration, Timers()
	})
	r.rec.event("start", "%d heureka processes formed a cluster in %v (namespaces %s…)",
		cfg.Nodes, time.Since(wall).Round(time.Millisecond), res.Namespaces)

	obsCtx, stopObs := context.WithCancel(ctx)
	obsDone := make(chan struct{})
	go func() { defer close(obsDone); r.observe(obsCtx) }()
	defer func() { stopObs(); <-obsDone }()

	driveErr := sc.Drive(r)
	r.FaultsOver()
	if driveErr == nil {
		r.settle()
	}
	r.rec.mark(func(o *simulations.Observations) { o.QuietEnd = time.Now() })
	r.teardown()
	r.rec.mark(func(o *simulations.Observations) { o.End = time.Now() })
	stopObs()
	<-obsDone

	obs := r.rec.observations()
	res.Observations = obs
	res.Timeline = obs.Timeline
	res.Instances, res.Samples, res.Probes = len(obs.Instances), len(obs.Samples), len(obs.Probes)
	r.mu.Lock()
	res.Figures = slices.Clone(r.figures)
	r.mu.Unlock()
	if driveErr != nil {
		return res, driveErr
	}
	res.Pass = true
	th := cfg.Thresholds
	if sc.Thresholds != nil {
		sc.Thresholds(&th)
	}
	for _, name := range sc.Invariants {
		check, ok := simulations.Checkers[name]
		if !ok {
			return res, fmt.Errorf("netns: scenario %s: unknown invariant %q", sc.Name, name)
		}
		v := check(obs, th)
		res.Verdicts = append(res.Verdicts, v)
		res.Pass = res.Pass && v.Pass
	}
	if !res.Pass {
		res.explain(obs, r.logs)
	}
	return res, nil
}

// explain looks for the documented findings behind the failed verdicts.
func (res *Result) explain(obs *simulations.Observations, logs []string) {
	var regs []logRegistration
	for _, path := range logs {
		if b, err := os.ReadFile(path); err == nil {
			regs = append(regs, parseRegistrations(string(b))...)
		}
	}
	late := lateRegistrations(obs, regs)
	res.OnlyKnown = true
	for _, v := range res.Verdicts {
		if v.Pass {
			continue
		}
		ev, ok := explainResurrections(v, late)
		if !ok {
			res.OnlyKnown = false
			continue
		}
		if res.Known == nil {
			res.Known = map[string][]string{}
		}
		res.Known[v.Invariant] = ev
	}
}

// ---- processes -----------------------------------------------------------------

func (r *Run) startProc(node string) error {
	r.mu.Lock()
	inc := 1
	if p := r.procs[node]; p != nil {
		inc = p.Incarnation + 1
	}
	r.mu.Unlock()
	p, err := StartNode(r.cfg.Bin, r.cfg.LogDir, r.lab, node, inc)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.procs[node] = p
	r.pids = append(r.pids, p.Pid())
	r.logs = append(r.logs, p.Log)
	r.mu.Unlock()
	return nil
}

// running returns the nodes whose process runs (paused ones included),
// sorted, with their processes.
func (r *Run) running() ([]string, map[string]*Proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var up []string
	ps := map[string]*Proc{}
	for n, p := range r.procs {
		if !p.Exited() {
			up = append(up, n)
			ps[n] = p
		}
	}
	slices.Sort(up)
	return up, ps
}

// stopAll stops the clients, the churn and every process.
func (r *Run) stopAll() {
	r.stopChurn()
	r.mu.Lock()
	cs := slices.Clone(r.clients)
	ps := make([]*Proc, 0, len(r.procs))
	for _, p := range r.procs {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop(false) }()
	}
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(3 * time.Second) }()
	}
	wg.Wait()
}

// BaseURL is node's Eureka API.
func (r *Run) BaseURL(node string) string {
	return fmt.Sprintf("http://%s:%d/eureka", r.lab.IP(node), HTTPPort)
}

// get reads path from node (a path under / such as /cluster/members, or
// under the Eureka API when it starts with /apps).
func (r *Run) get(ctx context.Context, node, path string) (int, []byte, error) {
	url := fmt.Sprintf("http://%s:%d%s", r.lab.IP(node), HTTPPort, path)
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// waitFormed waits until every node is ready and sees every node live.
func (r *Run) waitFormed(within time.Duration) error {
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		ok := true
		for _, n := range r.lab.Nodes {
			code, _, err := r.get(r.ctx, n, "/readyz")
			if err != nil || code != http.StatusOK {
				ok, last = false, fmt.Sprintf("%s not ready (%d, %v)", n, code, err)
				break
			}
			code, body, err := r.get(r.ctx, n, "/cluster/members")
			live, perr := ParseMembers(body)
			if err != nil || code != http.StatusOK || perr != nil || !slices.Equal(live, r.lab.Nodes) {
				ok, last = false, fmt.Sprintf("%s sees %v", n, live)
				break
			}
		}
		if ok {
			return nil
		}
		if !sleepCtx(r.ctx, 200*time.Millisecond) {
			return r.ctx.Err()
		}
	}
	return fmt.Errorf("netns: the cluster did not form within %v: %s", within, last)
}

// ---- observation -----------------------------------------------------------------

// observe reads every running node every SampleInterval until ctx ends.
func (r *Run) observe(ctx context.Context) {
	tick := time.NewTicker(SampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		up, procs := r.running()
		apps := r.rec.appNames()
		topo := r.Topology()
		r.mu.Lock()
		unreached := copySet(r.unreached)
		r.mu.Unlock()
		readings := make([]Reading, len(up))
		var wg sync.WaitGroup
		for i, n := range up {
			readings[i] = Reading{Node: n, Incarnation: procs[n].Incarnation, At: time.Now()}
			if unreached[n] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rd := &readings[i]
				rd.At = time.Now()
				code, body, err := r.get(ctx, n, "/eureka/apps")
				if err != nil {
					return
				}
				rd.Status = code
				if code == http.StatusOK {
					if reg, err := ParseApps(body); err == nil {
						rd.Registry = reg
					}
				}
				if code, body, err := r.get(ctx, n, "/cluster/members"); err == nil && code == http.StatusOK {
					if live, err := ParseMembers(body); err == nil {
						rd.Live = live
					}
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		samples, probe := roundOf(start, up, apps, topo, readings)
		r.rec.addRound(samples, probe)
	}
}

// copySet copies a set; a nil set becomes an empty one.
func copySet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// settle waits until the nodes agree and see each other (or the larger
// bound passed), then SettleTail more.
func (r *Run) settle() {
	th := r.cfg.Thresholds
	var from time.Time
	r.rec.mark(func(o *simulations.Observations) {
		from = o.FaultsEnd
		if from.IsZero() {
			from = o.QuietStart
		}
	})
	limit := time.Now().Add(max(th.Convergence, th.Membership) + time.Second)
	for time.Now().Before(limit) {
		if p := r.rec.lastProbe(); p != nil && p.At.After(from) && converged(p) && membersComplete(p) {
			break
		}
		if !sleepCtx(r.ctx, SampleInterval) {
			return
		}
	}
	sleepCtx(r.ctx, r.cfg.SettleTail)
}

// teardown stops every client gracefully and waits until no node holds a
// cancelled instance and the nodes agree (or the convergence bound
// passed), then for one more round.
func (r *Run) teardown() {
	r.mu.Lock()
	cs := slices.Clone(r.clients)
	r.mu.Unlock()
	var stopped []string
	var wg sync.WaitGroup
	for _, c := range cs {
		if c.running() {
			stopped = append(stopped, c.App+"/"+c.ID)
			wg.Add(1)
			go func() { defer wg.Done(); c.stop(true) }()
		}
	}
	wg.Wait()
	r.rec.event("teardown", "%d clients cancelled", len(stopped))
	since := time.Now()
	limit := since.Add(r.cfg.Thresholds.Convergence)
	for time.Now().Before(limit) {
		if p := r.rec.lastProbe(); p != nil && p.At.After(since) && converged(p) && !holdsAny(p, stopped) {
			break
		}
		if !sleepCtx(r.ctx, SampleInterval) {
			return
		}
	}
	sleepCtx(r.ctx, 2*SampleInterval)
}

// ---- what Drive uses ---------------------------------------------------------------

// Topology is the current reachability.
func (r *Run) Topology() *simulations.Topology { return r.topo.Load() }

func (r *Run) editTopo(edit func(t *simulations.Topology)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.topo.Load()
	t := &simulations.Topology{Down: copySet(old.Down), Stalled: copySet(old.Stalled)}
	for _, g := range old.Groups {
		t.Groups = append(t.Groups, slices.Clone(g))
	}
	edit(t)
	r.topo.Store(t)
}

// Nodes are the node names.
func (r *Run) Nodes() []string { return slices.Clone(r.lab.Nodes) }

// Event puts an entry on the timeline.
func (r *Run) Event(kind, format string, args ...any) {
	r.rec.event(kind, format, args...)
	if r.cfg.PanicAt != "" && kind == r.cfg.PanicAt {
		panic(fmt.Sprintf("netns: forced panic at %s in %s (PanicAt)", kind, r.sc.Name))
	}
}

// Sleep waits d, or returns an error when the run is cancelled.
func (r *Run) Sleep(d time.Duration) error {
	if !sleepCtx(r.ctx, d) {
		return r.ctx.Err()
	}
	return nil
}

// IntN draws from the run's seeded source.
func (r *Run) IntN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.IntN(n)
}

// Between draws a duration in [lo, hi).
func (r *Run) Between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.IntN(int(hi-lo)+1))
}

// Shuffled returns names in a seeded random order.
func (r *Run) Shuffled(names []string) []string {
	out := slices.Clone(names)
	r.mu.Lock()
	r.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	r.mu.Unlock()
	return out
}

// NewClient starts a client of app next to loc.
func (r *Run) NewClient(app, loc string) *Client {
	r.mu.Lock()
	r.seq[app]++
	id := fmt.Sprintf("%s-%03d", strings.ToLower(app), r.seq[app])
	i := slices.Index(r.lab.Nodes, loc)
	order := append(slices.Clone(r.lab.Nodes[i:]), r.lab.Nodes[:i]...)
	c := &Client{r: r, App: app, ID: id, Location: loc, order: order}
	r.clients = append(r.clients, c)
	r.mu.Unlock()
	c.start()
	return c
}

// NewClients starts perNode clients next to every node, spread over apps.
func (r *Run) NewClients(perNode int, apps []string) []*Client {
	var out []*Client
	k := 0
	for _, n := range r.lab.Nodes {
		for range perNode {
			out = append(out, r.NewClient(apps[k%len(apps)], n))
			k++
		}
	}
	return out
}

// WaitRegistered waits until every client of cs has registered, and marks
// the end of the warm-up.
func (r *Run) WaitRegistered(cs []*Client, within time.Duration) error {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	deadline := time.Now().Add(within)
	for !r.rec.allAcked(ids) {
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: %d clients not registered within %v", len(cs), within)
		}
		if err := r.Sleep(50 * time.Millisecond); err != nil {
			return err
		}
	}
	r.rec.mark(func(o *simulations.Observations) {
		if o.SteadyAt.IsZero() {
			o.SteadyAt = time.Now()
		}
	})
	r.Event("clients", "%d clients registered", len(cs))
	return nil
}

// StopClients stops cs: gracefully (they cancel) or silently.
func (r *Run) StopClients(cs []*Client, graceful bool) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop(graceful) }()
	}
	wg.Wait()
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID + "@" + c.Location
	}
	kind := "clients-die"
	if graceful {
		kind = "clients-cancel"
	}
	r.Event(kind, "%s", strings.Join(ids, ", "))
}

// StartChurn starts a client every ~every (of a random app, next to a
// random node) living minLife–maxLife, a share silent dying without
// cancelling, until FaultsOver.
func (r *Run) StartChurn(apps []string, every, minLife, maxLife time.Duration, silent float64) {
	stop := make(chan struct{})
	r.mu.Lock()
	r.churnStop = stop
	r.mu.Unlock()
	r.Event("churn", "a client every ~%v, living %v–%v, %.0f%% die silently", every, minLife, maxLife, silent*100)
	r.churnWG.Add(1)
	go func() {
		defer r.churnWG.Done()
		for {
			t := time.NewTimer(r.Between(every/2, every*3/2))
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
			app := apps[r.IntN(len(apps))]
			loc := r.lab.Nodes[r.IntN(len(r.lab.Nodes))]
			life := r.Between(minLife, maxLife)
			quiet := r.IntN(1000) < int(silent*1000)
			c := r.NewClient(app, loc)
			r.churnWG.Add(1)
			go func() {
				defer r.churnWG.Done()
				lt := time.NewTimer(life)
				defer lt.Stop()
				select {
				case <-stop:
				case <-lt.C:
					c.stop(!quiet)
				}
			}()
		}
	}()
}

func (r *Run) stopChurn() {
	r.mu.Lock()
	stop := r.churnStop
	r.churnStop = nil
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		r.churnWG.Wait()
	}
}

func (r *Run) fault() {
	r.mu.Lock()
	r.faulted = true
	r.mu.Unlock()
}

func (r *Run) lifted() {
	r.mu.Lock()
	r.lastLift = time.Now()
	r.mu.Unlock()
}

// FaultsOver stops the churn and marks the end of the faults (the last
// lift) for the checkers. The harness calls it after Drive.
func (r *Run) FaultsOver() {
	r.mu.Lock()
	if r.quiet {
		r.mu.Unlock()
		return
	}
	r.quiet = true
	faulted, lift := r.faulted, r.lastLift
	r.mu.Unlock()
	r.stopChurn()
	now := time.Now()
	if lift.IsZero() {
		lift = now
	}
	r.rec.mark(func(o *simulations.Observations) {
		o.QuietStart = now
		if faulted {
			o.FaultsEnd = lift
		}
	})
	r.Event("faults-end", "faults lifted and churn stopped; waiting for the cluster to settle")
}

// Figure records a measurement of a fault for the report.
func (r *Run) Figure(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.figures = append(r.figures, s)
	r.mu.Unlock()
	r.Event("figure", "%s", s)
}

// Partition cuts the nodes into groups (BPF filters on the bridge ports).
func (r *Run) Partition(groups ...[]string) error {
	r.fault()
	if err := r.lab.Partition(r.ctx, groups...); err != nil {
		return err
	}
	r.editTopo(func(t *simulations.Topology) { t.Groups = groups })
	var parts []string
	for _, g := range groups {
		parts = append(parts, strings.Join(g, ","))
	}
	r.Event("partition", "%s", strings.Join(parts, " | "))
	return nil
}

// Heal removes the partition.
func (r *Run) Heal() error {
	if err := r.lab.Heal(r.ctx); err != nil {
		return err
	}
	r.editTopo(func(t *simulations.Topology) { t.Groups = nil })
	r.lifted()
	r.Event("heal", "partition filters removed")
	return nil
}

// Kill SIGKILLs node's process.
func (r *Run) Kill(node string) error {
	r.fault()
	r.mu.Lock()
	p := r.procs[node]
	r.mu.Unlock()
	r.editTopo(func(t *simulations.Topology) { t.Down[node] = true })
	at := time.Now()
	if err := p.Kill(); err != nil {
		return err
	}
	r.rec.crashed(node, at)
	r.Event("kill", "%s (pid %d) SIGKILLed", node, p.Pid())
	return nil
}

// Restart starts node's process again (same name and addresses, empty
// registry).
func (r *Run) Restart(node string) error {
	if err := r.startProc(node); err != nil {
		return err
	}
	r.editTopo(func(t *simulations.Topology) { delete(t.Down, node) })
	r.lifted()
	r.mu.Lock()
	p := r.procs[node]
	r.mu.Unlock()
	r.Event("restart", "%s started again (pid %d, incarnation %d)", node, p.Pid(), p.Incarnation)
	return nil
}

// Pause SIGSTOPs node's process.
func (r *Run) Pause(node string) error {
	r.fault()
	r.mu.Lock()
	p := r.procs[node]
	r.unreached[node] = true
	r.mu.Unlock()
	r.editTopo(func(t *simulations.Topology) { t.Down[node] = true })
	if err := p.Pause(); err != nil {
		return err
	}
	r.Event("pause", "%s (pid %d) SIGSTOPped", node, p.Pid())
	return nil
}

// Resume SIGCONTs node's process.
func (r *Run) Resume(node string) error {
	r.mu.Lock()
	p := r.procs[node]
	r.mu.Unlock()
	if err := p.Resume(); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.unreached, node)
	r.mu.Unlock()
	r.editTopo(func(t *simulations.Topology) { delete(t.Down, node) })
	r.lifted()
	r.Event("resume", "%s SIGCONTed", node)
	return nil
}

// LinkDown takes node's link down: no one reaches it, it reaches no one.
func (r *Run) LinkDown(node string) error {
	r.fault()
	r.mu.Lock()
	r.unreached[node] = true
	r.mu.Unlock()
	r.editTopo(func(t *simulations.Topology) { t.Down[node] = true })
	if err := r.lab.LinkDown(r.ctx, node); err != nil {
		return err
	}
	r.Event("link-down", "%s's bridge port down", node)
	return nil
}

// LinkUp brings node's link back.
func (r *Run) LinkUp(node string) error {
	if err := r.lab.LinkUp(r.ctx, node); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.unreached, node)
	r.mu.Unlock()
	r.editTopo(func(t *simulations.Topology) { delete(t.Down, node) })
	r.lifted()
	r.Event("link-up", "%s's bridge port up", node)
	return nil
}

// SetLoss drops pct percent of the packets on every path between two
// hosts (nodes and the clients' namespace), each way (0 lifts it).
func (r *Run) SetLoss(pct int) error {
	if pct > 0 {
		r.fault()
	}
	for _, part := range append([]string{"c"}, r.lab.Nodes...) {
		if err := r.lab.SetLoss(r.ctx, part, pct); err != nil {
			return err
		}
	}
	if pct == 0 {
		r.lifted()
		r.Event("loss-end", "loss filters removed")
	} else {
		r.Event("loss", "%d%% of the packets dropped on every path, each way (every bridge port's egress)", pct)
	}
	return nil
}

// Ping pings ip count times from the namespace of part ("c", "n0", …).
func (r *Run) Ping(part, ip string, count int, interval time.Duration) (sent, received int, err error) {
	return r.lab.Ping(r.ctx, part, ip, count, interval)
}

// Pids are the heureka processes started so far.
func (r *Run) Pids() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pids)
}

// NodeTCPCounters sums the TCP counters of every node's namespace (see
// Lab.TCPCounters).
func (r *Run) NodeTCPCounters() (map[string]int64, error) {
	sum := map[string]int64{}
	for _, n := range r.lab.Nodes {
		m, err := r.lab.TCPCounters(r.ctx, n)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			sum[k] += v
		}
	}
	return sum, nil
}

// IP is node's address.
func (r *Run) IP(node string) string { return r.lab.IP(node) }

// ---- signals -------------------------------------------------------------------------

// HandleSignals cleans run up and exits on SIGINT, SIGTERM or SIGHUP
// (status 128+signal). The returned function stops the handling.
func HandleSignals(run string, logf func(format string, args ...any)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			logf("netns: %v: removing every namespace and process of run %s", sig, run)
			if err := CleanupRun(run); err != nil {
				logf("netns: cleanup: %v", err)
			}
			code := 128
			if s, ok := sig.(syscall.Signal); ok {
				code += int(s)
			}
			os.Exit(code)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

// ErrForced is the error of a run failed on purpose (the cleanup test).
var ErrForced = errors.New("netns: forced failure")
