package main

// A three-process cluster on loopback: the heureka binary, built once, run
// as three separate processes that find each other by gossip, serve the
// Eureka API, survive one of them being SIGKILLed, take it back after a
// restart, and exit cleanly on SIGTERM. This is the one test that exercises
// flags, real sockets, signal handling and process exit codes together.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/freeport"
)

// Deadlines of the process test. They are generous: three processes on a
// loaded CI machine, memberlist's LAN failure detector (seconds), and a race
// build of the test itself.
const (
	procReadyWithin   = 30 * time.Second // a process serves /readyz 200
	procClusterWithin = 30 * time.Second // every member sees the others alive
	procReplicate     = 15 * time.Second // a write is visible on every node
	procDeadWithin    = 45 * time.Second // a SIGKILLed member is reported dead
	procExitWithin    = 30 * time.Second // SIGTERM to exit
	procPoll          = 50 * time.Millisecond
)

// procShortTimers are the flags that shrink Eureka's timers for the test.
var procShortTimers = []string{
	"--eviction-interval", "200ms",
	"--renewal-window", "500ms",
	"--renew-forward-interval", "100ms",
	"--anti-entropy-interval", "500ms",
	"--ready-timeout", "5s",
}

// syncBuffer is an io.Writer safe for the process's stderr copier and the
// test reading it at the same time.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// heurekaProc is one heureka process; it can be restarted with the same
// arguments (same ports, same name).
type heurekaProc struct {
	t          *testing.T
	bin        string
	name       string
	httpAddr   string
	gossipAddr string
	join       string
	extra      []string // more flags, after procShortTimers
	env        []string // more environment, after PATH and HOME

	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd.Wait returns
	err    error         // cmd.Wait's result, valid after done
	stderr []*syncBuffer // one per run, for the failure log
}

func (p *heurekaProc) base() string { return "http://" + p.httpAddr }

// start runs the process; every run's stderr is kept for the failure log.
func (p *heurekaProc) start() {
	p.t.Helper()
	args := []string{"serve",
		"--node-name", p.name,
		"--http-addr", p.httpAddr,
		"--gossip-addr", p.gossipAddr,
		"--log-level", "info",
	}
	if p.join != "" {
		args = append(args, "--join", p.join)
	}
	args = append(args, procShortTimers...)
	args = append(args, p.extra...)
	cmd := exec.Command(p.bin, args...)
	// Only the command line configures the node.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.t.TempDir()}, p.env...)
	buf := &syncBuffer{}
	cmd.Stdout = buf
	cmd.Stderr = buf
	require.NoError(p.t, cmd.Start(), "start %s", p.name)
	p.cmd = cmd
	p.stderr = append(p.stderr, buf)
	done := make(chan struct{})
	p.done = done
	go func() {
		p.err = cmd.Wait()
		close(done)
	}()
}

// running reports whether the current run has not exited.
func (p *heurekaProc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the current run.
func (p *heurekaProc) signal(sig os.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig), "signal %v to %s", sig, p.name)
}

// wait waits for the current run to exit and returns its exit code.
func (p *heurekaProc) wait(within time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		require.FailNow(p.t, "process did not exit", "%s still running after %v", p.name, within)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode() // -1 when killed by a signal
	default:
		require.NoError(p.t, p.err, "wait for %s", p.name)
		return -1
	}
}

// logs returns the stderr of every run of the process.
func (p *heurekaProc) logs() string {
	var b strings.Builder
	for i, s := range p.stderr {
		fmt.Fprintf(&b, "---- %s run %d stderr ----\n%s", p.name, i+1, s.String())
	}
	return b.String()
}

// buildHeureka builds the heureka binary into a temporary directory.
func buildHeureka(t *testing.T) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool, err = exec.LookPath("go")
		require.NoError(t, err, "no go tool to build the binary")
	}
	bin := filepath.Join(t.TempDir(), "heureka")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// freePort returns a loopback port that is free for TCP and, when udp is
// set, for UDP too (gossip uses both on one number), never one handed out
// before in this test binary.
func freePort(t *testing.T, udp bool) int {
	t.Helper()
	p, err := freeport.Port("127.0.0.1", udp)
	require.NoError(t, err)
	return p
}

// procClient talks to the processes; short timeouts so that a request to a
// dead process fails fast inside an Eventually.
var procClient = &http.Client{Timeout: 3 * time.Second}

// procDo sends a request and returns the status and body; a transport
// error is status 0.
func procDo(method, url, body string) (int, string) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := procClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// procRegisterBody is a Eureka JSON registration with a lease long enough
// to outlive the test without renewals.
func procRegisterBody(app, id string) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"%s.example","app":%q,"ipAddr":"10.1.1.1",
"status":"UP","port":{"$":8080,"@enabled":"true"},"vipAddress":"%s",
"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":600}}}`, id, id, app, strings.ToLower(app))
}

// procMembers returns name → state from GET /cluster/members, or nil.
func procMembers(p *heurekaProc) map[string]string {
	code, body := procDo("GET", p.base()+"/cluster/members", "")
	if code != http.StatusOK {
		return nil
	}
	var ms []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	if json.Unmarshal([]byte(body), &ms) != nil {
		return nil
	}
	out := map[string]string{}
	for _, m := range ms {
		out[m.Name] = m.State
	}
	return out
}

// procInstances returns the instance ids of app served by p; ok is false
// when p did not answer 200 or 404.
func procInstances(p *heurekaProc, app string) (ids map[string]bool, ok bool) {
	code, body := procDo("GET", p.base()+"/eureka/apps/"+app, "")
	switch code {
	case http.StatusNotFound:
		return map[string]bool{}, true
	case http.StatusOK:
	default:
		return nil, false
	}
	var doc struct {
		Application struct {
			Instance []struct {
				InstanceID string `json:"instanceId"`
			} `json:"instance"`
		} `json:"application"`
	}
	if json.Unmarshal([]byte(body), &doc) != nil {
		return nil, false
	}
	ids = map[string]bool{}
	for _, in := range doc.Application.Instance {
		ids[in.InstanceID] = true
	}
	return ids, true
}

// serves reports whether p serves app with exactly the ids in want.
func serves(p *heurekaProc, app string, want ...string) bool {
	ids, ok := procInstances(p, app)
	if !ok || len(ids) != len(want) {
		return false
	}
	for _, id := range want {
		if !ids[id] {
			return false
		}
	}
	return true
}

func TestClusterOfThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes; skipped in -short mode")
	}
	bin := buildHeureka(t)

	procs := make([]*heurekaProc, 3)
	for i := range procs {
		procs[i] = &heurekaProc{
			t:          t,
			bin:        bin,
			name:       fmt.Sprintf("proc-%d", i+1),
			httpAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, false))),
			gossipAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, true))),
		}
		if i > 0 {
			procs[i].join = procs[0].gossipAddr
		}
	}
	n1, n2, n3 := procs[0], procs[1], procs[2]
	t.Cleanup(func() {
		for _, p := range procs {
			if p.running() {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			for _, p := range procs {
				t.Log(p.logs())
			}
		}
		procClient.CloseIdleConnections()
	})

	ready := func(p *heurekaProc) {
		t.Helper()
		require.Eventually(t, func() bool {
			code, _ := procDo("GET", p.base()+"/readyz", "")
			return code == http.StatusOK
		}, procReadyWithin, procPoll, "%s never became ready", p.name)
	}
	// seesAlive: every process in from lists every process in want alive.
	seesAlive := func(from []*heurekaProc, want []*heurekaProc) func() bool {
		return func() bool {
			for _, p := range from {
				ms := procMembers(p)
				for _, w := range want {
					if ms[w.name] != "alive" {
						return false
					}
				}
			}
			return true
		}
	}

	// 1. Three processes; nodes 2 and 3 join node 1.
	for _, p := range procs {
		p.start()
	}
	for _, p := range procs {
		ready(p)
	}
	require.Eventually(t, seesAlive(procs, procs), procClusterWithin, procPoll, "the cluster did not form")
	for _, p := range procs {
		assert.Len(t, procMembers(p), 3, "%s lists other members than the three", p.name)
	}

	// 2. Register on node 1, read on nodes 2 and 3.
	code, body := procDo("POST", n1.base()+"/eureka/apps/ORDERS", procRegisterBody("ORDERS", "o-1"))
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = procDo("POST", n1.base()+"/eureka/apps/ORDERS", procRegisterBody("ORDERS", "o-2"))
	require.Equal(t, http.StatusNoContent, code, body)
	for _, p := range []*heurekaProc{n2, n3} {
		require.Eventually(t, func() bool { return serves(p, "ORDERS", "o-1", "o-2") }, procReplicate, procPoll,
			"registration on %s not served by %s", n1.name, p.name)
	}

	// 3. Cancel on node 3: gone everywhere, its sibling stays.
	code, body = procDo("DELETE", n3.base()+"/eureka/apps/ORDERS/o-2", "")
	require.Equal(t, http.StatusOK, code, body)
	for _, p := range procs {
		require.Eventually(t, func() bool { return serves(p, "ORDERS", "o-1") }, procReplicate, procPoll,
			"cancel on %s still not applied on %s", n3.name, p.name)
	}

	// 4. SIGKILL node 2: the others report it dead and keep serving,
	// including writes.
	n2.signal(syscall.SIGKILL)
	assert.Equal(t, -1, n2.wait(procExitWithin), "SIGKILL should end the process by signal")
	require.Eventually(t, func() bool {
		return procMembers(n1)[n2.name] == "dead" && procMembers(n3)[n2.name] == "dead"
	}, procDeadWithin, procPoll, "the killed node was not declared dead")
	code, body = procDo("POST", n3.base()+"/eureka/apps/PAYMENTS", procRegisterBody("PAYMENTS", "p-1"))
	require.Equal(t, http.StatusNoContent, code, body)
	for _, p := range []*heurekaProc{n1, n3} {
		require.Eventually(t, func() bool { return serves(p, "PAYMENTS", "p-1") && serves(p, "ORDERS", "o-1") },
			procReplicate, procPoll, "%s stopped serving after the kill", p.name)
		code, _ := procDo("GET", p.base()+"/readyz", "")
		assert.Equal(t, http.StatusOK, code, "%s not ready after a peer died", p.name)
	}

	// 5. Restart node 2 on the same ports, joining node 1: it becomes ready
	// with the whole registry, including what was registered while it was
	// down and without what was cancelled before.
	n2.start()
	ready(n2)
	assert.True(t, serves(n2, "ORDERS", "o-1"), "restarted node ready without ORDERS/o-1 (or with o-2)")
	assert.True(t, serves(n2, "PAYMENTS", "p-1"), "restarted node ready without PAYMENTS/p-1, registered while it was down")
	require.Eventually(t, func() bool { return serves(n2, "ORDERS", "o-1") && serves(n2, "PAYMENTS", "p-1") },
		procReplicate, procPoll, "restarted node never served the full registry")
	require.Eventually(t, seesAlive(procs, procs), procClusterWithin, procPoll, "the restarted node did not rejoin")

	// 6. SIGTERM all: each leaves gracefully and exits 0.
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		assert.Equal(t, 0, p.wait(procExitWithin), "%s did not exit cleanly on SIGTERM", p.name)
	}
}

// readmeCluster starts the README's cluster: a without --join, b and c
// joining a, each with extra flags; it waits until all three are ready and
// see each other.
func readmeCluster(t *testing.T, bin string, extra ...string) []*heurekaProc {
	t.Helper()
	procs := make([]*heurekaProc, 3)
	for i, name := range []string{"a", "b", "c"} {
		procs[i] = &heurekaProc{
			t:          t,
			bin:        bin,
			name:       name,
			httpAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, false))),
			gossipAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, true))),
			extra:      extra,
		}
		if i > 0 {
			procs[i].join = procs[0].gossipAddr
		}
	}
	stopAtCleanup(t, &procs)
	for _, p := range procs {
		p.start()
	}
	require.Eventually(t, everyoneSees(procs), procClusterWithin, procPoll, "the cluster did not form")
	return procs
}

// stopAtCleanup kills what still runs when the test ends, and logs every
// run's output if it failed.
func stopAtCleanup(t *testing.T, procs *[]*heurekaProc) {
	t.Cleanup(func() {
		for _, p := range *procs {
			if p.running() {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			for _, p := range *procs {
				t.Log(p.logs())
			}
		}
		procClient.CloseIdleConnections()
	})
}

// everyoneSees: every process is ready and lists every process alive.
func everyoneSees(procs []*heurekaProc) func() bool {
	return func() bool {
		for _, p := range procs {
			if code, _ := procDo("GET", p.base()+"/readyz", ""); code != http.StatusOK {
				return false
			}
			ms := procMembers(p)
			for _, w := range procs {
				if ms[w.name] != "alive" {
					return false
				}
			}
		}
		return true
	}
}

// TestReadmeClusterSeedRestart: the README's cluster, its seed a (started
// without --join) restarted exactly as it was started, first after SIGTERM,
// then after SIGKILL: within a generous deadline every node lists every
// member alive and serves the whole registry, registered on b and c before
// the restart. (How long it took is logged; the goal is 10 s.)
func TestReadmeClusterSeedRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes; skipped in -short mode")
	}
	procs := readmeCluster(t, buildHeureka(t))
	a, b, c := procs[0], procs[1], procs[2]
	for _, reg := range []struct {
		p       *heurekaProc
		app, id string
	}{{b, "ORDERS", "o-1"}, {b, "ORDERS", "o-2"}, {c, "PAYMENTS", "p-1"}} {
		code, body := procDo("POST", reg.p.base()+"/eureka/apps/"+reg.app, procRegisterBody(reg.app, reg.id))
		require.Equal(t, http.StatusNoContent, code, body)
	}
	whole := func() bool {
		if !everyoneSees(procs)() {
			return false
		}
		for _, p := range procs {
			if !serves(p, "ORDERS", "o-1", "o-2") || !serves(p, "PAYMENTS", "p-1") {
				return false
			}
		}
		return true
	}
	require.Eventually(t, whole, procReplicate, procPoll, "the registry did not reach every node")

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		a.signal(sig)
		a.wait(procExitWithin)
		a.start()
		start := time.Now()
		require.Eventually(t, whole, 3*procReplicate, procPoll,
			"after %v and a restart of %s, not every node lists every member and holds the whole registry", sig, a.name)
		t.Logf("after %v: whole again in %v", sig, time.Since(start).Round(10*time.Millisecond))
	}
}

// TestWrongKeyProcessNeverServes: a node with another gossip key, joining
// the README's cluster, never answers a registry read with 200, far past
// its ready timeout; its log, metrics and /eureka/status say why.
func TestWrongKeyProcessNeverServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs four processes; skipped in -short mode")
	}
	bin := buildHeureka(t)
	key := "--gossip-key=MDEyMzQ1Njc4OWFiY2RlZg==" // "0123456789abcdef"
	procs := readmeCluster(t, bin, key, "--ready-timeout", "1s")
	code, body := procDo("POST", procs[1].base()+"/eureka/apps/ORDERS", procRegisterBody("ORDERS", "o-1"))
	require.Equal(t, http.StatusNoContent, code, body)

	x := &heurekaProc{t: t, bin: bin, name: "x",
		httpAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, false))),
		gossipAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, true))),
		join:       procs[0].gossipAddr,
		extra:      []string{"--gossip-key=ZmVkY2JhOTg3NjU0MzIxMA==", "--ready-timeout", "1s"}, // "fedcba9876543210"
	}
	all := append(procs, x)
	stopAtCleanup(t, &all)
	x.start()
	require.Eventually(t, func() bool {
		code, _ := procDo("GET", x.base()+"/readyz", "")
		return code == http.StatusServiceUnavailable
	}, procReadyWithin, procPoll, "x never answered /readyz")
	// Ten ready timeouts: every read is refused.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		code, body := procDo("GET", x.base()+"/eureka/apps", "")
		require.NotEqual(t, http.StatusOK, code, "the refused node served a registry read: %s", body)
		time.Sleep(200 * time.Millisecond)
	}
	code, body = procDo("GET", x.base()+"/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "gossip key mismatch")
	code, body = procDo("GET", x.base()+"/eureka/status", "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "join refused (key)")
	code, body = procDo("GET", x.base()+"/metrics", "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `heureka_join_refused{reason="key"} 1`)
	assert.Contains(t, x.logs(), "join refused")
	assert.Contains(t, procs[0].logs(), "gossip key mismatch", "the seed says what is wrong in words")
}
