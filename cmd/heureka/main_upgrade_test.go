//go:build upgrade

package main

// The upgrade test: the previous release's binary (built from the last
// commit of this repository's history whose wire protocol is this build's
// MinProtocolVersion, or named by HK_UPGRADE_OLD_BIN) and this build's, run
// together as a
// cluster on loopback under renewing clients, rolled forward one node at a
// time and then back. Every registry read any node answers with 200 must
// hold every renewing client and no cancelled instance, and no renewal may
// answer 404.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	upgradeClients   = 30                     // renewing clients, spread over the nodes
	upgradeCancelled = 5                      // instances cancelled before the roll
	upgradeRenew     = 500 * time.Millisecond // each client's renewal interval
	upgradeLease     = 5                      // the clients' lease, seconds
	upgradeSettle    = 3 * time.Second        // under load between two restarts
	upgradeReadEvery = 100 * time.Millisecond // the reader's pass over every node

	upgradeReadyTimeout = 5 * time.Second // procShortTimers' --ready-timeout
)

// upgradeTimers scale the rest of Eureka's timers with the clients'
// renewal interval (500 ms for Eureka's 30 s: a sixtieth), on top of
// procShortTimers: self-preservation expects what the clients send, and a
// tombstone lives a sixtieth of its 10 minutes, so that it runs out during
// the roll and a stale copy a restarted node holds or fetches would bring
// a cancelled instance back where the reader sees it. Both releases take
// these flags.
var upgradeTimers = []string{
	"--expected-client-renewal-interval", "500ms",
	"--renewal-threshold-update-interval", "15s",
	"--tombstone-ttl", "10s",
	"--delta-retention", "3s",
	"--delta-retention-interval", "500ms",
}

// upgradeEnv names a binary of the previous release to use instead of
// building one from the history.
const upgradeEnv = "HK_UPGRADE_OLD_BIN"

// previousRelease is built once per test binary, into dir.
var previousRelease = struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	// early404: the release answers a renewal that reaches it before its
	// initial sync with 404 (it predates the renew-not-found-before-ready
	// fix), as it always did; the client registers again. The rollback
	// records these apart, as that release's own behaviour.
	early404 bool
}{}

// TestMain removes the previous release's build when the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if previousRelease.dir != "" {
		_ = os.RemoveAll(previousRelease.dir)
	}
	os.Exit(code)
}

// previousBinary returns the previous release's binary: HK_UPGRADE_OLD_BIN,
// or a build of the last commit whose wire.ProtocolVersion is this build's
// wire.MinProtocolVersion, found in the repository's own history.
func previousBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(upgradeEnv); bin != "" {
		return bin
	}
	previousRelease.once.Do(func() {
		dir, err := os.MkdirTemp("", "heureka-previous-")
		if err != nil {
			previousRelease.err = err
			return
		}
		previousRelease.dir = dir
		previousRelease.bin, previousRelease.err = buildPrevious(dir)
	})
	require.NoError(t, previousRelease.err, "build the previous release from git history")
	t.Logf("previous release: %s (answers a renewal 404 before its initial sync, fixed since: %v)",
		filepath.Base(previousRelease.bin), previousRelease.early404)
	return previousRelease.bin
}

func TestUpgradeRollForwardAndBack(t *testing.T) {
	oldBin := previousBinary(t)
	newBin := buildHeureka(t)
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d-nodes", n), func(t *testing.T) {
			v := runUpgrade(t, n, oldBin, upgradeBinary{path: newBin}, true)
			assert.Empty(t, v.list(), "violations during the upgrade and the rollback")
		})
	}
}

// The same run, forward only, with a build of this version that advertises
// only its highest protocol (the protocol-range-not-advertised sabotage
// switch), as releases did before they spoke a range: the previous release
// refuses it, and the checker must see the cluster split.
func TestUpgradeCheckerSeesASplit(t *testing.T) {
	oldBin := previousBinary(t)
	bad := upgradeBinary{path: buildHeurekaTags(t, "sabotage"), env: []string{"HEUREKA_SABOTAGE=protocol-range-not-advertised"}}
	v := runUpgrade(t, 3, oldBin, bad, false)
	assert.NotEmpty(t, v.list(), "the checker saw nothing wrong in an upgrade that splits the cluster")
	t.Logf("the checker saw: %v", v.list())
}

// upgradeBinary is one build to run, with the environment it needs.
type upgradeBinary struct {
	path string
	env  []string
}

// buildHeurekaTags builds the heureka binary with build tags.
func buildHeurekaTags(t *testing.T, tags string) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool, err = exec.LookPath("go")
		require.NoError(t, err, "no go tool to build the binary")
	}
	bin := filepath.Join(t.TempDir(), "heureka-"+tags)
	out, err := exec.Command(goTool, "build", "-tags", tags, "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build -tags %s: %s", tags, out)
	return bin
}

// violations collects what the checkers saw, with counters for the log.
type violations struct {
	t    *testing.T // logs the first violation of each kind when it is seen
	mu   sync.Mutex
	seen map[string]int // kind → count
	eg   map[string]string
	// previous counts what the previous release does that this one fixed
	// (kind → count): logged, not violations.
	previous map[string]int

	reads, refused, renewals atomic.Int64
}

func (v *violations) add(kind, example string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen, v.eg = map[string]int{}, map[string]string{}
	}
	if v.seen[kind] == 0 {
		v.eg[kind] = example
		if v.t != nil {
			v.t.Logf("%s first %s: %s", time.Now().UTC().Format("15:04:05.000"), kind, example)
		}
	}
	v.seen[kind]++
}

// addPrevious records a behaviour of the previous release that this one
// fixed.
func (v *violations) addPrevious(kind, example string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.previous == nil {
		v.previous = map[string]int{}
	}
	if v.previous[kind] == 0 && v.t != nil {
		v.t.Logf("%s first %s (the previous release's own, fixed since): %s", time.Now().UTC().Format("15:04:05.000"), kind, example)
	}
	v.previous[kind]++
}

// previousList returns "kind ×count" for each behaviour of the previous
// release seen.
func (v *violations) previousList() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for k, n := range v.previous {
		out = append(out, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(out)
	return out
}

// list returns "kind ×count (first: example)" for each kind seen.
func (v *violations) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for k, n := range v.seen {
		out = append(out, fmt.Sprintf("%s ×%d (first: %s)", k, n, v.eg[k]))
	}
	sort.Strings(out)
	return out
}

// upgradeCluster is the nodes of one run and the binary each runs now.
type upgradeCluster struct {
	t     *testing.T
	procs []*heurekaProc
	old   string      // the previous release's binary
	mu    sync.Mutex  // guards procs[i].cmd, .bin and started while a node restarts
	start []time.Time // when each node's current process started
}

// node returns the base URL of node i ("" while it is being restarted) and
// whether it runs the previous release and started less than the ready
// timeout ago (so may not have finished its initial sync).
func (c *upgradeCluster) node(i int) (base string, previousSyncing bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.procs[i].running() {
		return "", false
	}
	return c.procs[i].base(), c.procs[i].bin == c.old && time.Since(c.start[i]) < upgradeReadyTimeout
}

// runUpgrade starts n nodes of oldBin (each joining all the others, as a
// systemd or StatefulSet layout does), registers the clients, cancels a
// few instances, then restarts each node on to in turn and, when back is
// set, each again on oldBin, while the clients renew and a reader checks
// every node's /eureka/apps.
func runUpgrade(t *testing.T, n int, oldBin string, to upgradeBinary, back bool) *violations {
	c := &upgradeCluster{t: t, procs: make([]*heurekaProc, n), old: oldBin, start: make([]time.Time, n)}
	for i := range c.procs {
		c.procs[i] = &heurekaProc{t: t, bin: oldBin, name: fmt.Sprintf("n%d", i+1),
			httpAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, false))),
			gossipAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, true))),
			extra:      upgradeTimers,
		}
	}
	for i, p := range c.procs {
		var seeds []string
		for j, q := range c.procs {
			if j != i {
				seeds = append(seeds, q.gossipAddr)
			}
		}
		p.join = strings.Join(seeds, ",")
	}
	v := &violations{t: t}
	// Registered before stopAtCleanup, so run after it: a failed run's
	// verdict is the last thing it prints, after the nodes' logs (CI keeps
	// the tail of the output).
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%d nodes, verdict: violations %v; %d reads answered 200, %d refused while not ready, %d renewals",
				n, v.list(), v.reads.Load(), v.refused.Load(), v.renewals.Load())
		}
	})
	stopAtCleanup(t, &c.procs)
	for i, p := range c.procs {
		p.start()
		c.start[i] = time.Now()
	}
	require.Eventually(t, everyoneSees(c.procs), procClusterWithin, procPoll, "the old cluster did not form")

	// Instances cancelled before the roll: no read may hold them again.
	var cancelled []string
	for i := range upgradeCancelled {
		id := fmt.Sprintf("gone-%d", i)
		p := c.procs[i%n]
		code, body := procDo("POST", p.base()+"/eureka/apps/GONE", upgradeRegisterBody("GONE", id, 600))
		require.Equal(t, http.StatusNoContent, code, body)
		cancelled = append(cancelled, id)
	}
	require.Eventually(t, func() bool { return allServe(c, cancelled, nil) }, procReplicate, procPoll,
		"the instances to cancel did not reach every node")
	for i, id := range cancelled {
		code, body := procDo("DELETE", c.procs[(i+1)%n].base()+"/eureka/apps/GONE/"+id, "")
		require.Equal(t, http.StatusOK, code, body)
	}
	require.Eventually(t, func() bool { return allServe(c, nil, cancelled) }, procReplicate, procPoll,
		"the cancels did not reach every node")

	// The clients: each registers on its home node and renews there,
	// moving to the next node when its node does not answer (as the Java
	// client moves to the next URL of defaultZone).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var clients []string
	for i := range upgradeClients {
		id := fmt.Sprintf("c-%02d", i)
		clients = append(clients, id)
		app := []string{"ORDERS", "BILLING", "SHIPPING"}[i%3]
		home := i % n
		code, body := procDo("POST", c.procs[home].base()+"/eureka/apps/"+app, upgradeRegisterBody(app, id, upgradeLease))
		require.Equal(t, http.StatusNoContent, code, body)
		wg.Add(1)
		go func() {
			defer wg.Done()
			renewLoop(c, v, app, id, home, stop)
		}()
	}
	require.Eventually(t, func() bool { return allServe(c, clients, cancelled) }, procReplicate, procPoll,
		"the clients' registrations did not reach every node")

	wg.Add(1)
	go func() {
		defer wg.Done()
		readLoop(c, v, clients, cancelled, stop)
	}()

	roll := func(to upgradeBinary) {
		for i, p := range c.procs {
			t.Logf("%s restarting %s on %s", time.Now().UTC().Format("15:04:05.000"), p.name, filepath.Base(to.path))
			p.signal(syscall.SIGTERM)
			p.wait(procExitWithin)
			c.mu.Lock()
			p.bin, p.env = to.path, to.env
			p.start()
			c.start[i] = time.Now()
			c.mu.Unlock()
			ready := within(procReadyWithin, func() bool {
				code, _ := procDo("GET", p.base()+"/readyz", "")
				return code == http.StatusOK
			})
			if !ready {
				_, why := procDo("GET", p.base()+"/readyz", "")
				v.add("restarted node never ready", fmt.Sprintf("%s on %s: %s", p.name, filepath.Base(to.path), why))
				t.Logf("%s never became ready on %s: %s", p.name, filepath.Base(to.path), why)
			}
			if !within(procClusterWithin, everyoneSees(c.procs)) {
				v.add("cluster split", fmt.Sprintf("after restarting %s (%d of %d) on %s", p.name, i+1, n, filepath.Base(to.path)))
			}
			time.Sleep(upgradeSettle)
		}
	}
	start := time.Now()
	roll(to)
	if back {
		roll(upgradeBinary{path: oldBin})
	}
	close(stop)
	wg.Wait()
	t.Logf("%d nodes, %v: %d reads answered 200, %d refused while not ready, %d renewals; violations: %v; "+
		"the previous release's own (fixed since): %v",
		n, time.Since(start).Round(time.Second), v.reads.Load(), v.refused.Load(), v.renewals.Load(), v.list(), v.previousList())
	if !t.Failed() && back {
		require.Positive(t, v.reads.Load(), "no read was answered: the checker judged nothing")
	}
	return v
}

// within polls cond until it holds (true) or d has passed (false); unlike
// assert.Eventually it leaves the verdict to the caller.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(procPoll)
	}
}

// renewLoop renews one client's lease every upgradeRenew until stop, and
// records a renewal that answers 404 (the instance unknown to a node the
// client renews on).
func renewLoop(c *upgradeCluster, v *violations, app, id string, home int, stop <-chan struct{}) {
	tick := time.NewTicker(upgradeRenew)
	defer tick.Stop()
	n := len(c.procs)
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for try := 0; try < n; try++ {
			base, previousSyncing := c.node(home)
			if base == "" {
				home = (home + 1) % n
				continue
			}
			code, body := procDo("PUT", base+"/eureka/apps/"+app+"/"+id, "")
			if code == http.StatusOK {
				v.renewals.Add(1)
				break
			}
			if code == http.StatusNotFound {
				if previousSyncing && previousRelease.early404 {
					v.addPrevious("renewal answered 404", fmt.Sprintf("%s/%s on %s", app, id, base))
				} else {
					v.add("renewal answered 404", fmt.Sprintf("%s/%s on %s", app, id, base))
				}
				// As the Java client does: register again.
				procDo("POST", base+"/eureka/apps/"+app, upgradeRegisterBody(app, id, upgradeLease))
				break
			}
			_ = body
			home = (home + 1) % n // not answering: the next node
		}
	}
}

// readLoop reads every node's /eureka/apps until stop and records a read
// answered 200 that lacks a renewing client (an empty registry, a partial
// one) or holds a cancelled instance.
func readLoop(c *upgradeCluster, v *violations, clients, cancelled []string, stop <-chan struct{}) {
	tick := time.NewTicker(upgradeReadEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for i := range c.procs {
			base, _ := c.node(i)
			if base == "" {
				continue
			}
			ids, code := readIDs(base)
			if code != http.StatusOK {
				if code != 0 {
					v.refused.Add(1)
				}
				continue
			}
			v.reads.Add(1)
			var missing []string
			for _, id := range clients {
				if !ids[id] {
					missing = append(missing, id)
				}
			}
			switch {
			case len(ids) == 0:
				v.add("empty registry served with 200", c.procs[i].name)
			case len(missing) > 0:
				v.add("read missed a renewing instance", fmt.Sprintf("%s lacked %v", c.procs[i].name, missing))
			}
			for _, id := range cancelled {
				if ids[id] {
					v.add("cancelled instance came back", fmt.Sprintf("%s on %s", id, c.procs[i].name))
				}
			}
		}
	}
}

// allServe reports whether every node serves every id of want and none of
// gone.
func allServe(c *upgradeCluster, want, gone []string) bool {
	for _, p := range c.procs {
		ids, code := readIDs(p.base())
		if code != http.StatusOK {
			return false
		}
		for _, id := range want {
			if !ids[id] {
				return false
			}
		}
		for _, id := range gone {
			if ids[id] {
				return false
			}
		}
	}
	return true
}

// readIDs returns the instance ids of GET /eureka/apps and its status (0
// when the node did not answer).
func readIDs(base string) (map[string]bool, int) {
	code, body := procDo("GET", base+"/eureka/apps", "")
	if code != http.StatusOK {
		return nil, code
	}
	var doc struct {
		Applications struct {
			Application []struct {
				Instance []struct {
					InstanceID string `json:"instanceId"`
				} `json:"instance"`
			} `json:"application"`
		} `json:"applications"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return nil, -1
	}
	ids := map[string]bool{}
	for _, a := range doc.Applications.Application {
		for _, in := range a.Instance {
			ids[in.InstanceID] = true
		}
	}
	return ids, code
}

// upgradeRegisterBody is a Eureka JSON registration with a lease of
// leaseSecs and renewals every second.
func upgradeRegisterBody(app, id string, leaseSecs int) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"%s.example","app":%q,"ipAddr":"10.1.1.1",
"status":"UP","port":{"$":8080,"@enabled":"true"},"vipAddress":"%s",
"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
"leaseInfo":{"renewalIntervalInSecs":1,"durationInSecs":%d}}}`, id, id, app, strings.ToLower(app), leaseSecs)
}
