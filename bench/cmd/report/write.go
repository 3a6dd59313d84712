package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/heureka/heureka/bench"
)

// run is one run of the report: what writeReport prints.
type run struct {
	opts         options
	reports      []*sizeReport
	churns       []*churnReport
	took         time.Duration
	load0, load1 string
	at           time.Time
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }

func usf(x float64) string { return fmt.Sprintf("%.1f", x) }

func msf(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func rate(r float64) string {
	if r < 100 {
		return fmt.Sprintf("%.2f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

func mb(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// dash is printed where a figure does not apply.
const dash = "–"

// servers returns the servers of the reports in the order they ran.
func (rn *run) servers() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rn.reports {
		if !seen[r.server] {
			seen[r.server] = true
			out = append(out, r.server)
		}
	}
	return out
}

// sizes returns the sizes of the reports in the order they ran.
func (rn *run) sizes() []int {
	var out []int
	seen := map[int]bool{}
	for _, r := range rn.reports {
		if !seen[r.size] {
			seen[r.size] = true
			out = append(out, r.size)
		}
	}
	return out
}

func (rn *run) report(server string, size int) *sizeReport {
	for _, r := range rn.reports {
		if r.server == server && r.size == size {
			return r
		}
	}
	return nil
}

func (rn *run) row(server string, size int, scenario string) *row {
	if r := rn.report(server, size); r != nil {
		for _, rw := range r.rows {
			if rw.sc.Name == scenario {
				return rw
			}
		}
	}
	return nil
}

func writeReport(w io.Writer, rn *run) {
	host, _ := os.Hostname()
	o := rn.opts
	fmt.Fprintf(w, "Measured %s on %s: GOMAXPROCS=%d, NumCPU=%d, %s %s/%s, %s; target %s; %d connections; %d rounds × %v per side; took %v; load average %s at start, %s at end.\n\n",
		rn.at.UTC().Format("2006-01-02 15:04 MST"), host, runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(),
		runtime.GOOS, runtime.GOARCH, gcSettings(), o.target, bench.Concurrency(), o.rounds, o.round, rn.took.Round(time.Second), rn.load0, rn.load1)
	fmt.Fprintln(w, "Figures over rounds are medians; every ratio is computed from the two figures its column header names, printed in the same row. CPU µs/req is this process's CPU per request (getrusage: the load generator, and the server when it runs in-process) plus a server process's own (/proc/PID/stat); \"server process CPU µs/req\" is the latter alone. \"load\" is the 1-minute load average when the row's measurement ended.")
	fmt.Fprintln(w)

	if len(rn.reports) > 0 {
		writeThroughput(w, rn)
		if len(rn.servers()) > 1 {
			writeComparison(w, rn)
		}
		writeCost(w, rn)
		if len(rn.sizes()) > 1 {
			writeFlat(w, rn)
		}
		if !partial {
			writeDeploy(w, rn)
		}
		if !partial || underChurnOnly {
			writeChurnAlone(w, rn)
			writeChurnReads(w, rn)
		}
	}
	writeChurn(w, rn)
	for _, r := range rn.reports {
		if r.failure != "" {
			fmt.Fprintf(w, "**Failed** (%s, %d instances): %s\n\n", r.server, r.size, r.failure)
		}
	}
	if len(rn.reports) > 0 && o.target == "heureka" && (!partial || readableOnly) {
		writeReadable(w, rn)
	}
	if len(rn.reports) > 0 && o.target == "heureka" && !partial {
		writeSizes(w, rn)
	}
}

func tableHeader(w io.Writer, cells ...string) {
	fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	fmt.Fprint(w, "|")
	for _, c := range cells {
		if strings.Contains(c, "scenario") || c == "server" || c == "ceiling" || c == "result" || c == "operation" || c == "read" || c == "target" {
			fmt.Fprint(w, "---|")
		} else {
			fmt.Fprint(w, "---:|")
		}
	}
	fmt.Fprintln(w)
}

func tableRow(w io.Writer, cells ...string) { fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |") }

func srvCPU(rw *row) string {
	if rw.subject[0].External {
		return us(rw.srvSubject)
	}
	return dash
}

func target(sc bench.Scenario) string {
	if sc.Target == 0 {
		return dash
	}
	return fmt.Sprintf("≥ %.1f", sc.Target)
}

func writeThroughput(w io.Writer, rn *run) {
	fmt.Fprintln(w, "### Throughput against the ceiling")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "a-a sends renew's requests to two trivial servers in this process, one as the ceiling and the other in place of the row's server, alternating as every scenario does: both sides do the same work, so its ratio is 1 but for chance, and its distance from 1 shows how far this run's ratios move by chance.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "register re-registers the loaded instances (the size stays fixed); register-fresh registers a new instance id with every request (the registry and the delta window grow by the rounds' requests); cancel cancels those instances again, oldest first, each round an equal share (a round ends at its duration or when its share is cancelled).")
	fmt.Fprintln(w)
	tableHeader(w, "scenario", "instances", "server", "req/s", "ceiling", "ceiling req/s", "ratio (wall) = req/s ÷ ceiling req/s",
		"CPU µs/req", "ceiling CPU µs/req", "ratio (CPU) = ceiling CPU µs/req ÷ CPU µs/req", "server process CPU µs/req", "B/resp",
		"target", "result", "load")
	for _, sc := range bench.Scenarios {
		for _, size := range rn.sizes() {
			for _, server := range rn.servers() {
				rw := rn.row(server, size, sc.Name)
				if rw == nil {
					continue
				}
				tableRow(w, sc.Name, fmt.Sprint(size), server, rate(rw.rateSubject), sc.Ceiling, rate(rw.rateCeiling),
					fmt.Sprintf("%.2f", rw.ratioWall), us(rw.cpuSubject), us(rw.cpuCeiling), fmt.Sprintf("%.2f", rw.ratioCPU),
					srvCPU(rw), fmt.Sprintf("%.0f", rw.bytesPerResp), target(sc), rw.verdict(), fmt.Sprintf("%.2f", rw.load))
			}
		}
	}
	fmt.Fprintln(w)
}

// writeComparison compares every server with the first (Heureka) per
// scenario and size.
func writeComparison(w io.Writer, rn *run) {
	servers := rn.servers()
	base := servers[0]
	fmt.Fprintln(w, "### Heureka and the reference server")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "The same loads, one server at a time, each loaded over HTTP and warmed up for %v per scenario first. req/s and server process CPU µs/req are the medians of the throughput table.\n\n", rn.opts.warmup)
	cells := []string{"scenario", "instances", base + " req/s"}
	for _, s := range servers[1:] {
		cells = append(cells, s+" req/s", fmt.Sprintf("%s ÷ %s = %s req/s ÷ %s req/s", base, s, base, s))
	}
	for _, s := range servers {
		cells = append(cells, s+" server CPU µs/req")
	}
	tableHeader(w, cells...)
	for _, sc := range bench.Scenarios {
		for _, size := range rn.sizes() {
			b := rn.row(base, size, sc.Name)
			if b == nil {
				continue
			}
			cells := []string{sc.Name, fmt.Sprint(size), rate(b.rateSubject)}
			for _, s := range servers[1:] {
				if rw := rn.row(s, size, sc.Name); rw != nil {
					cells = append(cells, rate(rw.rateSubject), fmt.Sprintf("%.2f", safeDiv(b.rateSubject, rw.rateSubject)))
				} else {
					cells = append(cells, dash, dash)
				}
			}
			for _, s := range servers {
				if rw := rn.row(s, size, sc.Name); rw != nil {
					cells = append(cells, srvCPU(rw))
				} else {
					cells = append(cells, dash)
				}
			}
			tableRow(w, cells...)
		}
	}
	fmt.Fprintln(w)
}

// writeCost prints, per server, the CPU time per operation at each size
// and its growth from the smallest size to the largest.
func writeCost(w io.Writer, rn *run) {
	sizes := rn.sizes()
	fmt.Fprintln(w, "### Cost vs size")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CPU time per operation at each registry size (medians over the rounds). In-process, CPU µs/op includes the load generator, which the ceiling's CPU µs/op (the same requests to an empty 200 or to a static server) shows alone; for a server process the server process's own CPU µs/op is given. deploy registers the deploy's new instances at once, undeploy cancels them.")
	fmt.Fprintln(w)
	for _, server := range rn.servers() {
		external := false
		if r := rn.report(server, sizes[0]); r != nil {
			for _, rw := range r.rows {
				if rw.sc.Name != bench.AA { // a-a's subject is in this process
					external = rw.subject[0].External
					break
				}
			}
		}
		kind, other := "CPU µs/op", "ceiling CPU µs/op"
		if external {
			kind, other = "server process CPU µs/op", "CPU µs/op"
		}
		fmt.Fprintf(w, "%s:\n\n", server)
		cells := []string{"operation"}
		for _, size := range sizes {
			cells = append(cells, fmt.Sprintf("@%d %s", size, kind), fmt.Sprintf("@%d %s", size, other))
		}
		first, last := sizes[0], sizes[len(sizes)-1]
		if len(sizes) > 1 {
			cells = append(cells, fmt.Sprintf("growth = @%d %s ÷ @%d %s", last, kind, first, kind))
		}
		tableHeader(w, cells...)
		type fig struct{ main, other float64 }
		ops := []string{}
		for _, sc := range bench.Scenarios {
			if sc.Name == bench.AA && external {
				continue // no server process serves it
			}
			ops = append(ops, sc.Name)
		}
		ops = append(ops, "deploy", "undeploy")
		for _, op := range ops {
			figs := map[int]*fig{}
			for _, size := range sizes {
				r := rn.report(server, size)
				if r == nil {
					continue
				}
				switch op {
				case "deploy", "undeploy":
					if r.deploy == nil {
						continue
					}
					res := r.deploy.deploy
					if op == "undeploy" {
						res = r.deploy.undeploy
					}
					f := &fig{main: cpuPerOp(res), other: -1}
					if external {
						f.main, f.other = float64(res.ServerCPUPerRequest())/float64(time.Microsecond), cpuPerOp(res)
					}
					figs[size] = f
				default:
					rw := rn.row(server, size, op)
					if rw == nil {
						continue
					}
					f := &fig{main: float64(rw.cpuSubject) / float64(time.Microsecond), other: float64(rw.cpuCeiling) / float64(time.Microsecond)}
					if external {
						f.main, f.other = float64(rw.srvSubject)/float64(time.Microsecond), f.main
					}
					figs[size] = f
				}
			}
			if len(figs) == 0 {
				continue
			}
			cells := []string{op}
			for _, size := range sizes {
				f := figs[size]
				switch {
				case f == nil:
					cells = append(cells, dash, dash)
				case f.other < 0:
					cells = append(cells, usf(f.main), dash)
				default:
					cells = append(cells, usf(f.main), usf(f.other))
				}
			}
			if len(sizes) > 1 {
				if figs[first] != nil && figs[last] != nil {
					cells = append(cells, fmt.Sprintf("%.2f", safeDiv(figs[last].main, figs[first].main)))
				} else {
					cells = append(cells, dash)
				}
			}
			tableRow(w, cells...)
		}
		fmt.Fprintln(w)
	}
}

func writeFlat(w io.Writer, rn *run) {
	sizes := rn.sizes()
	first, last := sizes[0], sizes[len(sizes)-1]
	fmt.Fprintln(w, "### Flat in registry size")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The ratio to the ceiling at each size (from the throughput table) and its growth from the smallest size to the largest. The sizes run minutes apart, so absolute CPU per request moves with the machine's load; the ratios are measured against a ceiling run seconds apart. Flat means the growth is at least 0.8.")
	fmt.Fprintln(w)
	for _, server := range rn.servers() {
		fmt.Fprintf(w, "%s:\n\n", server)
		cells := []string{"scenario"}
		for _, kind := range []string{"wall", "CPU"} {
			for _, size := range sizes {
				cells = append(cells, fmt.Sprintf("@%d ratio (%s)", size, kind))
			}
			cells = append(cells, fmt.Sprintf("%s growth = @%d ratio (%s) ÷ @%d ratio (%s)", kind, last, kind, first, kind))
		}
		cells = append(cells, "result")
		tableHeader(w, cells...)
		for _, name := range []string{"renew", "register", "register-fresh", "cancel", "app", "delta"} {
			a, b := rn.row(server, first, name), rn.row(server, last, name)
			if a == nil || b == nil {
				continue
			}
			cells := []string{name}
			var growth [2]float64
			for k, ratio := range []func(*row) float64{func(rw *row) float64 { return rw.ratioWall }, func(rw *row) float64 { return rw.ratioCPU }} {
				for _, size := range sizes {
					if rw := rn.row(server, size, name); rw != nil {
						cells = append(cells, fmt.Sprintf("%.2f", ratio(rw)))
					} else {
						cells = append(cells, dash)
					}
				}
				growth[k] = safeDiv(ratio(b), ratio(a))
				cells = append(cells, fmt.Sprintf("%.2f", growth[k]))
			}
			res := "flat"
			switch gw, gc := growth[0] >= 0.8, growth[1] >= 0.8; {
			case !gw && !gc:
				res = "**not flat**"
			case !gw:
				res = "borderline (wall not flat, CPU flat)"
			case !gc:
				res = "borderline (wall flat, CPU not flat)"
			}
			if b.sc.Target == 0 || name == "renew" || name == "app" {
				res += " (not a target)"
			}
			tableRow(w, append(cells, res)...)
		}
		fmt.Fprintln(w)
	}
}

func writeDeploy(w io.Writer, rn *run) {
	any := false
	for _, r := range rn.reports {
		any = any || r.deploy != nil
	}
	if !any {
		return
	}
	fmt.Fprintln(w, "### Deploy")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d new instances (new ids spread over the applications) registered at once over %d connections into the loaded registry, then cancelled again. In-process the delta window is emptied first, so the delta after the deploy holds exactly the deploy; a server process's window also holds what changed in the 3 minutes before.\n\n", rn.opts.deploy, bench.Concurrency())
	tableHeader(w, "instances", "server", "new instances", "deploy ms", "deploy req/s", "deploy CPU µs/op", "deploy server process CPU µs/op",
		"cancel ms", "cancel CPU µs/op", "delta after the deploy, gzip bytes", "load")
	for _, r := range rn.reports {
		d := r.deploy
		if d == nil {
			continue
		}
		srv := dash
		if d.deploy.External {
			srv = usf(float64(d.deploy.ServerCPUPerRequest()) / float64(time.Microsecond))
		}
		tableRow(w, fmt.Sprint(r.size), r.server, fmt.Sprint(d.deploy.Requests), msf(d.deploy.Elapsed), rate(d.deploy.Rate()),
			usf(cpuPerOp(d.deploy)), srv, msf(d.undeploy.Elapsed), usf(cpuPerOp(d.undeploy)), fmt.Sprint(d.deltaBytes),
			fmt.Sprintf("%.2f", d.load))
	}
	fmt.Fprintln(w)
}

func writeChurnReads(w io.Writer, rn *run) {
	any := false
	for _, r := range rn.reports {
		any = any || len(r.reads) > 0
	}
	if !any {
		return
	}
	conc := bench.Concurrency()
	fmt.Fprintln(w, "### Reads under churn")
	fmt.Fprintln(w)
	pace := "as fast as they go"
	if rn.opts.underChurnRate > 0 {
		pace = fmt.Sprintf("held together to %.0f pairs/s (%.0f writes/s)", rn.opts.underChurnRate, 2*rn.opts.underChurnRate)
	}
	fmt.Fprintf(w, "Each document read on %d connections for %v with no writes (quiet), then for %v while %d other connections churn, %s (each pair registers a new instance into the application of the oldest instance and cancels that one, so the registry and every application keep their size and every change lands in the delta window). In process the delta window is held at the changes of the last %v (the view's delta clock runs 3 min ÷ %v as fast; Fixture.HoldDeltaWindow), filled by the same churn before the quiet round and frozen during it, so every round reads a delta of the same steady size. The static ceiling under churn is the static server writing the document as Heureka served it, read for %v while the same churn runs against Heureka. Static and Heureka rounds alternate, %d of Heureka's between %d of the static server's (static, Heureka, …, static); \"under churn req/s\" and \"static under churn req/s\" are the medians of each side's rounds, and the rounds' lowest and highest rates are beside them. Register p99 is over the churn's registrations in Heureka's rounds, request sent to 204 read, and, for comparison, over those of the static rounds (the same registrations to Heureka while the static server's readers keep the CPUs busy); B/resp and CPU are over all of a side's rounds; targets: reads ≥ 0.8 of static under churn, register p99 ≤ 5 ms at 1,000 writes/s.\n\n",
		max(1, conc/2), rn.opts.underChurn, rn.opts.underChurn, max(1, conc/2), pace, rn.opts.underChurn, rn.opts.underChurn, rn.opts.underChurn, rn.opts.rounds, rn.opts.rounds+1)
	tableHeader(w, "instances", "server", "read", "quiet req/s", "under churn req/s", "under churn rounds req/s", "under churn ÷ quiet = under churn req/s ÷ quiet req/s",
		"static under churn req/s", "static rounds req/s", "under churn ÷ static = under churn req/s ÷ static under churn req/s",
		"churn pairs/s", "register p99 ms", "registrations", "register p99 ms during the static rounds", "registrations during the static rounds", "quiet B/resp", "under churn B/resp", "static B/resp", "load")
	for _, r := range rn.reports {
		for _, cr := range r.reads {
			reads, static := medianRate(cr.reads), medianRate(cr.statics)
			tableRow(w, fmt.Sprint(r.size), r.server, cr.doc, rate(cr.quiet.Rate()), rate(reads), rateRange(cr.reads),
				fmt.Sprintf("%.2f", safeDiv(reads, cr.quiet.Rate())),
				rate(static), rateRange(cr.statics),
				fmt.Sprintf("%.2f", safeDiv(reads, static)), rate(cr.pairs.Rate()),
				fmt.Sprintf("%.2f", float64(cr.regP99)/float64(time.Millisecond)), fmt.Sprint(cr.regs),
				fmt.Sprintf("%.2f", float64(cr.staticRegP99)/float64(time.Millisecond)), fmt.Sprint(cr.staticRegs),
				perResp(cr.quiet), perResp(summed(cr.reads)), perResp(summed(cr.statics)),
				fmt.Sprintf("%.2f", cr.load))
		}
	}
	fmt.Fprintln(w)
}

// perResp is r's bytes per response.
func perResp(r bench.Result) string {
	return fmt.Sprintf("%.0f", safeDiv(float64(r.Bytes), float64(r.Requests)))
}

func writeChurnAlone(w io.Writer, rn *run) {
	any := false
	for _, r := range rn.reports {
		any = any || r.alone != nil
	}
	if !any {
		return
	}
	fmt.Fprintln(w, "### Registrations under churn")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "The churn of the reads under churn run alone for %v on %d connections, before the reads: how long its registrations took (request sent to 204 read) while nothing else runs. Target: register p99 ≤ 5 ms at 1,000 writes/s.\n\n",
		rn.opts.underChurn, max(1, bench.Concurrency()/2))
	tableHeader(w, "instances", "server", "churn pairs/s", "register p99 ms", "registrations", "load")
	for _, r := range rn.reports {
		if a := r.alone; a != nil {
			tableRow(w, fmt.Sprint(r.size), r.server, rate(a.pairs.Rate()),
				fmt.Sprintf("%.2f", float64(a.regP99)/float64(time.Millisecond)), fmt.Sprint(a.regs), fmt.Sprintf("%.2f", a.load))
		}
	}
	fmt.Fprintln(w)
}

// churnLimits are the churn run's targets: the pair rate of every window
// within ±15% of the first window's, and the server's RSS at most 1 GiB.
const (
	churnRateTolerance = 0.15
	churnMaxRSS        = 1 << 30
)

func writeChurn(w io.Writer, rn *run) {
	if len(rn.churns) == 0 {
		return
	}
	fmt.Fprintln(w, "### Churn at a fixed size")
	fmt.Fprintln(w)
	for _, cr := range rn.churns {
		wins := cr.run.Windows(cr.window)
		where := "the server process's /proc/PID/status"
		if cr.server == inProcess {
			where = "this process's /proc/self/status (server and load generator); the node sweeps at the production eviction interval, which forgets expired tombstones"
		}
		pace := "as fast as the connections go"
		if cr.run.Pace > 0 {
			pace = fmt.Sprintf("held to %.0f pairs/s", cr.run.Pace)
		}
		fmt.Fprintf(w, "%s: every operation registers a new instance id (in the application of the oldest instance) and cancels the oldest; %d instances, %d connections, %s, %v (%d windows of %v); RSS (VmRSS) from %s every %v; registration times (request sent to response read) in buckets 2%% wide, a percentile given as its bucket's upper bound; load average %s at start, %s at end. %d pairs in all.\n\n",
			cr.server, cr.run.Size, cr.run.Conns, pace, cr.run.Result.Elapsed.Round(time.Second), len(wins), cr.window, where,
			rn.opts.churnSample, cr.load0, cr.load1, cr.run.Result.Requests)
		if len(wins) == 0 {
			fmt.Fprintf(w, "(too short for one window)\n\n")
			continue
		}
		tableHeader(w, "from s", "to s", "pairs/s", "first window pairs/s", "÷ first = pairs/s ÷ first window pairs/s", "max RSS MiB", "server CPU µs/pair",
			"register p99 / p99.9 / max ms", "result")
		ok := true
		for _, win := range wins {
			q := safeDiv(win.Rate, wins[0].Rate)
			res := "within ±15%"
			if q < 1-churnRateTolerance || q > 1+churnRateTolerance {
				res, ok = "**outside ±15%**", false
			}
			tableRow(w, fmt.Sprintf("%.0f", win.From.Seconds()), fmt.Sprintf("%.0f", win.To.Seconds()), rate(win.Rate), rate(wins[0].Rate),
				fmt.Sprintf("%.2f", q), mb(win.MaxRSS), us(win.CPUPer),
				msf(win.Regs.Percentile(99))+" / "+msf(win.Regs.Percentile(99.9))+" / "+msf(win.Regs.Max()), res)
		}
		rss := cr.run.MaxRSS()
		verdict := "pass"
		if !ok || rss > churnMaxRSS {
			verdict = "**miss**"
		}
		fmt.Fprintf(w, "\nPair rate within ±15%% of the first window in every window: %v; max RSS %s MiB (target ≤ 1024 MiB): %v. Result: %s.\n\n",
			yes(ok), mb(rss), yes(rss <= churnMaxRSS), verdict)
		if cr.live > 0 {
			fmt.Fprintf(w, "Live heap at the end, after a collection (server and load generator): %s MiB.\n\n", mb(int64(cr.live)))
		}
	}
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// The performance goals for register-to-readable latency and for the
// registry's live heap per instance (every size; the goals name 1M).
const (
	readableP99Goal = 2 * time.Millisecond
	heapGoal        = 1024 // bytes of live heap per instance, registry state
)

func writeReadable(w io.Writer, rn *run) {
	fmt.Fprintln(w, "### Register to readable")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "One registration at a time (a new instance each, cancelled afterwards, untimed), then GET /eureka/apps/{app} (JSON, the cached read path) until the body holds the instance; %d samples per size. The floor is one GET of an application document from the static server after each sample: a single round trip under the same conditions.\n\n", rn.opts.samples)
	tableHeader(w, "instances", "samples", "p50 ms", "p99 ms", "max ms", "p99 from sending the register, ms", "GETs that missed",
		"floor p50 ms", "floor p99 ms", "floor max ms", "target", "result")
	for _, r := range rn.reports {
		res := "pass"
		if r.p99 > readableP99Goal {
			res = "**miss**"
		}
		tableRow(w, fmt.Sprint(r.size), fmt.Sprint(r.readableSamples), msf(r.p50), msf(r.p99), msf(r.max), msf(r.p99Send),
			fmt.Sprint(r.lat.Polls), msf(r.floorP50), msf(r.floorP99), msf(r.floorMax), fmt.Sprintf("p99 ≤ %g ms", float64(readableP99Goal)/float64(time.Millisecond)), res)
	}
	fmt.Fprintln(w)
}

func writeSizes(w io.Writer, rn *run) {
	fmt.Fprintln(w, "### Response sizes (full registry)")
	fmt.Fprintln(w)
	tableHeader(w, "instances", "JSON bytes", "XML bytes", "gzip JSON bytes", "JSON / gzip = JSON bytes ÷ gzip JSON bytes", "target", "result",
		"first full fetch after a change: plain JSON ms", "gzip JSON ms")
	for _, r := range rn.reports {
		h := r.heap
		ratio := safeDiv(float64(h.FullJSON), float64(h.FullGzip))
		res := "pass"
		if ratio < 10 {
			res = "**miss**"
		}
		xml := fmt.Sprint(h.FullXML)
		if h.JSONOnly {
			xml = "not run"
		}
		tableRow(w, fmt.Sprint(r.size), fmt.Sprint(h.FullJSON), xml, fmt.Sprint(h.FullGzip), fmt.Sprintf("%.1f×", ratio),
			"≥ 10×", res, msf(r.rebuildPlain), msf(r.rebuildGzip))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "### Heap per instance")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Live heap after runtime.GC, as the difference before/after loading (registry state, no read yet, delta window aged out), then after warming the full document in all four formats plain and gzip (per-application encoded elements and gzip pieces plus the eight assembled documents), then after warming every application's document in all formats plain and gzip. Measured on a registry of its own, stopped before the scenarios' registry loads. Above %d instances only the full JSON document, plain and gzip, is warmed (\"JSON only\"; every format and application document would hold about 14 GB at 1M).\n", bench.WarmEveryFormatUpTo)
	fmt.Fprintln(w)
	tableHeader(w, "instances", "load time", "registry state B/inst", "full-document caches B/inst", "app-document caches B/inst",
		"total warm B/inst", "target (state)", "result")
	for _, r := range rn.reports {
		h := r.heap
		res := "pass"
		if h.PerInstance(h.State) > heapGoal {
			res = "**miss**"
		}
		full, apps := fmt.Sprintf("%.0f", h.PerInstance(h.FullCaches)), fmt.Sprintf("%.0f", h.PerInstance(h.AppCaches))
		total := fmt.Sprintf("%.0f", h.PerInstance(h.State+h.FullCaches+h.AppCaches))
		if h.JSONOnly {
			full, apps, total = full+" (JSON only)", "not run", total+" (JSON only)"
		}
		tableRow(w, fmt.Sprint(r.size), fmt.Sprintf("%.1f s", r.loadTime.Seconds()), fmt.Sprintf("%.0f", h.PerInstance(h.State)),
			full, apps, total, fmt.Sprintf("≤ %d", heapGoal), res)
	}
	fmt.Fprintln(w)
}

// gcSettings names this process's collector settings (GOGC and the soft
// memory limit, GOMEMLIMIT), which set how far RSS runs above the live heap.
func gcSettings() string {
	gogc := os.Getenv("GOGC")
	if gogc == "" {
		gogc = "100"
	}
	limit := "none"
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		limit = fmt.Sprintf("%d MiB", l>>20)
	}
	return fmt.Sprintf("GOGC=%s, memory limit %s", gogc, limit)
}
