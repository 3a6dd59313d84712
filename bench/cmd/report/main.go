// Command report measures a Heureka node against this machine's ceiling and
// prints the Markdown tables of BENCHMARKS.md.
//
//	go run ./bench/cmd/report [-round 2s] [-rounds 3] [-sizes 1000,10000,100000] [-samples 1000]
//
// For each registry size it starts one node, loads it once (measuring the
// live heap before any read, then with every cache warm), runs every
// scenario of bench.Scenarios in alternating rounds against its ceiling and
// against Heureka, and measures register-to-readable latency. Only one
// registry is in memory at a time. Progress goes to stderr, the report to
// stdout.
//
// With -cpuprofile FILE -profile SCENARIO@SIZE (e.g. register@100000) one
// extra Heureka run of that scenario (twice -round) is CPU-profiled (load generator and
// server share the process, so both appear).
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/heureka/heureka/bench"
)

type row struct {
	sc                       bench.Scenario
	size                     int
	subject, ceiling         []bench.Result
	ratioWall, ratioCPU      float64
	rateSubject, rateCeiling float64
	cpuSubject, cpuCeiling   time.Duration
	bytesPerResp             float64
	wallPass, cpuPass        bool
}

type sizeReport struct {
	size            int
	load            time.Duration
	heap            bench.Heap
	rows            []*row
	lat             bench.Latencies
	rebuildPlain    time.Duration
	rebuildGzip     time.Duration
	p50, p99, max   time.Duration
	p99Send         time.Duration
	floorP50        time.Duration
	floorP99        time.Duration
	floorMax        time.Duration
	readableSamples int
}

func main() {
	round := flag.Duration("round", 2*time.Second, "duration of one measurement (one side of one round)")
	rounds := flag.Int("rounds", 3, "alternating rounds (ceiling, Heureka) per scenario")
	sizesFlag := flag.String("sizes", "1000,10000,100000", "registry sizes")
	samples := flag.Int("samples", 1000, "register-to-readable samples per size")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the Heureka rounds of -profile to this file")
	profile := flag.String("profile", "register@100000", "scenario@size to profile with -cpuprofile")
	only := flag.String("only", "", "comma-separated scenarios to run (default all, and the heap and latency measurements)")
	flag.Parse()
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
	}

	var sizes []int
	for _, s := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < bench.InstancesPerApp {
			fatalf("bad size %q", s)
		}
		sizes = append(sizes, n)
	}
	start := time.Now()
	load0 := loadavg()
	var reports []*sizeReport
	for _, size := range sizes {
		r, err := measureSize(size, *round, *rounds, *samples, *cpuprofile, *profile)
		if err != nil {
			fatalf("instances=%d: %v", size, err)
		}
		reports = append(reports, r)
	}
	writeReport(os.Stdout, reports, *round, *rounds, *samples, time.Since(start), load0, loadavg())
}

// partial is set by -only: the heap, size and latency measurements are
// skipped.
var partial bool

// readableOnly is set by -only …,readable: register-to-readable is measured.
var readableOnly bool

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "report: "+format+"\n", args...)
	os.Exit(1)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func measureSize(size int, round time.Duration, rounds, samples int, cpuprofile, profile string) (*sizeReport, error) {
	r := &sizeReport{size: size}
	f, err := bench.Start()
	if err != nil {
		return nil, err
	}
	defer f.Stop()
	progress("instances=%d: loading", size)
	t0 := time.Now()
	if partial {
		err = f.Load(size)
	} else {
		r.heap, err = f.LoadMeasured(size)
	}
	if err != nil {
		return nil, err
	}
	r.load = time.Since(t0)
	progress("instances=%d: loaded and measured in %v", size, r.load.Round(time.Millisecond))
	if !partial {
		if r.rebuildPlain, r.rebuildGzip, err = f.RebuildAfterChange(); err != nil {
			return nil, err
		}
	}

	conc := bench.Concurrency()
	c := bench.NewClient(conc)
	defer c.CloseIdleConnections()
	for _, sc := range bench.Scenarios {
		ceiling, subject, stop, err := sc.Setup(f)
		if err != nil {
			return nil, err
		}
		rw := &row{sc: sc, size: size}
		prof := cpuprofile != "" && profile == fmt.Sprintf("%s@%d", sc.Name, size)
		// One untimed request each: connections and caches.
		for _, l := range []bench.Load{ceiling, subject} {
			if _, err := l.New(c, 0)(); err != nil {
				stop()
				return nil, fmt.Errorf("%s: %w", sc.Name, err)
			}
		}
		for i := 0; i < rounds; i++ {
			res, err := bench.Measure(c, ceiling, conc, round)
			if err != nil {
				stop()
				return nil, fmt.Errorf("%s ceiling: %w", sc.Name, err)
			}
			rw.ceiling = append(rw.ceiling, res)
			if res, err = bench.Measure(c, subject, conc, round); err != nil {
				stop()
				return nil, fmt.Errorf("%s: %w", sc.Name, err)
			}
			rw.subject = append(rw.subject, res)
		}
		if prof {
			if err := profileRun(cpuprofile, c, subject, conc, 2*round); err != nil {
				stop()
				return nil, err
			}
		}
		stop()
		summarize(rw)
		r.rows = append(r.rows, rw)
		progress("instances=%d %-10s %10.1f req/s  %s %10.1f req/s  ratio %.2f (cpu %.2f)", size, sc.Name,
			rw.rateSubject, sc.Ceiling, rw.rateCeiling, rw.ratioWall, rw.ratioCPU)
	}

	if partial && !readableOnly {
		return r, nil
	}
	f.ForgetDelta()
	rc := bench.NewClient(1)
	defer rc.CloseIdleConnections()
	// The floor: one GET of an application document from the static
	// server, interleaved with the samples.
	st, err := bench.Serve(bench.Static(bench.OneApp, bench.OneApp.Bytes(f)))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if _, err := f.RegisterToReadable(rc, 10, st.Base); err != nil {
		return nil, err
	}
	if r.lat, err = f.RegisterToReadable(rc, samples, st.Base); err != nil {
		return nil, err
	}
	r.readableSamples = len(r.lat.FromAck)
	r.p50 = bench.Percentile(r.lat.FromAck, 50)
	r.p99 = bench.Percentile(r.lat.FromAck, 99)
	r.max = bench.Percentile(r.lat.FromAck, 100)
	r.p99Send = bench.Percentile(r.lat.FromSend, 99)
	r.floorP50, r.floorP99 = bench.Percentile(r.lat.Floor, 50), bench.Percentile(r.lat.Floor, 99)
	r.floorMax = bench.Percentile(r.lat.Floor, 100)
	progress("instances=%d readable p50 %v p99 %v (static GET p50 %v p99 %v)", size, r.p50, r.p99, r.floorP50, r.floorP99)
	return r, nil
}

// profileRun runs l once more for d under the CPU profiler.
func profileRun(file string, c *http.Client, l bench.Load, conc int, d time.Duration) error {
	pf, err := os.Create(file)
	if err != nil {
		return err
	}
	defer pf.Close()
	if err := pprof.StartCPUProfile(pf); err != nil {
		return err
	}
	_, err = bench.Measure(c, l, conc, d)
	pprof.StopCPUProfile()
	progress("CPU profile written to %s", file)
	return err
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

// summarize takes medians over the rounds. The wall ratio is the median of
// per-round ratios (each round's ceiling and Heureka runs are adjacent); the
// CPU ratio is ceiling CPU per request over Heureka's, from the medians.
func summarize(rw *row) {
	var ratios, rs, rc, cs, cc, bs []float64
	for i := range rw.subject {
		s, c := rw.subject[i], rw.ceiling[i]
		ratios = append(ratios, s.Rate()/c.Rate())
		rs = append(rs, s.Rate())
		rc = append(rc, c.Rate())
		cs = append(cs, float64(s.CPUPerRequest()))
		cc = append(cc, float64(c.CPUPerRequest()))
		if s.Requests > 0 {
			bs = append(bs, float64(s.Bytes)/float64(s.Requests))
		}
	}
	rw.ratioWall = median(ratios)
	rw.rateSubject, rw.rateCeiling = median(rs), median(rc)
	rw.cpuSubject, rw.cpuCeiling = time.Duration(median(cs)), time.Duration(median(cc))
	if rw.cpuSubject > 0 {
		rw.ratioCPU = float64(rw.cpuCeiling) / float64(rw.cpuSubject)
	}
	rw.bytesPerResp = median(bs)
	rw.wallPass = rw.ratioWall >= rw.sc.Target
	rw.cpuPass = rw.ratioCPU >= rw.sc.Target
}

func verdict(wall, cpu bool) string {
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

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	fields := strings.Fields(string(b))
	if len(fields) < 3 {
		return "?"
	}
	return strings.Join(fields[:3], " ")
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }

func msf(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func rate(r float64) string {
	if r < 100 {
		return fmt.Sprintf("%.2f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

func writeReport(w io.Writer, reports []*sizeReport, round time.Duration, rounds, samples int, took time.Duration, load0, load1 string) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "Measured %s on %s: GOMAXPROCS=%d, NumCPU=%d, %s %s/%s; %d connections; %d rounds × %v per side; took %v; load average %s at start, %s at end.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), host, runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(),
		runtime.GOOS, runtime.GOARCH, bench.Concurrency(), rounds, round, took.Round(time.Second), load0, load1)

	fmt.Fprintln(w, "### Throughput against the ceiling")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | instances | Heureka req/s | ceiling | ceiling req/s | ratio (wall) | Heureka CPU µs/req | ceiling CPU µs/req | ratio (CPU) | target | result |")
	fmt.Fprintln(w, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
	for _, sc := range bench.Scenarios {
		for _, r := range reports {
			for _, rw := range r.rows {
				if rw.sc.Name != sc.Name {
					continue
				}
				fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %.2f | %s | %s | %.2f | ≥ %.1f | %s |\n",
					sc.Name, r.size, rate(rw.rateSubject), sc.Ceiling, rate(rw.rateCeiling), rw.ratioWall,
					us(rw.cpuSubject), us(rw.cpuCeiling), rw.ratioCPU, sc.Target, verdict(rw.wallPass, rw.cpuPass))
			}
		}
	}
	fmt.Fprintln(w)

	if partial && !readableOnly {
		return
	}
	if !partial {
		writeFlat(w, reports)
	}
	writeReadable(w, reports, samples)
	if partial {
		return
	}
	writeSizes(w, reports)
}

func writeFlat(w io.Writer, reports []*sizeReport) {
	fmt.Fprintln(w, "### Flat in registry size")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Heureka's ratio to its ceiling (wall / CPU) and CPU per request at each size. The sizes run minutes apart, so absolute CPU per request moves with the machine's load; the ratios are measured against a ceiling run seconds apart. Flat means the ratio at the largest size is at least 0.8× the ratio at the smallest.")
	fmt.Fprintln(w)
	fmt.Fprint(w, "| scenario |")
	for _, r := range reports {
		fmt.Fprintf(w, " @%d ratio wall / CPU | @%d µs/req |", r.size, r.size)
	}
	fmt.Fprintln(w, " largest ÷ smallest ratio, wall / CPU | result |")
	fmt.Fprint(w, "|---|")
	for range reports {
		fmt.Fprint(w, "---:|---:|")
	}
	fmt.Fprintln(w, "---:|---|")
	for _, name := range []string{"renew", "register", "app", "delta"} {
		fmt.Fprintf(w, "| %s |", name)
		var first, last *row
		for _, r := range reports {
			for _, rw := range r.rows {
				if rw.sc.Name == name {
					fmt.Fprintf(w, " %.2f / %.2f | %s |", rw.ratioWall, rw.ratioCPU, us(rw.cpuSubject))
					if first == nil {
						first = rw
					}
					last = rw
				}
			}
		}
		if first == nil {
			fmt.Fprintln(w, " | |")
			continue
		}
		gw, gc := last.ratioWall/first.ratioWall, last.ratioCPU/first.ratioCPU
		res := verdict(gw >= 0.8, gc >= 0.8)
		res = strings.NewReplacer("pass", "flat", "**miss**", "**not flat**").Replace(res)
		if name == "renew" || name == "app" {
			res += " (not a target)"
		}
		fmt.Fprintf(w, " %.2f / %.2f | %s |\n", gw, gc, res)
	}
	fmt.Fprintln(w)
}

func writeReadable(w io.Writer, reports []*sizeReport, samples int) {
	fmt.Fprintln(w, "### Register to readable")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "One registration at a time (a new instance each, cancelled afterwards, untimed), then GET /eureka/apps/{app} (JSON, the cached read path) until the body holds the instance; %d samples per size. The floor is one GET of an application document from the static server after each sample: a single round trip under the same conditions.\n\n", samples)
	fmt.Fprintln(w, "| instances | samples | p50 ms | p99 ms | max ms | p99 from sending the register, ms | GETs that missed | floor p50 ms | floor p99 ms | floor max ms | target | result |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, r := range reports {
		res := "pass"
		if r.p99 > 5*time.Millisecond {
			res = "**miss**"
		}
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s | %d | %s | %s | %s | p99 ≤ 5 ms | %s |\n", r.size, r.readableSamples,
			msf(r.p50), msf(r.p99), msf(r.max), msf(r.p99Send), r.lat.Polls, msf(r.floorP50), msf(r.floorP99), msf(r.floorMax), res)
	}
	fmt.Fprintln(w)
}

func writeSizes(w io.Writer, reports []*sizeReport) {
	fmt.Fprintln(w, "### Response sizes (full registry)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| instances | JSON bytes | XML bytes | gzip JSON bytes | JSON / gzip | target | result | first full fetch after a change: plain JSON ms | gzip JSON ms |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---|---|---:|---:|")
	for _, r := range reports {
		h := r.heap
		ratio := float64(h.FullJSON) / float64(h.FullGzip)
		res := "pass"
		if ratio < 10 {
			res = "**miss**"
		}
		fmt.Fprintf(w, "| %d | %d | %d | %d | %.1f× | ≥ 10× | %s | %s | %s |\n", r.size, h.FullJSON, h.FullXML, h.FullGzip,
			ratio, res, msf(r.rebuildPlain), msf(r.rebuildGzip))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "### Heap per instance")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Live heap after runtime.GC, as the difference before/after loading (registry state, no read yet, delta window aged out), then after warming the full document in all four formats plain and gzip (per-application encoded elements and gzip pieces plus the eight assembled documents), then after warming every application's document in all formats plain and gzip.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| instances | load time | registry state B/inst | full-document caches B/inst | app-document caches B/inst | total warm B/inst | target (state) | result |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---|---|")
	for _, r := range reports {
		h := r.heap
		res := "pass"
		if h.PerInstance(h.State) > 2048 {
			res = "**miss**"
		}
		fmt.Fprintf(w, "| %d | %.1f s | %.0f | %.0f | %.0f | %.0f | ≤ 2048 at 100k | %s |\n", r.size, r.load.Seconds(),
			h.PerInstance(h.State), h.PerInstance(h.FullCaches), h.PerInstance(h.AppCaches),
			h.PerInstance(h.State+h.FullCaches+h.AppCaches), res)
	}
}
