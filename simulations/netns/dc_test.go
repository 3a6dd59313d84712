//go:build netns && linux

package netns

// The datacenter runs: `make chaos-netns-datacenters`, or
//
//	go test -tags netns -run TestNetnsDatacenters -v -count=1 -timeout 20m ./simulations/netns/
//
// as root. HK_NETNS_RUN names the run (default: random),
// HK_NETNS_DC_SCENARIOS picks topologies (comma-separated: dc2, dc3,
// dc2-every; default all, and only then is DATACENTERS.md written, or to
// HK_NETNS_DC_OUT if set), HK_NETNS_BIN gives a heureka binary (default:
// built from ./cmd/heureka).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNetnsDatacenters(t *testing.T) {
	ctx := context.Background()
	lab := startLabRun(t, "chaos-netns-datacenters", "hk-netns-dc-")
	run, root, bin, logDir, linksBefore, loadBefore := lab.id, lab.root, lab.bin, lab.logDir, lab.linksBefore, lab.loadBefore
	var err error

	want := DCScenarios
	if sel := os.Getenv("HK_NETNS_DC_SCENARIOS"); sel != "" {
		want = nil
		for _, name := range strings.Split(sel, ",") {
			i := slices.IndexFunc(DCScenarios, func(s DCScenario) bool { return s.Name == name })
			if i < 0 {
				t.Fatalf("unknown datacenter scenario %q", name)
			}
			want = append(want, DCScenarios[i])
		}
	}
	var results []*DCResult
	for _, sc := range want {
		res, err := RunDatacenters(ctx, sc, run, bin, logDir, logf)
		results = append(results, res)
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
		}
		for _, c := range res.Checks {
			logf("%-4s %-52s %s  %s", sc.Name, c.Name, passFail(c.Pass), c.Measured)
			if !c.Pass {
				t.Errorf("%s: %s FAIL: %s (bound: %s)", sc.Name, c.Name, c.Measured, c.Bound)
			}
		}
		if len(res.Leftovers) > 0 {
			t.Errorf("%s: left after the run: %v", sc.Name, res.Leftovers)
		}
		logf("%-4s %s in %v", sc.Name, passFail(res.Pass), res.Wall.Round(100*time.Millisecond))
	}

	var cleanup []string
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

	out := os.Getenv("HK_NETNS_DC_OUT")
	if len(want) != len(DCScenarios) && out == "" {
		return
	}
	if out == "" {
		out = "DATACENTERS.md"
	}
	rev, _ := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	kernel, _ := exec.Command("uname", "-r").Output()
	loadAfter, _ := os.ReadFile("/proc/loadavg")
	command := os.Getenv("HK_NETNS_COMMAND")
	if command == "" {
		command = "go test -tags netns -run TestNetnsDatacenters ./simulations/netns/"
	}
	load3 := func(b []byte) string {
		f := strings.Fields(string(b))
		return strings.Join(f[:min(3, len(f))], " ")
	}
	h := ReportHeader{
		Command:   command,
		Generated: time.Now(),
		Revision:  strings.TrimSpace(string(rev)),
		Machine: fmt.Sprintf("Linux %s, %d CPUs, %s; load average %s at the start, %s at the end",
			strings.TrimSpace(string(kernel)), runtime.NumCPU(), runtime.Version(), load3(loadBefore), load3(loadAfter)),
		Run:     run,
		Cleanup: cleanup,
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteDCReport(f, h, results); err != nil {
		t.Fatal(err)
	}
	logf("netns: wrote %s", out)
}
