// Command heureka-sim runs Heureka cluster simulations and reports on them.
//
// Usage:
//
//	heureka-sim [-scenario name|all] [-seed n] [-nodes n] [-duration d] [-out file] [-v level]
//
// Each scenario starts a cluster of in-process nodes on a seeded in-memory
// network, drives simulated Eureka clients and faults through it, and judges
// the run by invariants (see simulations/README.md). The Markdown report goes
// to -out, or to standard output; a progress line per event goes to standard
// error. The exit status is 0 when every scenario passed, 1 when one failed,
// 2 on bad usage.
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
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

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
	scenario := fs.String("scenario", "all", "scenario to run: all, or one of "+strings.Join(names, ", "))
	seed := fs.Int64("seed", 1, "seed of every random choice")
	nodes := fs.Int("nodes", 5, "cluster size (at least 3)")
	duration := fs.Duration("duration", 0, "main phase of each scenario (0: each scenario's default)")
	out := fs.String("out", "", "write the Markdown report to this file instead of standard output")
	verbose := fs.String("v", "", "log the nodes at this level to standard error (debug, info, warn, error)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "heureka-sim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var run []simulations.Scenario
	if *scenario == "all" {
		run = simulations.Scenarios
	} else {
		sc, ok := simulations.ScenarioByName(*scenario)
		if !ok {
			fmt.Fprintf(stderr, "heureka-sim: unknown scenario %q (want all or one of %s)\n", *scenario, strings.Join(names, ", "))
			return 2
		}
		run = []simulations.Scenario{sc}
	}

	cfg := simulations.DefaultConfig()
	cfg.Seed, cfg.Nodes, cfg.Duration = *seed, *nodes, *duration
	if *verbose != "" {
		var lv slog.Level
		if err := lv.UnmarshalText([]byte(*verbose)); err != nil {
			fmt.Fprintf(stderr, "heureka-sim: -v: %v\n", err)
			return 2
		}
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	}
	cfg.Progress = func(sc string, ev simulations.Event) {
		fmt.Fprintf(stderr, "%-20s +%5.1fs  %-16s %s\n", sc, ev.At.Seconds(), ev.Kind, ev.Detail)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var results []*simulations.Result
	for _, sc := range run {
		res, err := simulations.Run(ctx, sc, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "heureka-sim: %s: %v\n", sc.Name, err)
			res = &simulations.Result{Scenario: sc.Name, Summary: sc.Summary, Seed: cfg.Seed, Nodes: cfg.Nodes, Err: err.Error()}
		}
		results = append(results, res)
		fmt.Fprintf(stderr, "%-20s %s\n", sc.Name, verdictLine(res))
		if ctx.Err() != nil {
			break
		}
	}

	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintf(stderr, "heureka-sim: %v\n", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	cmd := "go run ./simulations/cmd/heureka-sim " + strings.Join(args, " ")
	hdr := simulations.ReportHeader{Command: strings.TrimSpace(cmd), Generated: time.Now(), GoVersion: runtime.Version(), Revision: rev}
	if err := simulations.WriteReport(w, hdr, results); err != nil {
		fmt.Fprintf(stderr, "heureka-sim: write report: %v\n", err)
		return 1
	}
	for _, r := range results {
		if !r.Pass {
			return 1
		}
	}
	return 0
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

// verdictLine summarises a result in one line.
func verdictLine(r *simulations.Result) string {
	if r.Err != "" && len(r.Verdicts) == 0 {
		return "FAIL: " + r.Err
	}
	var parts []string
	for _, v := range r.Verdicts {
		mark := "ok"
		if !v.Pass {
			mark = "FAIL"
		}
		parts = append(parts, fmt.Sprintf("%s=%s", v.Invariant, mark))
	}
	status := "PASS"
	if !r.Pass {
		status = "FAIL"
	}
	return status + " (" + strings.Join(parts, ", ") + ")"
}
