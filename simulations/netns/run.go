//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/simulations"
)

// One scenario run from start to verdict: the configuration, the Scenario
// and Result types, the Run Drive works through, and RunScenario, which
// sets the lab up, drives the scenario, judges it with the checkers and
// cleans up on every path. The Run's other duties live beside it:
// run_procs.go (processes), run_observe.go (measurement), run_clients.go
// (client load), run_faults.go (fault injection), run_drive.go (Drive's
// helpers).

// Timers are the timers of the netns runs, in the simulations' terms: the
// one table of the in-process simulations (simulations.DefaultTimers), with
// the probes read in the sampler's rounds. The nodes get them as flags
// (ServerFlags); the clients, the observer and the checkers read them here.
func Timers() simulations.Timers {
	t := simulations.DefaultTimers()
	t.ProbeInterval = t.SampleInterval // probes come from the same rounds
	return t
}

// timers is Timers(), for the clients and the observer.
var timers = Timers()

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
		c.SettleTail = timers.LeaseDuration
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
	rec  *simulations.Recorder
	rng  *rand.Rand
	topo atomic.Pointer[simulations.Topology]

	mu        sync.Mutex
	procs     map[string]*Proc
	pids      []int
	logs      []string
	unreached map[string]bool // paused or link down: the observer does not ask
	clients   []*Client
	seq       map[string]int
	figures   []string

	// phases tracks the churn and the end of the faults.
	phases simulations.Phases
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
	r.rec = simulations.NewRecorder(time.Now(), nodes, progress)
	r.rec.Mark(func(o *simulations.Observations) {
		o.SampleInterval, o.LeaseDuration, o.Timers = timers.SampleInterval, timers.LeaseDuration, timers
	})
	r.rec.Event("start", fmt.Sprintf("%d heureka processes formed a cluster in %v (namespaces %s…)",
		cfg.Nodes, time.Since(wall).Round(time.Millisecond), res.Namespaces))

	obsCtx, stopObs := context.WithCancel(ctx)
	obsDone := make(chan struct{})
	go func() { defer close(obsDone); r.observe(obsCtx) }()
	defer func() { stopObs(); <-obsDone }()

	driveErr := sc.Drive(r)
	r.FaultsOver()
	if driveErr == nil {
		r.settle()
	}
	r.rec.Mark(func(o *simulations.Observations) { o.QuietEnd = time.Now() })
	r.teardown()
	r.rec.Mark(func(o *simulations.Observations) { o.End = time.Now() })
	stopObs()
	<-obsDone

	obs := r.rec.Observations()
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

// ErrForced is the error of a run failed on purpose (the cleanup test).
var ErrForced = errors.New("netns: forced failure")
