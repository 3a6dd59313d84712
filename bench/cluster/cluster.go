package clusterbench

// The benchmarks' cluster and its tools: the nodes' logger and diagnostics
// (profiles, traces, goroutine dumps, the CPU share of the process), the
// generated instances and the HTTP client that loads them, and the cluster
// itself (start, add, stop, wait for membership and convergence). Only the
// benchmarks use it; it takes a testing.TB where it fails a run, as raft's
// testing.go does.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/bench"
	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/node"
)

// ---- logging -------------------------------------------------------------------

// benchLogger returns the nodes' logger: discarded unless HEUREKA_BENCH_LOG
// names a level (debug, info, warn, error).
func benchLogger() *slog.Logger {
	lv := os.Getenv("HEUREKA_BENCH_LOG")
	if lv == "" {
		return slog.New(slog.DiscardHandler)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(lv)); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// traceOn (HEUREKA_BENCH_TRACE=1) makes the benchmarks log their progress.
var traceOn = os.Getenv("HEUREKA_BENCH_TRACE") != ""

// diagFile creates the file of the diagnostic that the environment
// variable env asks for: its value is a prefix, to which the benchmark's
// name and ext are appended. It returns nil when env is not set.
func diagFile(b testing.TB, env, ext string) (*os.File, string) {
	prefix := os.Getenv(env)
	if prefix == "" {
		return nil, ""
	}
	name := prefix + "." + strings.NewReplacer("/", "_", "=", "").Replace(b.Name()) + ext
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	return f, name
}

// startProfile starts a CPU profile of the measured phase when
// HEUREKA_BENCH_CPUPROFILE names a file prefix (the benchmark's name is
// appended); it returns the function that stops it.
func startProfile(b testing.TB) func() {
	f, name := diagFile(b, "HEUREKA_BENCH_CPUPROFILE", ".pprof")
	if f == nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Logf("no CPU profile: %v", err)
		_ = f.Close()
		return func() {}
	}
	runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		runtime.SetBlockProfileRate(0)
		if bf, err := os.Create(strings.TrimSuffix(name, ".pprof") + ".block.pprof"); err == nil {
			_ = pprof.Lookup("block").WriteTo(bf, 0)
			_ = bf.Close()
		}
		b.Logf("CPU and block profiles of the measured phase in %s", name)
	}
}

// startTrace starts an execution trace of the measured phase when
// HEUREKA_BENCH_EXECTRACE names a file prefix; it returns the function that
// stops it.
func startTrace(b testing.TB) func() {
	f, name := diagFile(b, "HEUREKA_BENCH_EXECTRACE", ".trace")
	if f == nil {
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		b.Logf("no execution trace: %v", err)
		_ = f.Close()
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			trace.Stop()
			_ = f.Close()
			b.Logf("execution trace of the measured phase in %s", name)
		})
	}
}

// dumpGoroutines writes every goroutine's stack to HEUREKA_BENCH_DUMP.what
// when HEUREKA_BENCH_DUMP is set.
func dumpGoroutines(b testing.TB, what string) {
	prefix := os.Getenv("HEUREKA_BENCH_DUMP")
	if prefix == "" {
		return
	}
	f, err := os.Create(prefix + "." + what + ".txt")
	if err != nil {
		b.Logf("no goroutine dump: %v", err)
		return
	}
	defer f.Close()
	_ = pprof.Lookup("goroutine").WriteTo(f, 2)
}

// ---- machine load --------------------------------------------------------------

// cpuWatch measures how much CPU this process got during a phase, and the
// machine's load: the benchmarks share a small machine, and a figure taken
// while other processes held the CPUs must say so.
type cpuWatch struct {
	wall  time.Time
	cpu   time.Duration
	load0 string
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg is the 1-minute load average ("?" if unreadable).
func loadAvg() string {
	return strings.Fields(bench.LoadAvg())[0]
}

func watchCPU() cpuWatch { return cpuWatch{wall: time.Now(), cpu: processCPU(), load0: loadAvg()} }

// report returns the share of the machine's CPUs this process used since
// watchCPU, and a note with the load averages at both ends.
func (w cpuWatch) report() (share float64, note string) {
	wall := time.Since(w.wall)
	cpu := processCPU() - w.cpu
	share = float64(cpu) / (float64(wall) * float64(runtime.NumCPU()))
	return share, fmt.Sprintf("process used %.0f%% of %d CPUs (%.1fs CPU in %.1fs); load average %s → %s",
		100*share, runtime.NumCPU(), cpu.Seconds(), wall.Seconds(), w.load0, loadAvg())
}

// ---- instances -------------------------------------------------------------------

// lastDirty is the lastDirtyTimestamp every generated instance carries and
// every renewal sends.
const lastDirty = "1754499999870"

// inst describes one generated instance.
type inst struct {
	App string // upper case
	IP  string
	ID  string // "ip:app:8080", like a Spring Cloud client's
}

// appName returns the name of application a (upper case).
func appName(prefix string, a int) string { return fmt.Sprintf("%s-%05d", prefix, a) }

// makeInst returns instance k of application a; net keeps the addresses of
// different sets disjoint.
func makeInst(prefix string, a, net, k int) inst {
	ip := fmt.Sprintf("10.%d.%d.%d", net+((k>>16)&63), (k>>8)&255, k&255)
	app := appName(prefix, a)
	return inst{App: app, IP: ip, ID: ip + ":" + strings.ToLower(app) + ":8080"}
}

// registerBody is the register request body a Java (Spring Cloud) client
// sends, spec §3.7.
func registerBody(in inst) []byte {
	app := strings.ToLower(in.App)
	url := "http://" + in.IP + ":8080/"
	var b strings.Builder
	b.Grow(1024)
	b.WriteString(`{"instance":{"instanceId":"` + in.ID + `","hostName":"` + in.IP + `","app":"` + in.App +
		`","ipAddr":"` + in.IP + `","status":"UP","overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},` +
		`"securePort":{"$":443,"@enabled":"false"},"countryId":1,` +
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},` +
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":0,"lastRenewalTimestamp":0,` +
		`"evictionTimestamp":0,"serviceUpTimestamp":0},` +
		`"metadata":{"management.port":"8081","zone":"zone-a"},"homePageUrl":"` + url +
		`","statusPageUrl":"` + url + `actuator/info","healthCheckUrl":"` + url +
		`actuator/health","vipAddress":"` + app + `","secureVipAddress":"` + app +
		`","isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"` + lastDirty +
		`","lastDirtyTimestamp":"` + lastDirty + `"}}`)
	return []byte(b.String())
}

// registerDirect registers in through the registry facade exactly as the
// register handler stores it (decoded by package eureka, normalized), skipping HTTP.
func registerDirect(reg *actors.Registry, in inst) error {
	i, err := eureka.DecodeInstance("application/json", registerBody(in))
	if err != nil {
		return err
	}
	i.Normalize()
	return reg.Register(context.Background(), i, false)
}

// loadDirect registers insts through the registries of the given nodes
// (instance k through nodes[k%len(nodes)]) with several workers.
func loadDirect(nodes []*node.Node, insts []inst) error {
	workers := 4 * runtime.GOMAXPROCS(0)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(insts) {
					return
				}
				if err := registerDirect(nodes[k%len(nodes)].Registry(), insts[k]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// ---- HTTP ------------------------------------------------------------------------

// newClient returns a keep-alive client that never asks for gzip.
func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns,
		MaxIdleConns:        conns * 16,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
	}}
}

// javaHeaders are the headers of the Java Eureka client (spec §3.7).
func javaHeaders() http.Header {
	return http.Header{
		"Accept":                    {"application/json"},
		"Discoveryidentity-Name":    {"DefaultClient"},
		"Discoveryidentity-Version": {"1.4"},
		"Discoveryidentity-Id":      {"10.0.0.1"},
		"User-Agent":                {"Java-EurekaClient/v1.10.18"},
	}
}

// send sends one request and returns the status and body.
func send(c *http.Client, method, url string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = strings.NewReader(string(body))
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header = javaHeaders()
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// ---- clusters --------------------------------------------------------------------

// nodeConfig is a production node (node.DefaultConfig, replication defaults:
// 1s renewal flush, 5s anti-entropy) on a free loopback HTTP port, with
// memberlist's local timings (cluster.DefaultLocalConfig) and, when mn is
// set, the in-memory network as transport. Eviction runs hourly only: no
// benchmark lasts long enough for a 90s lease to matter and none measures
// eviction, so a stray eviction must not disturb a measurement.
func nodeConfig(name string, mn *memnet.Network, join []string) node.Config {
	cfg := node.DefaultConfig(name)
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = benchLogger()
	cfg.Registry.EvictionInterval = time.Hour
	cc := cluster.DefaultLocalConfig()
	cc.Join = join
	if mn != nil {
		cc.Transport = mn.NewTransport(name)
		cc.Resolver = mn.Resolve
	}
	cfg.Cluster = &cc
	cfg.Replication = cluster.DefaultReplicatorConfig()
	return cfg
}

// benchCluster is a set of in-process nodes.
type benchCluster struct {
	b     testing.TB
	net   *memnet.Network // nil on loopback
	nodes []*node.Node
	names []string
	seed  string // what joiners put in Join
}

// startCluster starts n nodes, n0…n{n-1}; every node after the first joins
// the first. It waits until every node sees n live members and is ready.
func startCluster(b testing.TB, n int, inMemory bool) *benchCluster {
	b.Helper()
	bc := &benchCluster{b: b}
	if inMemory {
		bc.net = memnet.New(1)
	}
	for i := 0; i < n; i++ {
		if _, err := bc.add(fmt.Sprintf("n%d", i)); err != nil {
			bc.stop()
			b.Fatal(err)
		}
	}
	b.Cleanup(bc.stop)
	bc.waitMembers(n, 90*time.Second)
	waitFor(b, "nodes ready", 30*time.Second, 10*time.Millisecond, func() bool {
		for _, nd := range bc.nodes {
			if !nd.Ready() {
				return false
			}
		}
		return true
	})
	return bc
}

// config returns the configuration of a new node called name that joins the
// first node (none for the first node).
func (bc *benchCluster) config(name string) node.Config {
	var join []string
	if bc.seed != "" {
		join = []string{bc.seed}
	}
	return nodeConfig(name, bc.net, join)
}

// add starts one more node.
func (bc *benchCluster) add(name string) (*node.Node, error) {
	nd, err := node.Start(bc.config(name))
	if err != nil {
		return nil, err
	}
	if bc.seed == "" {
		if bc.net != nil {
			bc.seed = name
		} else {
			bc.seed = nd.Members().LocalNode().Address
		}
	}
	bc.nodes = append(bc.nodes, nd)
	bc.names = append(bc.names, name)
	return nd, nil
}

// stop stops every node, in parallel.
func (bc *benchCluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, nd := range bc.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = nd.Stop(ctx)
		}()
	}
	wg.Wait()
	bc.nodes = nil
	if bc.net != nil {
		bc.net.Shutdown()
	}
}

// waitMembers waits until every node sees n live members.
func (bc *benchCluster) waitMembers(n int, timeout time.Duration) {
	bc.b.Helper()
	waitFor(bc.b, fmt.Sprintf("%d live members on every node", n), timeout, 10*time.Millisecond, func() bool {
		for _, nd := range bc.nodes {
			if len(nd.Members().LiveMembers()) != n {
				return false
			}
		}
		return true
	})
}

// waitConverged waits until the nodes hold the same registry.
func (bc *benchCluster) waitConverged(timeout time.Duration, nodes ...*node.Node) {
	bc.b.Helper()
	if len(nodes) == 0 {
		nodes = bc.nodes
	}
	waitFor(bc.b, "convergence", timeout, 20*time.Millisecond, func() bool { return converged(nodes) })
}

// waitFor polls cond every tick until it holds, failing b after timeout.
func waitFor(b testing.TB, what string, timeout, tick time.Duration, cond func() bool) time.Duration {
	b.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			b.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(tick)
	}
	return time.Since(start)
}

// state summarizes a node's registry: the apps hashcode, the instance
// count and a hash of every (app, id, version).
type state struct {
	hashCode string
	count    int
	versions uint64
}

func stateOf(nd *node.Node) state {
	s := nd.View().Snapshot()
	return state{hashCode: s.HashCode(), count: s.Count(), versions: versionsHash(s)}
}

// versionsHash hashes every (app, id, version) of a snapshot.
func versionsHash(s *view.Snapshot) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	s.Apps(func(a *view.App) bool {
		_, _ = h.Write([]byte(a.Name()))
		vs := a.Versions()
		for j, in := range a.Instances() {
			_, _ = h.Write([]byte{0})
			_, _ = h.Write([]byte(in.ID()))
			binary.LittleEndian.PutUint64(buf[:], vs[j].Clock)
			_, _ = h.Write(buf[:])
			_, _ = h.Write([]byte(vs[j].Node))
		}
		return true
	})
	return h.Sum64()
}

// converged reports whether the nodes have the same apps hashcode and the
// same instance versions. The cheap comparisons (count, hashcode) come
// first so that polling it disturbs a busy cluster as little as possible.
func converged(nodes []*node.Node) bool {
	var snaps []*view.Snapshot
	for _, nd := range nodes {
		s := nd.View().Snapshot()
		if len(snaps) > 0 && (s.Count() != snaps[0].Count() || s.HashCode() != snaps[0].HashCode()) {
			return false
		}
		snaps = append(snaps, s)
	}
	var ref uint64
	for i, s := range snaps {
		v := versionsHash(s)
		if i == 0 {
			ref = v
		} else if v != ref {
			return false
		}
	}
	return true
}

// ---- statistics ------------------------------------------------------------------

// percentile returns the p-th percentile (0–100) of sorted ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	k := int(p/100*float64(len(ds))+0.999999) - 1
	k = min(max(k, 0), len(ds)-1)
	return ds[k]
}

func sortDurations(ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
