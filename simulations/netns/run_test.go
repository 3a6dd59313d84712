//go:build netns && linux

package netns

// The real-process runs: `make chaos-netns`, or
//
//	go test -tags netns -run TestNetns -v -count=1 -timeout 20m ./simulations/netns/
//
// as root. HK_NETNS_RUN names the run (default: random), HK_NETNS_SCENARIOS
// picks scenarios (comma-separated; default all, and only then is
// RESULTS.md written, or to HK_NETNS_OUT if set), HK_NETNS_BIN gives a
// heureka binary (default: built from ./cmd/heureka), HK_NETNS_SEED seeds
// the harness's choices (default 1).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heureka/heureka/simulations"
)

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// moduleRoot finds the repository (for go build and git).
func moduleRoot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// heurekaBinary builds ./cmd/heureka, unless HK_NETNS_BIN names a binary.
func heurekaBinary(t *testing.T, root string) string {
	if b := os.Getenv("HK_NETNS_BIN"); b != "" {
		return b
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "heureka")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/heureka")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/heureka: %v\n%s", err, out)
	}
	logf("netns: built %s in %v", bin, time.Since(start).Round(100*time.Millisecond))
	return bin
}

func newRunID() string {
	if r := os.Getenv("HK_NETNS_RUN"); r != "" {
		return r
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func progress(sc string, ev simulations.Event) {
	logf("%-24s +%5.1fs %-15s %s", sc, ev.At.Seconds(), ev.Kind, ev.Detail)
}

// rootLinks counts the root namespace's interfaces: the lab adds none.
func rootLinks() int {
	out, _ := exec.Command("ip", "-o", "link", "show").Output()
	return strings.Count(string(out), "\n")
}

// labRun is what a lab test starts with: the preflight (skipping
// without root or the tools), a run id whose namespaces are removed at the
// end and on a signal, the binary, a directory for the node logs, and the
// root namespace's links and load average before anything starts.
type labRun struct {
	id, root, bin, logDir string
	linksBefore           int
	loadBefore            []byte
}

func startLabRun(t *testing.T, target, logPrefix string) labRun {
	t.Helper()
	if err := Preflight(context.Background()); err != nil {
		t.Skipf("%s: SKIPPED: %v", target, err)
	}
	r := labRun{id: newRunID()}
	stop := HandleSignals(r.id, logf)
	t.Cleanup(func() {
		if err := CleanupRun(r.id); err != nil {
			t.Errorf("final cleanup: %v", err)
		}
		stop()
	})
	r.root = moduleRoot(t)
	r.bin = heurekaBinary(t, r.root)
	var err error
	if r.logDir, err = os.MkdirTemp("", logPrefix+r.id+"-"); err != nil {
		t.Fatal(err)
	}
	logf("netns: run %s; node logs in %s", r.id, r.logDir)
	r.linksBefore = rootLinks()
	r.loadBefore, _ = os.ReadFile("/proc/loadavg")
	return r
}

func TestNetns(t *testing.T) {
	ctx := context.Background()
	lab := startLabRun(t, "chaos-netns", "hk-netns-")
	run, root, bin, logDir, linksBefore, loadBefore := lab.id, lab.root, lab.bin, lab.logDir, lab.linksBefore, lab.loadBefore
	var err error
	cfg := Config{Run: run, Bin: bin, LogDir: logDir, Progress: progress, PanicAt: os.Getenv("HK_NETNS_PANIC_AT")}
	if s := os.Getenv("HK_NETNS_SEED"); s != "" {
		if cfg.Seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("HK_NETNS_SEED: %v", err)
		}
	}

	want := Scenarios
	if sel := os.Getenv("HK_NETNS_SCENARIOS"); sel != "" {
		want = nil
		for _, name := range strings.Split(sel, ",") {
			i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
			if i < 0 {
				t.Fatalf("unknown scenario %q", name)
			}
			want = append(want, Scenarios[i])
		}
	}
	var results []*Result
	for _, sc := range want {
		res, err := RunScenario(ctx, sc, cfg)
		results = append(results, res)
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
		}
		for _, v := range res.Verdicts {
			logf("%-24s %-20s %s  %s", sc.Name, v.Invariant, passFail(v.Pass), v.Measured)
			switch ev, known := res.Known[v.Invariant]; {
			case v.Pass:
			case known:
				logf("%-24s %-20s KNOWN FINDING (%s): %s", sc.Name, v.Invariant, FindingLateRegistration, strings.Join(ev, "; "))
			default:
				t.Errorf("%s: %s FAIL: %s; %s", sc.Name, v.Invariant, v.Measured, strings.Join(v.Details, "; "))
			}
		}
		if len(res.Leftovers) > 0 {
			t.Errorf("%s: left after the run: %v", sc.Name, res.Leftovers)
		}
		logf("%-24s %s in %v", sc.Name, passFail(res.Pass), res.Wall.Round(100*time.Millisecond))
	}

	cleanup := cleanupChecks(t, cfg)
	if n := rootLinks(); n != linksBefore {
		t.Errorf("root namespace: %d interfaces before, %d after", linksBefore, n)
		cleanup = append(cleanup, fmt.Sprintf("root namespace: %d interfaces before the run, %d after", linksBefore, n))
	} else {
		cleanup = append(cleanup, fmt.Sprintf("The root namespace had %d interfaces before the run and after it; "+
			"`ip netns list | grep hk-%s` is empty at the end.", n, run))
	}
	if left, _ := Namespaces(run); len(left) > 0 {
		t.Errorf("namespaces left at the end: %v", left)
	}

	if len(want) != len(Scenarios) && os.Getenv("HK_NETNS_OUT") == "" {
		return
	}
	out := os.Getenv("HK_NETNS_OUT")
	if out == "" {
		out = "RESULTS.md"
	}
	rev, _ := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	kernel, _ := exec.Command("uname", "-r").Output()
	command := os.Getenv("HK_NETNS_COMMAND")
	if command == "" {
		command = "go test -tags netns -run TestNetns ./simulations/netns/"
	}
	h := ReportHeader{
		Command:   command,
		Generated: time.Now(),
		Revision:  strings.TrimSpace(string(rev)),
		Machine: fmt.Sprintf("Linux %s, %d CPUs, %s; load average %s at the start",
			strings.TrimSpace(string(kernel)), runtime.NumCPU(), runtime.Version(),
			strings.Join(strings.Fields(string(loadBefore))[:min(3, len(strings.Fields(string(loadBefore))))], " ")),
		Run:     run,
		Cleanup: cleanup,
	}
	// The charts go to charts/ beside the report, which links them.
	chartDir := filepath.Join(filepath.Dir(out), "charts")
	if err := os.RemoveAll(chartDir); err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if res.Observations == nil {
			continue
		}
		charts, err := simulations.WriteCharts(chartDir, res.Scenario+"-", res.Observations)
		if err != nil {
			t.Fatalf("%s: charts: %v", res.Scenario, err)
		}
		for _, c := range charts {
			c.File = "charts/" + c.File
			res.Charts = append(res.Charts, c)
		}
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteReport(f, h, results); err != nil {
		t.Fatal(err)
	}
	logf("netns: wrote %s", out)
}

// cleanupChecks fails runs on purpose and checks that nothing is left:
// an error in the middle of the faults, a panic, SIGTERM to the harness,
// and SIGKILL to the harness followed by the sweep make chaos-netns runs.
func cleanupChecks(t *testing.T, cfg Config) []string {
	var lines []string
	check := func(what, run string, pids []int) (left []string) {
		left, _ = Namespaces(run)
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, fmt.Sprintf("pid %d", pid))
			}
		}
		if len(left) > 0 {
			t.Errorf("%s: left: %v", what, left)
		}
		return left
	}
	faults := func(r *Run) ([]int, error) {
		r.NewClients(2, Apps)
		if err := r.Sleep(2 * time.Second); err != nil {
			return nil, err
		}
		if _, err := split(r); err != nil {
			return nil, err
		}
		if err := r.SetLoss(10); err != nil {
			return nil, err
		}
		if err := r.Pause("n1"); err != nil {
			return nil, err
		}
		return r.Pids(), nil
	}

	// 1. Drive fails in the middle of its faults.
	small := cfg
	small.Nodes = 3
	res, err := RunScenario(context.Background(), Scenario{Name: "forced-failure", Drive: func(r *Run) error {
		if _, err := faults(r); err != nil {
			return err
		}
		return ErrForced
	}}, small)
	if !errors.Is(err, ErrForced) {
		t.Errorf("forced failure: err = %v", err)
	}
	left := check("forced failure", cfg.Run+"-forced-failure", res.Pids)
	lines = append(lines, fmt.Sprintf("Forced failure: a run whose scenario returned an error while its nodes were partitioned, "+
		"10%% loss was on, n1 was SIGSTOPped and clients were running: %d heureka processes ended, namespaces `%s…` deleted; left: %s.",
		len(res.Pids), res.Namespaces, orNone(left)))

	// 2. Drive panics.
	var pids []int
	func() {
		defer func() {
			if p := recover(); p == nil {
				t.Error("forced panic: no panic")
			}
		}()
		_, _ = RunScenario(context.Background(), Scenario{Name: "forced-panic", Drive: func(r *Run) error {
			var err error
			if pids, err = faults(r); err != nil {
				return err
			}
			panic("forced panic")
		}}, small)
	}()
	left = check("forced panic", cfg.Run+"-forced-panic", pids)
	lines = append(lines, fmt.Sprintf("Forced panic in the same state: %d processes ended, namespaces deleted while the panic unwound; left: %s.",
		len(pids), orNone(left)))

	// 3. and 4. The harness in a child process, signalled in the middle.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		childRun := cfg.Run + "-sigterm"
		if sig == syscall.SIGKILL {
			childRun = cfg.Run + "-sigkill"
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestNetnsHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "HK_NETNS_HELPER_RUN="+childRun, "HK_NETNS_BIN="+cfg.Bin, "HK_NETNS_LOGDIR="+cfg.LogDir)
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var pids []int
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "HELPER-READY "); ok {
				for _, f := range strings.Fields(rest) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
				break
			}
		}
		if len(pids) == 0 {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Errorf("%v: the helper never got ready", sig)
			_ = CleanupRun(childRun)
			continue
		}
		before, _ := Namespaces(childRun)
		_ = cmd.Process.Signal(sig)
		go func() { _, _ = bufio.NewReader(stdout).WriteTo(os.Stdout) }()
		err := cmd.Wait()
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if sig == syscall.SIGTERM {
			left := check("SIGTERM", childRun, pids)
			lines = append(lines, fmt.Sprintf("SIGTERM to a harness process in the same state (%d namespaces, %d heureka processes): "+
				"its handler removed them and it exited with status %d; left: %s.", len(before), len(pids), code, orNone(left)))
			continue
		}
		// SIGKILL: no handler runs. The heureka processes die with their
		// parent (Pdeathsig); the namespaces stay until the sweep.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && slices.ContainsFunc(pids, alive) {
			time.Sleep(50 * time.Millisecond)
		}
		var survivors int
		for _, pid := range pids {
			if alive(pid) {
				survivors++
			}
		}
		stale, _ := Namespaces(childRun)
		sweepErr := CleanupRun(childRun)
		left := check("SIGKILL + sweep", childRun, pids)
		if sweepErr != nil {
			t.Errorf("sweep after SIGKILL: %v", sweepErr)
		}
		lines = append(lines, fmt.Sprintf("SIGKILL to a harness process in the same state: %d of %d heureka processes survived it "+
			"(Pdeathsig), %d namespaces were left as expected; the sweep (`ip netns list | grep hk-<run>`, kill `ip netns pids`, "+
			"`ip netns del`, what make chaos-netns runs after the test) removed them; left: %s.",
			survivors, len(pids), len(stale), orNone(left)))
	}

	// 5. An unrecovered panic in a harness process (HK_NETNS_PANIC_AT, as
	// `HK_NETNS_PANIC_AT=partition make chaos-netns` does to a real run):
	// the process dies, RunScenario's deferred cleanup runs on the way.
	childRun := cfg.Run + "-panic"
	cmd := exec.Command(os.Args[0], "-test.run=^TestNetnsHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "HK_NETNS_HELPER_RUN="+childRun, "HK_NETNS_BIN="+cfg.Bin, "HK_NETNS_LOGDIR="+cfg.LogDir,
		"HK_NETNS_PANIC_AT=pause")
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer // the panic and its stack
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var panicPids []int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "HELPER-PIDS "); ok {
			for _, f := range strings.Fields(rest) {
				if pid, err := strconv.Atoi(f); err == nil {
					panicPids = append(panicPids, pid)
				}
			}
		}
	}
	err = cmd.Wait()
	if err == nil || len(panicPids) == 0 || !strings.Contains(stderr.String(), "forced panic at pause") {
		t.Errorf("forced unrecovered panic: exit %v, %d pids reported, stderr ends %q", err, len(panicPids),
			stderr.String()[max(0, stderr.Len()-400):])
	}
	left = check("unrecovered panic", childRun, panicPids)
	_ = CleanupRun(childRun)
	lines = append(lines, fmt.Sprintf("An unrecovered panic in a harness process in the same state (HK_NETNS_PANIC_AT=pause, "+
		"right after SIGSTOP; the process exited: %v): %d heureka processes ended, namespaces deleted; left: %s.",
		err, len(panicPids), orNone(left)))
	return lines
}

func pidStrings(pids []int) []string {
	var ps []string
	for _, p := range pids {
		ps = append(ps, strconv.Itoa(p))
	}
	return ps
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// TestNetnsHelper is the harness process TestNetns signals; it does
// nothing unless HK_NETNS_HELPER_RUN is set.
func TestNetnsHelper(t *testing.T) {
	run := os.Getenv("HK_NETNS_HELPER_RUN")
	if run == "" {
		t.Skip("helper process of TestNetns's cleanup checks")
	}
	stop := HandleSignals(run, logf)
	defer stop()
	cfg := Config{Run: run, Bin: os.Getenv("HK_NETNS_BIN"), LogDir: os.Getenv("HK_NETNS_LOGDIR"), Nodes: 3, Progress: progress,
		PanicAt: os.Getenv("HK_NETNS_PANIC_AT")}
	_, err := RunScenario(context.Background(), Scenario{Name: "held", Drive: func(r *Run) error {
		r.NewClients(2, Apps)
		if _, err := split(r); err != nil {
			return err
		}
		if err := r.SetLoss(10); err != nil {
			return err
		}
		fmt.Printf("HELPER-PIDS %s\n", strings.Join(pidStrings(r.Pids()), " "))
		if err := r.Pause("n1"); err != nil {
			return err
		}
		fmt.Printf("HELPER-READY %s\n", strings.Join(pidStrings(r.Pids()), " "))
		return r.Sleep(2 * time.Minute)
	}}, cfg)
	t.Fatalf("the helper was not signalled: %v", err)
}
