package deploy_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/internal/freeport"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/node"
)

// TestMain removes the built binary and fails the package if goroutines
// outlive the tests (memberlist's Shutdown does not wait for a probe in
// flight: stragglers get a while).
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	if code == 0 {
		deadline := time.Now().Add(20 * time.Second)
		var err error
		for err = goleak.Find(); err != nil && time.Now().Before(deadline); err = goleak.Find() {
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// repoRoot is the module root (deploy/ is one level down).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// heurekaBinary builds ./cmd/heureka once per test run and returns its path.
func heurekaBinary(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "heureka-deploy-test-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "heureka")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/heureka")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/heureka: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// cliFlags is what the binary says about its flags.
type cliFlags struct {
	// flags are the long flag names (without "--") the help mentions.
	flags map[string]bool
	// defaults are the defaults the help states, by flag.
	defaults map[string]string
	// env are the HEUREKA_* variables the binary reads: those the help
	// names, and HEUREKA_<FLAG> for every flag (the documented rule).
	env map[string]bool
}

var (
	flagRe    = regexp.MustCompile(`(?m)(?:^|[\s,\[(])--([a-z][a-z0-9-]*)`)
	envRe     = regexp.MustCompile(`\bHEUREKA_[A-Z0-9_]+\b`)
	defaultRe = regexp.MustCompile(`\(default:?\s+("([^"]*)"|[^;)\s]+)`)
	// flagLineRe finds where a flag's own entry starts in a flag list: a
	// line that begins (after blanks and maybe a shorthand) with --name.
	flagLineRe = regexp.MustCompile(`(?m)^\s*(?:-[a-zA-Z],\s*)?--([a-z][a-z0-9-]*)`)
)

var (
	helpOnce sync.Once
	helpOut  cliFlags
	helpErr  error
)

// binaryFlags runs the binary's help (heureka help, heureka help serve,
// heureka serve --help, whichever answer) and parses the flag list from
// its text, so the test follows the command whatever library it is built
// on.
func binaryFlags(t *testing.T) cliFlags {
	t.Helper()
	bin := heurekaBinary(t)
	helpOnce.Do(func() {
		var text strings.Builder
		for _, args := range [][]string{{"help"}, {"help", "serve"}, {"serve", "--help"}} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			cancel()
			text.Write(out)
			text.WriteByte('\n')
		}
		helpOut, helpErr = parseHelp(text.String())
	})
	require.NoError(t, helpErr)
	return helpOut
}

// parseHelp extracts the flags, their defaults and the environment
// variables from help text.
func parseHelp(text string) (cliFlags, error) {
	f := cliFlags{flags: map[string]bool{}, defaults: map[string]string{}, env: map[string]bool{}}
	for _, m := range flagRe.FindAllStringSubmatch(text, -1) {
		f.flags[m[1]] = true
	}
	if len(f.flags) == 0 {
		return f, fmt.Errorf("no --flags in the help text:\n%s", text)
	}
	// A flag's entry runs from its line to the next flag's line.
	locs := flagLineRe.FindAllStringSubmatchIndex(text, -1)
	for i, loc := range locs {
		name := text[loc[2]:loc[3]]
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if _, seen := f.defaults[name]; seen {
			continue
		}
		if d := defaultRe.FindStringSubmatch(text[loc[1]:end]); d != nil {
			v := d[1]
			if d[2] != "" || strings.HasPrefix(v, `"`) {
				v = d[2]
			}
			f.defaults[name] = v
		}
	}
	for _, e := range envRe.FindAllString(text, -1) {
		f.env[e] = true
	}
	for name := range f.flags {
		f.env["HEUREKA_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))] = true
	}
	return f, nil
}

// defaultPort returns the port of a flag's default address (":8761").
func (f cliFlags) defaultPort(t *testing.T, flag string) string {
	t.Helper()
	d, ok := f.defaults[flag]
	require.True(t, ok, "the help states no default for --%s", flag)
	_, port, err := net.SplitHostPort(d)
	require.NoError(t, err, "default of --%s", flag)
	return port
}

// freePort returns a loopback port that was free a moment ago, for TCP and
// UDP.
func freePort(t *testing.T) string {
	t.Helper()
	p, err := freeport.Port("127.0.0.1", true)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(p)
}

// runBinary starts the binary with args and env (the HEUREKA_* variables
// of the test's own environment are dropped), waits until httpAddr answers
// /healthz, runs check (if not nil) against http://httpAddr, then stops it
// with SIGTERM and checks that it exits cleanly within grace: the graceful
// leave a Kubernetes or systemd stop relies on.
func runBinary(t *testing.T, args []string, env map[string]string, httpAddr string, grace time.Duration, check func(base string)) {
	t.Helper()
	bin := heurekaBinary(t)
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HEUREKA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: &out}, &lockedWriter{w: &out}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("heureka %s\n%s", strings.Join(args, " "), out.String())
		}
	}()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	healthy := false
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !healthy; {
		select {
		case err := <-exited:
			t.Fatalf("heureka exited before serving: %v", err)
		default:
		}
		if resp, err := client.Get("http://" + httpAddr + "/healthz"); err == nil {
			healthy = resp.StatusCode == http.StatusOK
			_ = resp.Body.Close()
		}
		if !healthy {
			time.Sleep(50 * time.Millisecond)
		}
	}
	require.True(t, healthy, "heureka did not answer /healthz on %s", httpAddr)
	if check != nil {
		check("http://" + httpAddr)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "heureka's exit after SIGTERM")
	case <-time.After(grace):
		t.Fatalf("heureka did not exit within %v of SIGTERM", grace)
	}
}

// lockedWriter serialises the writes of the child's stdout and stderr.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// startCluster starts n in-process nodes on an in-memory network, each
// registered in its own registry (as the heureka command runs them), and
// stops them when the test ends.
func startCluster(t *testing.T, n int) []*node.Node {
	t.Helper()
	mem := memnet.New(1)
	var nodes []*node.Node
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, nd := range nodes {
			_ = nd.Stop(ctx)
		}
		mem.Shutdown()
		http.DefaultClient.CloseIdleConnections()
	})
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		cfg := node.DefaultConfig(name)
		cfg.HTTPAddr = "127.0.0.1:0"
		cfg.Logger = slog.New(slog.DiscardHandler)
		cfg.SelfRegister = true
		cfg.Registry.EvictionInterval = 200 * time.Millisecond
		cfg.Registry.RenewalWindow = 500 * time.Millisecond
		cc := cluster.DefaultLocalConfig()
		if i > 0 {
			cc.Join = []string{"n0"}
		}
		cc.MemberlistConfig = func(c *memberlist.Config) {
			c.ProbeInterval = 500 * time.Millisecond
			c.ProbeTimeout = 300 * time.Millisecond
			c.SuspicionMult = 4
			c.GossipInterval = 25 * time.Millisecond
			c.PushPullInterval = 2 * time.Second
		}
		cc.Transport = mem.NewTransport(name)
		cc.Resolver = mem.Resolve
		cfg.Cluster = &cc
		cfg.Replication = cluster.DefaultReplicatorConfig()
		cfg.Replication.RenewFlushInterval = 100 * time.Millisecond
		cfg.Replication.AntiEntropyInterval = 500 * time.Millisecond
		cfg.Replication.LoadInterval = 125 * time.Millisecond
		cfg.Replication.ReadyTimeout = 10 * time.Second
		nd, err := node.Start(cfg)
		require.NoError(t, err)
		nodes = append(nodes, nd)
	}
	require.Eventually(t, func() bool {
		for _, nd := range nodes {
			if len(nd.Members().LiveMembers()) != n || !nd.Ready() {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "cluster did not form")
	return nodes
}

// call sends one request and returns the status code.
func call(t *testing.T, method, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// traffic registers, renews, overrides, reads and cancels on nd, so that
// every per-route and per-status series exists.
func traffic(t *testing.T, nd *node.Node) {
	t.Helper()
	u := nd.URL()
	body := func(id string) string {
		return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"h","app":"ORDERS","ipAddr":"10.0.0.1","status":"UP",
"port":{"$":8080,"@enabled":"true"},"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`, id)
	}
	require.Equal(t, http.StatusNoContent, call(t, "POST", u+"/apps/ORDERS", body("o-1")))
	require.Equal(t, http.StatusNoContent, call(t, "POST", u+"/apps/ORDERS", body("o-2")))
	require.Equal(t, http.StatusOK, call(t, "PUT", u+"/apps/ORDERS/o-1", ""))
	require.Equal(t, http.StatusNotFound, call(t, "PUT", u+"/apps/ORDERS/nobody", ""))
	require.Equal(t, http.StatusOK, call(t, "PUT", u+"/apps/ORDERS/o-2/status?value=OUT_OF_SERVICE", ""))
	require.Equal(t, http.StatusOK, call(t, "GET", u+"/apps", ""))
	require.Equal(t, http.StatusOK, call(t, "GET", u+"/status", ""))
	require.Equal(t, http.StatusOK, call(t, "DELETE", u+"/apps/ORDERS/o-1", ""))
}

// families is one parsed scrape.
type families map[string]*dto.MetricFamily

// scrape fetches and parses nd's /metrics with the Prometheus text parser.
func scrape(t *testing.T, nd *node.Node) families {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+nd.Addr()+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// exports reports whether a scrape carries the series name: a family, or
// the _bucket, _count or _sum series of a histogram or summary family.
func (f families) exports(name string) bool {
	if mf, ok := f[name]; ok && len(mf.GetMetric()) > 0 {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		mf, ok := f[base]
		if !ok || len(mf.GetMetric()) == 0 {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			return true
		case dto.MetricType_SUMMARY:
			return suffix != "_bucket"
		}
	}
	return false
}
