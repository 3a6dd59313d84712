// Command heureka-sim runs Heureka cluster simulations and reports on them.
//
// Usage:
//
//	heureka-sim [-scenario all|name[,name…]] [-seed n | -seeds n] [-nodes n] [-duration d] [-short]
//	            [-parallel n] [-out file] [-report dir] [-v level]
//	heureka-sim -sabotage all|switch[,switch…] [-scenario …] [-parallel n] [-out file]   (built with -tags sabotage)
//
// Each scenario starts a cluster of in-process nodes on a seeded in-memory
// network, drives simulated Eureka clients and faults through it, and judges
// the run by invariants (see simulations/README.md). The Markdown report goes
// to -out, or to standard output. With -report DIR it goes, with charts of
// every run (SVG: registry size, live members and self-preservation per
// node, replication lag, convergence, the fault windows shaded), to
// DIR/report.md and DIR/report.html instead of standard output.
//
// On a terminal, standard error shows a status line rewritten in place (runs
// done, passes and failures, elapsed time, the runs under way and their
// latest event); elsewhere (a CI log) one line per finished run. With -v the
// nodes log at that level and every timeline event gets a line instead.
//
// With -seeds N every chosen scenario runs with seeds 1..N, -parallel at a
// time, and the report is a summary over the runs (simulations/RESULTS.md):
// per scenario and invariant the passes and the p50/p99/max of its key
// figure, and for each failing run the command that replays it.
//
// With -sabotage the harness runs, for every named switch of
// internal/sabotage (one switch at a time), the scenarios
// simulations.SabotagePlan names for it at their short durations, after a
// control round without any switch, and reports which verdicts caught each
// switch; it fails unless every switch was caught. A -scenario list other
// than all replaces the plan: every switch runs those scenarios.
//
// The exit status is 0 when every run passed (every switch was caught), 1
// otherwise, 2 on bad usage.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/simulations"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	// The revision the nodes were built from: read it before the runs, as
	// the tree may move on while they last.
	rev := revision()
	fs := flag.NewFlagSet("heureka-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, sc := range simulations.Scenarios {
		names = append(names, sc.Name)
	}
	scenario := fs.String("scenario", "all", "scenarios to run: all, or a comma-separated list of "+strings.Join(names, ", "))
	seed := fs.Int64("seed", 1, "seed of every random choice")
	seeds := fs.Int("seeds", 0, "run every chosen scenario with seeds 1..n and write a summary over the runs (with -sabotage: run every switch's scenarios, and the control, over seeds 1..n)")
	nodes := fs.Int("nodes", 5, "cluster size (at least 3)")
	duration := fs.Duration("duration", 0, "main phase of each scenario (0: each scenario's default)")
	short := fs.Bool("short", false, "run each scenario as the tests do: its short duration and timers, a one-second settle tail")
	parallel := fs.Int("parallel", 1, "runs at a time (-seeds and -sabotage; different switches never run together)")
	sabotageFlag := fs.String("sabotage", "", "run the sabotage harness for all switches or a comma-separated list (needs -tags sabotage)")
	out := fs.String("out", "", "write the Markdown report to this file instead of standard output")
	verbose := fs.String("v", "", "log the nodes at this level to standard error (debug, info, warn, error), and print every timeline event")
	reportDir := fs.String("report", "", "write report.md, report.html and SVG charts of every run into this directory (instead of the Markdown on standard output; -out still writes it)")
	wireCost := fs.String("wire-cost", "", "instead of scenarios, count replication messages per renewal and per registration at these cluster sizes (e.g. 5,10,20,50)")
	failures := fs.String("failures", "", "with -seeds: write the full report of every failing run to DIR/<scenario>-seed<n>.md")
	joinLoaded := fs.Int("join-loaded", 0, "instead of scenarios, join a node to a 3-node cluster holding this many instances under churn (e.g. 100000)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (every node shares this process) to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "heureka-sim: -cpuprofile: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "heureka-sim: -cpuprofile: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "heureka-sim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var chosen []simulations.Scenario
	if *scenario == "all" {
		chosen = simulations.Scenarios
	} else {
		for _, n := range strings.Split(*scenario, ",") {
			sc, ok := simulations.ScenarioByName(strings.TrimSpace(n))
			if !ok {
				fmt.Fprintf(stderr, "heureka-sim: unknown scenario %q (want all or some of %s)\n", n, strings.Join(names, ", "))
				return 2
			}
			chosen = append(chosen, sc)
		}
	}
	if *seeds < 0 || *parallel < 1 {
		fmt.Fprintf(stderr, "heureka-sim: -seeds must not be negative and -parallel must be positive\n")
		return 2
	}
	var logger *slog.Logger
	if *verbose != "" {
		var lv slog.Level
		if err := lv.UnmarshalText([]byte(*verbose)); err != nil {
			fmt.Fprintf(stderr, "heureka-sim: -v: %v\n", err)
			return 2
		}
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	}
	batch := *seeds > 0 || *sabotageFlag != ""
	if *reportDir != "" && *sabotageFlag != "" {
		fmt.Fprintf(stderr, "heureka-sim: -report does not apply to -sabotage\n")
		return 2
	}
	// prog shows the runs' progress (set before any run starts) unless -v
	// prints every event.
	var prog *simulations.Progress
	configFor := func(sc simulations.Scenario, seed int64, short bool) simulations.Config {
		cfg := simulations.DefaultConfig()
		if short {
			cfg = simulations.ShortConfig(sc, seed)
		}
		cfg.Seed, cfg.Nodes = seed, *nodes
		if *duration > 0 {
			cfg.Duration = *duration
		}
		if logger != nil {
			cfg.Logger = logger
		}
		switch {
		case *verbose != "" && !batch:
			cfg.Progress = func(name string, ev simulations.Event) {
				fmt.Fprintf(stderr, "%-24s +%5.1fs  %-16s %s\n", name, ev.At.Seconds(), ev.Kind, ev.Detail)
			}
		case *verbose == "":
			cfg.Progress = func(name string, ev simulations.Event) {
				if prog != nil {
					prog.Event(name, seed, ev)
				}
			}
		}
		return cfg
	}
	probe := configFor(chosen[0], *seed, *short)
	if err := probe.Validate(); err != nil {
		fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := strings.TrimSpace("go run " + buildTags() + "./simulations/cmd/heureka-sim " + strings.Join(args, " "))
	hdr := simulations.ReportHeader{Command: cmd, GoVersion: runtime.Version(), Revision: rev}
	started := time.Now()

	var write func(w io.Writer) error
	var reported []*simulations.Result // what -report draws
	ok := true
	switch {
	case *wireCost != "":
		var costs []simulations.WireCost
		for _, f := range strings.Split(*wireCost, ",") {
			var n int
			if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 3 || n > 50 {
				fmt.Fprintf(stderr, "heureka-sim: -wire-cost: %q is not a cluster size from 3 to 50\n", f)
				return 2
			}
			cfg := simulations.DefaultConfig()
			cfg.Seed, cfg.Nodes = *seed, n
			if logger != nil {
				cfg.Logger = logger
			}
			w, err := simulations.MeasureWireCost(ctx, cfg, 2, 10, 10*time.Second)
			if err != nil {
				fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
				return 1
			}
			fmt.Fprintf(stderr, "%3d nodes: %.2f messages per renewal, %.2f record messages per registration per peer, %.1f messages per node per second\n",
				n, w.PerRenewal(), w.PerRegistrationPerPeer(), w.MessagesPerNodeSecond())
			costs = append(costs, w)
		}
		if err := simulations.CheckWireCost(costs); err != nil {
			fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
			ok = false
		}
		write = func(w io.Writer) error {
			hdr.Generated = time.Now()
			return simulations.WriteWireCost(w, hdr, costs)
		}
	case *joinLoaded > 0:
		cfg := simulations.DefaultConfig()
		cfg.Seed = *seed
		if logger != nil {
			cfg.Logger = logger
		}
		cfg.Progress = func(name string, ev simulations.Event) {
			fmt.Fprintf(stderr, "%-24s +%5.1fs  %-16s %s\n", name, ev.At.Seconds(), ev.Kind, ev.Detail)
		}
		res, err := simulations.RunJoinLoaded(ctx, cfg, *joinLoaded)
		if err != nil {
			fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
			return 1
		}
		ok = res.Pass
		fmt.Fprintf(stderr, "%-24s %s\n", res.Scenario, simulations.VerdictLine(res))
		write = func(w io.Writer) error {
			hdr.Generated = time.Now()
			return simulations.WriteReport(w, hdr, []*simulations.Result{res})
		}
	case *sabotageFlag != "":
		var switches []sabotage.Switch
		if *sabotageFlag == "all" {
			switches = sabotage.All
		} else {
			for _, n := range strings.Split(*sabotageFlag, ",") {
				switches = append(switches, sabotage.Switch(strings.TrimSpace(n)))
			}
		}
		// -scenario other than all replaces the plan: every switch runs
		// the named scenarios (to look for a scenario that catches one).
		var plan map[sabotage.Switch][]string
		if *scenario != "all" {
			plan = map[sabotage.Switch][]string{}
			for _, sw := range switches {
				for _, sc := range chosen {
					plan[sw] = append(plan[sw], sc.Name)
				}
			}
		}
		runSeeds := []int64{*seed}
		if *seeds > 0 {
			runSeeds = runSeeds[:0]
			for sd := int64(1); sd <= int64(*seeds); sd++ {
				runSeeds = append(runSeeds, sd)
			}
		}
		runs, err := simulations.RunSabotage(ctx, switches, plan, runSeeds, func(sc simulations.Scenario, sd int64) simulations.Config {
			return configFor(sc, sd, true)
		}, *parallel, func(line string) { fmt.Fprintln(stderr, line) })
		if err != nil {
			fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
			if len(runs) == 0 {
				return 2
			}
			ok = false
		}
		write = func(w io.Writer) error {
			hdr.Generated = time.Now()
			caught, err := simulations.WriteSabotageReport(w, hdr, runs)
			ok = ok && caught
			return err
		}
	case *seeds > 0:
		var jobs []simulations.Job
		for _, sc := range chosen {
			for sd := int64(1); sd <= int64(*seeds); sd++ {
				jobs = append(jobs, simulations.Job{Scenario: sc, Config: configFor(sc, sd, *short)})
			}
		}
		prog = simulations.NewProgress(stderr, len(jobs))
		results := simulations.RunAll(ctx, jobs, *parallel, func(_ int, r *simulations.Result) { prog.Finished(r) })
		prog.Close()
		reported = results
		for _, r := range results {
			ok = ok && r.Pass
		}
		if *failures != "" {
			if err := writeFailures(*failures, hdr, results); err != nil {
				fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
			}
		}
		replay := func(r *simulations.Result) string {
			c := fmt.Sprintf("go run ./simulations/cmd/heureka-sim -scenario %s -seed %d", r.Scenario, r.Seed)
			if *nodes != 5 {
				c += fmt.Sprintf(" -nodes %d", *nodes)
			}
			if *duration > 0 {
				c += fmt.Sprintf(" -duration %v", *duration)
			}
			if *short {
				c += " -short"
			}
			return c
		}
		write = func(w io.Writer) error {
			hdr.Generated = time.Now()
			return simulations.WriteResults(w, hdr, results, replay)
		}
	default:
		var jobs []simulations.Job
		for _, sc := range chosen {
			jobs = append(jobs, simulations.Job{Scenario: sc, Config: configFor(sc, *seed, *short)})
		}
		prog = simulations.NewProgress(stderr, len(jobs))
		results := simulations.RunAll(ctx, jobs, *parallel, func(_ int, r *simulations.Result) { prog.Finished(r) })
		prog.Close()
		reported = results
		for _, r := range results {
			ok = ok && r.Pass
		}
		write = func(w io.Writer) error {
			hdr.Generated = time.Now()
			return simulations.WriteReport(w, hdr, results)
		}
	}
	fmt.Fprintf(stderr, "heureka-sim: done in %v\n", time.Since(started).Round(time.Second))

	w := stdout
	if *reportDir != "" && *out == "" {
		w = io.Discard // the report is in the directory
	}
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	if err := write(w); err != nil {
		fmt.Fprintf(stderr, "heureka-sim: write report: %v\n", err)
		return 1
	}
	if *reportDir != "" {
		if err := simulations.WriteReportDir(*reportDir, hdr, reported); err != nil {
			fmt.Fprintf(stderr, "heureka-sim: -report: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "heureka-sim: report and charts in %s\n", filepath.Join(*reportDir, "report.html"))
	}
	if !ok {
		return 1
	}
	return 0
}

// writeFailures writes the full report of every failing run in results to
// dir/<scenario>-seed<n>.md.
func writeFailures(dir string, hdr simulations.ReportHeader, results []*simulations.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hdr.Generated = time.Now()
	for _, r := range results {
		if r.Pass {
			continue
		}
		var b strings.Builder
		if err := simulations.WriteReport(&b, hdr, []*simulations.Result{r}); err != nil {
			return err
		}
		name := filepath.Join(dir, fmt.Sprintf("%s-seed%d.md", r.Scenario, r.Seed))
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// buildTags is "-tags sabotage " in a sabotage build, for the command
// line a report names.
func buildTags() string {
	if sabotage.Enabled {
		return "-tags sabotage "
	}
	return ""
}

// revision names the source the simulated nodes were built from: the VCS
// stamp of the binary, or else (go run) what git says, or "".
func revision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = " with uncommitted changes"
				}
			}
		}
		if rev != "" {
			return rev[:min(12, len(rev))] + dirty
		}
	}
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		rev += " with uncommitted changes"
	}
	return rev
}
