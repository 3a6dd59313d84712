// Package java_test runs the Java Eureka clients' tests (the Maven project
// beside this file) against real Heureka nodes that the Go test starts:
//
//   - netflix/: the plain Netflix DiscoveryClient (eureka-client 2.0.6, the
//     version Spring Cloud 2025.1.4 brings, with its Jersey 3 transport) in
//     JSON, compact JSON and XML, and with basic auth in the service URL;
//   - spring/: Spring Boot 4 apps with spring-cloud-starter-netflix-eureka-client
//     and the load balancer, on a two-node cluster whose first node is stopped
//     mid-test (the Java test asks for it through a control endpoint).
//
// Maven runs offline (-o): `make javadeps` (part of `make test`) fills the
// local repository first. Without it these tests fail and say so.
package java_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// mavenTimeout bounds one Maven run (JVM start, compile, tests).
const mavenTimeout = 4 * time.Minute

// startNode starts a node on a free loopback port with short timers, stopped
// when the test ends.
func startNode(t *testing.T, name string, mutate func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig(name)
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Registry.EvictionInterval = 500 * time.Millisecond
	cfg.Registry.SelfPreservation = false
	if mutate != nil {
		mutate(&cfg)
	}
	n, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
	})
	return n
}

// TestNetflixDiscoveryClient runs netflix/: the lifecycle in three formats,
// each against an open node of its own, the client healing the gaps of a
// delta bounded to nothing, and basic auth against a node with a user.
func TestNetflixDiscoveryClient(t *testing.T) {
	mvn := maven(t)
	const user, pass = "java-client", "java-Pass/with@odd#chars"
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	require.NoError(t, err)
	// One open node per format, so that the three runs can go side by side.
	var env []string
	for _, format := range []string{"JSON", "COMPACT", "XML"} {
		n := startNode(t, "java-"+strings.ToLower(format), nil)
		env = append(env, "HEUREKA_URL_"+format+"="+n.URL()+"/")
	}
	// A node whose delta holds nothing for long: DeltaBoundTest.
	bounded := startNode(t, "java-bounded", func(c *node.Config) { c.View.DeltaMaxBytes = 1 })
	env = append(env, "HEUREKA_URL_BOUNDED="+bounded.URL()+"/")
	secured := startNode(t, "java-auth", func(c *node.Config) {
		c.Auth = &httpapi.AuthConfig{Users: []httpapi.User{{
			Name: user, PasswordHash: string(hash), Roles: httpapi.RoleRead | httpapi.RoleWrite,
		}}}
	})
	runMaven(t, mvn, "netflix", append(env,
		"HEUREKA_AUTH_URL="+secured.URL()+"/",
		"HEUREKA_USER="+user,
		"HEUREKA_PASS="+pass,
	)...)
}

// TestSpringCloudClient runs spring/ against a two-node cluster, both nodes
// in the apps' defaultZone. Mid-test the Java side POSTs
// HEUREKA_CONTROL_URL/stop-used, and the driver stops the node that took
// greeter's registration and renewals: the Eureka client shuffles the URLs of
// its zone, so that node is greeter's first node whatever the order in
// defaultZone. The answer names the survivor and says whether the caller was
// fetching from the stopped node too.
func TestSpringCloudClient(t *testing.T) {
	mvn := maven(t)
	nodes := []*node.Node{startClusterNode(t, "java-spring-1", nil)}
	nodes = append(nodes, startClusterNode(t, "java-spring-2", []string{nodes[0].Members().LocalNode().Address}))
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if len(n.Members().LiveMembers()) != 2 || !n.Ready() {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the two nodes did not form a ready cluster")

	var (
		mu      sync.Mutex
		stopped bool
	)
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/stop-used" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			http.Error(w, "a node was stopped already", http.StatusConflict)
			return
		}
		// greeter registers and renews, the caller only fetches.
		writes := []float64{requests(t, nodes[0], "register", "renew"), requests(t, nodes[1], "register", "renew")}
		reads := []float64{requests(t, nodes[0], "apps", "delta"), requests(t, nodes[1], "apps", "delta")}
		used := 0
		if writes[1] > writes[0] {
			used = 1
		}
		if writes[1-used] != 0 {
			http.Error(w, fmt.Sprintf("greeter wrote to both nodes (%v): which one it uses is unclear", writes),
				http.StatusInternalServerError)
			return
		}
		victim, survivor := nodes[used], nodes[1-used]
		t.Logf("control: stopping %s (defaultZone position %d; register+renew %v, fetches %v per node)",
			victim.URL(), used+1, writes, reads)
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		assert.NoError(t, victim.Stop(ctx))
		stopped = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"stopped":               victim.URL() + "/",
			"stoppedPosition":       used + 1,
			"survivor":              survivor.URL() + "/",
			"callerFetchedThereToo": reads[used] > 0,
		})
	}))
	t.Cleanup(control.Close)

	runMaven(t, mvn, "spring",
		"HEUREKA_URLS="+nodes[0].URL()+"/,"+nodes[1].URL()+"/",
		"HEUREKA_CONTROL_URL="+control.URL,
	)
}

// requests is the node's count of API requests on the given routes
// (heureka_http_requests_total).
func requests(t *testing.T, n *node.Node, routes ...string) float64 {
	families, err := n.Metrics().Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != "heureka_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && slices.Contains(routes, l.GetValue()) {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// startClusterNode starts a node on real loopback (the Java apps reach it)
// that joins the given seeds, with failure detection in seconds.
func startClusterNode(t *testing.T, name string, join []string) *node.Node {
	return startNode(t, name, func(cfg *node.Config) {
		cc := cluster.DefaultLocalConfig()
		cc.Join = join
		cc.MemberlistConfig = func(c *memberlist.Config) {
			c.ProbeInterval = 500 * time.Millisecond
			c.ProbeTimeout = 300 * time.Millisecond
			c.SuspicionMult = 4
			c.GossipInterval = 25 * time.Millisecond
			c.PushPullInterval = 2 * time.Second
			c.TCPTimeout = 2 * time.Second
		}
		cfg.Cluster = &cc
		cfg.Replication = cluster.DefaultReplicatorConfig()
		cfg.Replication.RenewFlushInterval = 100 * time.Millisecond
		cfg.Replication.AntiEntropyInterval = 500 * time.Millisecond
		cfg.Replication.ReadyTimeout = 10 * time.Second
	})
}

// maven returns the mvn executable, failing the test if Maven, Java or the
// project's dependencies are missing.
func maven(t *testing.T) string {
	t.Helper()
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		t.Fatalf("mvn (Maven 3.8+, with a JDK 17+) is not on PATH: %v", err)
	}
	home, _ := os.UserHomeDir()
	repo := filepath.Join(home, ".m2", "repository")
	if v := os.Getenv("HEUREKA_MAVEN_REPO"); v != "" {
		repo = v
	}
	if _, err := os.Stat(filepath.Join(repo, "com", "netflix", "eureka", "eureka-client")); err != nil {
		t.Fatalf("the Maven dependencies are not in %s (%v): run `make javadeps` before the tests", repo, err)
	}
	return mvn
}

// runMaven runs the module's tests offline with env added, streams Maven's
// output to the test log, and fails the test if Maven fails.
func runMaven(t *testing.T, mvn, module string, env ...string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), mavenTimeout)
	defer cancel()
	args := []string{"-o", "-B", "-ntp", "-pl", module, "test"}
	if v := os.Getenv("HEUREKA_MAVEN_REPO"); v != "" {
		args = append(args, "-Dmaven.repo.local="+v)
	}
	cmd := exec.CommandContext(ctx, mvn, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	logged := make(chan struct{})
	var offlineMiss bool
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "offline mode") {
				offlineMiss = true
			}
			t.Log(line)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Logf("running %s %s in %s", mvn, strings.Join(args, " "), dir)
	start := time.Now()
	err = cmd.Run()
	pw.Close()
	<-logged
	t.Logf("maven %s took %s", module, time.Since(start).Round(100*time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("mvn -pl %s test did not finish within %s: %v", module, mavenTimeout, err)
	}
	if offlineMiss {
		t.Fatalf("Maven misses a dependency offline: run `make javadeps` (its output is above)")
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("mvn -pl %s test failed (exit code %d); its output is above", module, exitErr.ExitCode())
	}
	require.NoError(t, err, "running mvn -pl %s test", module)
}
