// Command report measures Heureka against this machine's ceiling and prints
// the Markdown tables of BENCHMARKS.md.
//
//	go run ./bench/cmd/report [-round 2s] [-rounds 3] [-sizes 1000,10000,100000] [-samples 1000]
//	    [-target heureka|reference] [-deploy 1000] [-under-churn 3s]
//	    [-churn 10m -churn-size 20000 -churn-window 1m -churn-rate 4000]
//
// For each registry size it loads a registry once, runs every scenario of
// bench.Scenarios in alternating rounds against its ceiling (an empty 200,
// or the same bytes written by a static server, in this process) and
// against the server (for a-a, a second empty 200: how far ratios move by
// chance), then deploys -deploy new instances at once and
// cancels them again, and reads (full gzip, delta, one application) first
// quietly and then while register+cancel churn runs, in -rounds rounds
// alternating with -rounds+1 rounds of a static server under the same
// churn. With -target heureka
// (the default) the server is a node in this process (loaded through the
// registry, the live heap measured, register-to-readable timed); with
// -target reference the same workloads run, in one run, against a heureka
// process and the reference Eureka server (clients/java/reference, built by
// make javadeps) with its read-only response cache at the Spring default
// and turned off, each loaded over HTTP and warmed up first. -churn runs,
// after the sizes, the churn workload alone at -churn-size for that long,
// sampling the pair rate and the server's RSS.
//
// Every ratio a table prints is the quotient (or difference) of two
// figures printed in the same row; the column header names them ("ratio =
// A ÷ B"), and check_test.go recomputes each one from the output. Figures
// over rounds are medians. CPU time per request is getrusage of this
// process (load generator and, in-process, the server) plus, for a server
// process, its /proc/PID/stat utime+stime. The 1-minute load average is
// printed beside every row and at the start and end of the run. Every
// measured round (and side of a round) starts after a forced collection
// (collect), so that it does not pay for the garbage of the loading or of
// the rounds before it. Progress goes to stderr, the report to stdout.
//
// With -cpuprofile FILE -profile SCENARIO@SIZE (e.g. register@100000) one
// extra run of that scenario (twice -round, after a collection) is
// CPU-profiled: the server's load, or with -profile-ceiling the ceiling's.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/bench"
	"github.com/heureka/heureka/node"
)

// options are the command line's settings.
type options struct {
	round, warmup, underChurn time.Duration
	rounds, samples, deploy   int
	sizes                     []int
	target, jar               string
	cpuprofile, profile       string
	profileCeiling            bool
	churn, churnWindow        time.Duration
	churnSample               time.Duration
	churnSize, churnConns     int
	churnRate                 float64
	heapprofile               string
	underChurnRate            float64
}

func parseFlags() options {
	var o options
	flag.DurationVar(&o.round, "round", 2*time.Second, "duration of one measurement (one side of one round)")
	flag.IntVar(&o.rounds, "rounds", 3, "alternating rounds (ceiling, server) per scenario")
	sizesFlag := flag.String("sizes", "1000,10000,100000", "registry sizes (1000000 needs ~7 GB and minutes per size)")
	flag.IntVar(&o.samples, "samples", 1000, "register-to-readable samples per size (in-process target only)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of -profile's server rounds (with -profile-ceiling: its ceiling rounds) to this file")
	flag.StringVar(&o.profile, "profile", "register@100000", "scenario@size to profile with -cpuprofile (under-churn@size: the deploy and the measurements under churn)")
	flag.BoolVar(&o.profileCeiling, "profile-ceiling", false, "with -cpuprofile, profile the scenario's ceiling load instead of the server's")
	only := flag.String("only", "", "comma-separated scenarios to run (default all, and the heap, deploy, churn and latency measurements); \"readable\" and \"under-churn\" add those measurements")
	flag.StringVar(&o.target, "target", "heureka", `"heureka": a node in this process; "reference": a heureka process and the reference Eureka server, cache on and off`)
	flag.StringVar(&o.jar, "jar", bench.ReferenceJar, "the reference Eureka server's jar (-target reference)")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "warm-up per scenario of a server process before it is measured (JVM)")
	flag.IntVar(&o.deploy, "deploy", 1000, "instances of the deploy workload per size (0: skip)")
	flag.DurationVar(&o.underChurn, "under-churn", 3*time.Second, "duration of each read measurement, quiet and under churn (0: skip)")
	flag.Float64Var(&o.underChurnRate, "under-churn-rate", 500, "pairs per second the churn of the reads-under-churn measurement is held to (0: as fast as its connections go); 500 pairs are the goal's 1,000 writes/s")
	flag.DurationVar(&o.churn, "churn", 0, "duration of the register+cancel churn run at -churn-size (0: skip; the goal's run is 10m)")
	flag.IntVar(&o.churnSize, "churn-size", 20000, "registry size of the churn run")
	flag.IntVar(&o.churnConns, "churn-conns", 16, "connections of the churn run")
	flag.Float64Var(&o.churnRate, "churn-rate", 0, "pairs per second the churn run is held to (0: as fast as the connections go)")
	flag.DurationVar(&o.churnWindow, "churn-window", time.Minute, "window over which the churn run's pair rate is compared with its first")
	flag.DurationVar(&o.churnSample, "churn-sample", time.Second, "sampling interval of the churn run (pairs, RSS, CPU)")
	flag.StringVar(&o.heapprofile, "heapprofile", "", "write a heap profile of the in-process churn run's end (after a collection) to this file")
	flag.Parse()
	switch {
	case o.round <= 0, o.rounds < 1, o.samples < 1, o.deploy < 0, o.underChurn < 0, o.underChurnRate < 0, o.churn < 0, o.warmup < 0:
		fatalf("-round, -rounds and -samples must be positive; -deploy, -under-churn, -under-churn-rate, -churn and -warmup not negative")
	case o.target != "heureka" && o.target != "reference":
		fatalf(`-target must be "heureka" or "reference", not %q`, o.target)
	case o.churn > 0 && (o.churnSize < bench.InstancesPerApp || o.churnConns < 1 || o.churnWindow <= 0 || o.churnSample <= 0 || o.churnSample > o.churnWindow || o.churnRate < 0):
		fatalf("-churn-size must be at least %d, -churn-conns positive, 0 < -churn-sample ≤ -churn-window, -churn-rate not negative", bench.InstancesPerApp)
	}
	if *only != "" {
		keep := map[string]bool{}
		for _, name := range strings.Split(*only, ",") {
			keep[strings.TrimSpace(name)] = true
		}
		var scs []bench.Scenario
		for _, sc := range bench.Scenarios {
			if keep[sc.Name] {
				scs = append(scs, sc)
			}
		}
		bench.Scenarios = scs
		partial = true
		readableOnly = keep["readable"]
		underChurnOnly = keep["under-churn"]
	}
	for _, s := range strings.Split(*sizesFlag, ",") {
		if strings.TrimSpace(s) == "" && o.churn > 0 {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < bench.InstancesPerApp {
			fatalf("bad size %q (at least %d)", s, bench.InstancesPerApp)
		}
		o.sizes = append(o.sizes, n)
	}
	return o
}

// partial is set by -only: the heap, size, deploy, churn and latency
// measurements are skipped.
var partial bool

// readableOnly is set by -only …,readable: register-to-readable is measured.
var readableOnly bool

// underChurnOnly is set by -only …,under-churn: the registrations and reads
// under churn are measured (not the deploy).
var underChurnOnly bool

func main() {
	o := parseFlags()
	start := time.Now()
	load0 := bench.LoadAvg()
	var reports []*sizeReport
	var churns []*churnReport
	var err error
	if o.target == "reference" {
		reports, churns, err = runReference(o)
	} else {
		reports, churns, err = runInProcess(o)
	}
	if err != nil {
		fatalf("%v", err)
	}
	var out bytes.Buffer
	writeReport(&out, &run{opts: o, reports: reports, churns: churns, took: time.Since(start),
		load0: load0, load1: bench.LoadAvg(), at: time.Now()})
	_, _ = os.Stdout.Write(out.Bytes())
	// Every printed ratio must follow from the figures printed beside it.
	if chk := checkRatios(out.String()); len(chk.Mismatch) > 0 {
		fatalf("the report's ratios do not follow from its figures:\n%s", strings.Join(chk.Mismatch, "\n"))
	}
	for _, r := range reports {
		if r.failure != "" {
			fatalf("%s instances=%d: %s", r.server, r.size, r.failure)
		}
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "report: "+format+"\n", args...)
	os.Exit(1)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// inProcess is the server label of a node in this process.
const inProcess = "heureka (in-process)"

// subject is one server under measurement, loaded with size instances.
type subject struct {
	server string
	base   string
	size   int
	apps   int
	pid    int // 0: in this process
	fresh  *bench.Queue
	// prepare readies the server for a scenario (nil: nothing to do).
	prepare func(sc bench.Scenario) error
	// body returns the bytes the server serves at each of d's paths.
	body func(d bench.Doc) (bench.Bodies, error)
	// forgetDelta empties the delta window before the deploy (nil: cannot).
	forgetDelta func()
	// holdDelta keeps the delta window at the changes of the last w until
	// stop is called (nil: cannot; a server process keeps its retention).
	holdDelta func(w time.Duration) (stop func())
}

func runInProcess(o options) ([]*sizeReport, []*churnReport, error) {
	var reports []*sizeReport
	for _, size := range o.sizes {
		r, err := measureInProcess(o, size)
		if err != nil {
			return nil, nil, fmt.Errorf("instances=%d: %w", size, err)
		}
		reports = append(reports, r)
	}
	var churns []*churnReport
	if o.churn > 0 && !partial {
		// Production sweeps: the run outlasts the tombstone TTL, and the
		// sweeps forget expired tombstones. Every loaded instance is
		// cancelled within seconds, long before its lease could expire.
		f, err := bench.NewFixtureWith(o.churnSize, func(c *node.Config) {
			c.Registry.EvictionInterval = actors.DefaultConfig("bench").EvictionInterval
		})
		if err != nil {
			return nil, nil, err
		}
		cr, err := churnRun(o, &subject{server: inProcess, base: f.Base, size: f.Size, apps: f.Apps})
		f.Stop()
		if err != nil {
			return nil, nil, err
		}
		churns = append(churns, cr)
	}
	return reports, churns, nil
}

func measureInProcess(o options, size int) (*sizeReport, error) {
	r := &sizeReport{size: size, server: inProcess}
	f, err := bench.Start()
	if err != nil {
		return nil, err
	}
	defer f.Stop()
	if !partial {
		// The heap is measured on a registry of its own, stopped before the
		// scenarios' registry loads: the caches its measurement warms would
		// otherwise stay live through every scenario.
		progress("instances=%d: measuring the heap", size)
		if r.heap, err = bench.MeasureHeap(size); err != nil {
			return nil, err
		}
	}
	progress("instances=%d: loading", size)
	t0 := time.Now()
	if err = f.Load(size); err != nil {
		return nil, err
	}
	r.loadTime = time.Since(t0)
	progress("instances=%d: loaded in %v", size, r.loadTime.Round(time.Millisecond))
	if !partial {
		if r.rebuildPlain, r.rebuildGzip, err = f.RebuildAfterChange(); err != nil {
			return nil, err
		}
	}
	s := &subject{server: inProcess, base: f.Base, size: f.Size, apps: f.Apps, fresh: f.Fresh,
		prepare:     func(sc bench.Scenario) error { return sc.Prepare(f) },
		body:        func(d bench.Doc) (bench.Bodies, error) { return d.Bodies(f, f.Apps), nil },
		forgetDelta: f.ForgetDelta, holdDelta: f.HoldDeltaWindow}
	c := bench.NewClient(bench.Concurrency())
	defer c.CloseIdleConnections()
	if r.rows, err = runScenarios(o, s, c); err != nil {
		return nil, err
	}
	if !partial || readableOnly {
		if err := measureReadable(o, f, r); err != nil {
			return nil, err
		}
	}
	if partial && !underChurnOnly {
		return r, nil
	}
	if partial {
		o.deploy = 0
	}
	f.ForgetDelta()
	if o.cpuprofile != "" && o.profile == fmt.Sprintf("under-churn@%d", size) {
		stop, err := startProfile(o.cpuprofile)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	if err := measureDeployAndChurnReads(o, s, c, r); err != nil {
		// Keep what was measured; the run reports the failure and exits 1.
		r.failure = err.Error()
		progress("instances=%d: %v", size, err)
	}
	return r, nil
}

// runReference measures, per size, a heureka process and the reference
// server with its read-only cache on and off, one after another (one
// server at a time), then the churn run for each.
func runReference(o options) ([]*sizeReport, []*churnReport, error) {
	dir, err := os.MkdirTemp("", "heureka-bench-")
	if err != nil {
		return nil, nil, err
	}
	progress("building cmd/heureka; server logs in %s", dir)
	bin, err := bench.BuildHeureka(context.Background(), dir)
	if err != nil {
		return nil, nil, err
	}
	starters := []func() (*bench.Process, error){
		func() (*bench.Process, error) { return bench.StartHeurekaProcess(bin, dir) },
		func() (*bench.Process, error) { return bench.StartReference(o.jar, dir, true) },
		func() (*bench.Process, error) { return bench.StartReference(o.jar, dir, false) },
	}
	var reports []*sizeReport
	for _, size := range o.sizes {
		for _, start := range starters {
			r, err := measureProcess(o, start, size)
			if err != nil {
				return nil, nil, fmt.Errorf("instances=%d: %w", size, err)
			}
			reports = append(reports, r)
		}
	}
	var churns []*churnReport
	if o.churn > 0 && !partial {
		for _, start := range starters {
			p, err := start()
			if err != nil {
				return nil, nil, err
			}
			cr, err := func() (*churnReport, error) {
				defer p.Stop()
				c := bench.NewClient(o.churnConns)
				defer c.CloseIdleConnections()
				if _, err := bench.RegisterLoaded(c, p.Base, o.churnSize, o.churnConns); err != nil {
					return nil, err
				}
				return churnRun(o, &subject{server: p.Name, base: p.Base, size: o.churnSize,
					apps: appsOf(o.churnSize), pid: p.PID})
			}()
			if err != nil {
				return nil, nil, err
			}
			churns = append(churns, cr)
		}
	}
	return reports, churns, nil
}

func appsOf(size int) int { return (size + bench.InstancesPerApp - 1) / bench.InstancesPerApp }

func measureProcess(o options, start func() (*bench.Process, error), size int) (*sizeReport, error) {
	p, err := start()
	if err != nil {
		return nil, err
	}
	defer p.Stop()
	r := &sizeReport{size: size, server: p.Name}
	conc := bench.Concurrency()
	c := bench.NewClient(conc)
	defer c.CloseIdleConnections()
	progress("%s instances=%d: loading over HTTP", p.Name, size)
	t0 := time.Now()
	if _, err := bench.RegisterLoaded(c, p.Base, size, conc); err != nil {
		return nil, err
	}
	r.loadTime = time.Since(t0)
	s := &subject{server: p.Name, base: p.Base, size: size, apps: appsOf(size), pid: p.PID, fresh: bench.NewQueue(),
		body: func(d bench.Doc) (bench.Bodies, error) { return d.FetchBodies(c, p.Base, appsOf(size)) }}
	if o.warmup > 0 {
		progress("%s instances=%d: warming up (%v per scenario)", p.Name, size, o.warmup)
		if err := warmUp(o, s, c); err != nil {
			return nil, fmt.Errorf("%s warm-up: %w", p.Name, err)
		}
	}
	if r.rows, err = runScenarios(o, s, c); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	if rss, err := bench.ProcRSS(p.PID); err == nil {
		r.rss = rss
	}
	if !partial {
		if err := measureDeployAndChurnReads(o, s, c, r); err != nil {
			r.failure = err.Error()
			progress("%s instances=%d: %v", p.Name, size, err)
		}
	}
	return r, nil
}

// warmUp runs every scenario's load against s for o.warmup, untimed (the
// fresh registrations go to a scratch queue and are cancelled again).
func warmUp(o options, s *subject, c *http.Client) error {
	conc := bench.Concurrency()
	scratch := *s
	scratch.fresh = bench.NewQueue()
	for _, sc := range bench.Scenarios {
		if sc.Name == "cancel" || sc.Name == bench.AA {
			continue
		}
		_, l, stop, err := sc.Loads(scratch.base, scratch.size, scratch.apps, scratch.fresh, scratch.body)
		if err != nil {
			return err
		}
		_, err = bench.Measure(c, l, conc, o.warmup)
		stop()
		if err != nil {
			return fmt.Errorf("%s: %w", sc.Name, err)
		}
	}
	return bench.Drain(c, s.base, scratch.fresh, conc)
}

// row is one scenario at one size on one server.
type row struct {
	sc                       bench.Scenario
	size                     int
	server                   string
	subject, ceiling         []bench.Result
	rateSubject, rateCeiling float64 // medians over the rounds
	// cpuSubject and cpuCeiling are the medians of CPU per request: this
	// process (load generator, and the server when in-process) plus a
	// server process's own.
	cpuSubject, cpuCeiling time.Duration
	// srvSubject is the median of a server process's own CPU per request
	// (0 in-process).
	srvSubject          time.Duration
	ratioWall, ratioCPU float64
	bytesPerResp        float64
	load                float64 // 1-minute load average after the rounds
}

func runScenarios(o options, s *subject, c *http.Client) ([]*row, error) {
	conc := bench.Concurrency()
	var rows []*row
	for _, sc := range bench.Scenarios {
		if s.prepare != nil {
			if err := s.prepare(sc); err != nil {
				return nil, err
			}
		}
		ceiling, subj, stop, err := sc.Loads(s.base, s.size, s.apps, s.fresh, s.body)
		if err != nil {
			return nil, err
		}
		rw := &row{sc: sc, size: s.size, server: s.server}
		err = func() error {
			defer stop()
			// One untimed request each: connections and caches.
			for _, l := range []bench.Load{ceiling, subj} {
				if _, err := l.New(c, 0)(); err != nil && err != bench.ErrExhausted {
					return err
				}
			}
			for i := 0; i < o.rounds; i++ {
				collect()
				res, err := bench.Measure(c, ceiling, conc, o.round)
				if err != nil {
					return fmt.Errorf("ceiling: %w", err)
				}
				rw.ceiling = append(rw.ceiling, res)
				sc.BeforeRound(s.fresh, i, o.rounds)
				collect()
				ctx, cancel := context.WithTimeout(context.Background(), o.round)
				pid := s.pid
				if sc.Name == bench.AA {
					pid = 0 // its subject is this process's second trivial server
				}
				res, err = bench.MeasureCtx(ctx, c, subj, conc, pid)
				cancel()
				if err != nil {
					return err
				}
				rw.subject = append(rw.subject, res)
			}
			if o.cpuprofile != "" && o.profile == fmt.Sprintf("%s@%d", sc.Name, s.size) {
				l := subj
				if o.profileCeiling {
					l = ceiling
				}
				collect() // as before every measured round
				return profileRun(o.cpuprofile, c, l, conc, 2*o.round)
			}
			return nil
		}()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
		if sc.Name == "cancel" {
			// What the rounds did not cancel: the registry gets its size back.
			if err := bench.Drain(c, s.base, s.fresh, conc); err != nil {
				return nil, err
			}
		}
		rw.load = bench.Load1()
		summarize(rw)
		rows = append(rows, rw)
		progress("%s instances=%d %-14s %10.1f req/s  %s %10.1f req/s  ratio %.2f = %.1f ÷ %.1f (cpu %s vs %s µs/req)",
			s.server, s.size, sc.Name, rw.rateSubject, sc.Ceiling, rw.rateCeiling, rw.ratioWall, rw.rateSubject, rw.rateCeiling,
			us(rw.cpuSubject), us(rw.cpuCeiling))
	}
	return rows, nil
}

// profileRun runs l once more for d under the CPU profiler.
func profileRun(file string, c *http.Client, l bench.Load, conc int, d time.Duration) error {
	stop, err := startProfile(file)
	if err != nil {
		return err
	}
	defer stop()
	_, err = bench.Measure(c, l, conc, d)
	return err
}

// startProfile starts the CPU profiler writing to file; stop ends it.
func startProfile(file string) (stop func(), err error) {
	pf, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		pf.Close()
		progress("CPU profile written to %s", file)
	}, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// totalCPU is the CPU per request of a round: this process plus a server
// process.
func totalCPU(r bench.Result) float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.CPU+r.ServerCPU) / float64(r.Requests)
}

// wallRatio and cpuRatio compute a row's ratios from its medians: the
// figures printed beside them. They are variables so that the test can put
// back the old computation (the median of per-round ratios, which the
// printed medians do not give) and see the check fail.
var (
	wallRatio = func(rw *row) float64 { return safeDiv(rw.rateSubject, rw.rateCeiling) }
	cpuRatio  = func(rw *row) float64 { return safeDiv(float64(rw.cpuCeiling), float64(rw.cpuSubject)) }
)

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// summarize takes medians over the rounds and the ratios of the medians.
func summarize(rw *row) {
	var rs, rc, cs, cc, ss, bs []float64
	for i := range rw.subject {
		s, c := rw.subject[i], rw.ceiling[i]
		rs = append(rs, s.Rate())
		rc = append(rc, c.Rate())
		cs = append(cs, totalCPU(s))
		cc = append(cc, totalCPU(c))
		ss = append(ss, float64(s.ServerCPUPerRequest()))
		if s.Requests > 0 {
			bs = append(bs, float64(s.Bytes)/float64(s.Requests))
		}
	}
	rw.rateSubject, rw.rateCeiling = median(rs), median(rc)
	rw.cpuSubject, rw.cpuCeiling = time.Duration(median(cs)), time.Duration(median(cc))
	rw.srvSubject = time.Duration(median(ss))
	rw.bytesPerResp = median(bs)
	rw.ratioWall = wallRatio(rw)
	rw.ratioCPU = cpuRatio(rw)
}

// pass reports whether a ratio meets the row's target (rounded as printed).
func (rw *row) pass(ratio float64) bool { return ratio+0.005 >= rw.sc.Target }

func (rw *row) verdict() string {
	if rw.sc.Target == 0 {
		return "(no target)"
	}
	wall, cpu := rw.pass(rw.ratioWall), rw.pass(rw.ratioCPU)
	switch {
	case wall && cpu:
		return "pass"
	case !wall && !cpu:
		return "**miss**"
	case wall:
		return "borderline (wall pass, CPU miss)"
	}
	return "borderline (wall miss, CPU pass)"
}
