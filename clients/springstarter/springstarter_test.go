// Package springstarter_test runs the tests of the Spring Cloud starter (the
// Maven module clients/spring-starter) against a real Heureka node that the Go
// test starts:
//
//   - HEUREKA_URL: the node, serving its change stream;
//   - HEUREKA_PLAIN_URL: the same node behind a reverse proxy that answers 404
//     on …/stream, as a plain Eureka server does, so that the starter falls back
//     to the Eureka client's polling.
//
// Maven runs offline (-o): `make javadeps` (part of `make test`) fills the
// local repository and installs the starter there first.
package springstarter_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// mavenTimeout bounds the Maven run (JVM start, compile, tests).
const mavenTimeout = 4 * time.Minute

// TestSpringStarter runs the starter's Java tests against a node, against
// the node with its stream hidden, against Spring Cloud Netflix's Eureka
// server (no stream), and against a two-node cluster one of whose nodes the
// Java side has stopped through HEUREKA_CONTROL_URL.
func TestSpringStarter(t *testing.T) {
	mvn := maven(t)
	type started struct {
		url string
		err error
	}
	eureka := make(chan started, 1)
	go func() {
		u, err := startEureka(t)
		eureka <- started{u, err}
	}()
	n := startNodeWith(t, "spring-starter", nil)
	plain := hideStream(t, n.URL())
	pair := []*node.Node{startClusterNode(t, "spring-starter-1", nil)}
	pair = append(pair, startClusterNode(t, "spring-starter-2", []string{pair[0].Members().LocalNode().Address}))
	require.Eventually(t, func() bool {
		for _, n := range pair {
			if len(n.Members().LiveMembers()) != len(pair) || !n.Ready() {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the two nodes did not form a ready cluster")
	control := stopper(t, pair)
	e := <-eureka
	require.NoError(t, e.err)
	eurekaURL := e.url
	runMavenFor(t, mvn, mavenTimeout, nil,
		"HEUREKA_URL="+n.URL()+"/",
		"HEUREKA_PLAIN_URL="+plain+"/eureka/",
		"HEUREKA_CLUSTER_URLS="+pair[0].URL()+"/,"+pair[1].URL()+"/",
		"HEUREKA_CONTROL_URL="+control,
		"HEUREKA_EUREKA_URL="+eurekaURL,
	)
}

// stopper serves POST /stop with a node's Eureka URL as the body: it stops
// that node (once) and answers 200, or 404 for a URL it does not know.
func stopper(t *testing.T, nodes []*node.Node) string {
	var mu sync.Mutex
	stopped := map[*node.Node]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/stop" {
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		want := strings.TrimSuffix(strings.TrimSpace(string(body)), "/")
		mu.Lock()
		defer mu.Unlock()
		for _, n := range nodes {
			if n.URL() != want {
				continue
			}
			if !stopped[n] {
				t.Logf("control: stopping %s", n.URL())
				ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
				defer cancel()
				if err := n.Stop(ctx); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				stopped[n] = true
			}
			return
		}
		http.Error(w, "no such node: "+want, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// startNodeWith starts a node on a free loopback port, stopped when the test
// ends; mutate (if not nil) changes its configuration first.
func startNodeWith(t *testing.T, name string, mutate func(*node.Config)) *node.Node {
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

// hideStream serves the node's API through a reverse proxy that answers 404
// on every path ending in /stream, and returns the proxy's root URL.
func hideStream(t *testing.T, nodeURL string) string {
	t.Helper()
	target, err := url.Parse(nodeURL)
	require.NoError(t, err)
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/stream") {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// maven returns the mvn executable, failing the test if Maven, Java or the
// starter's dependencies are missing.
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
	if _, err := os.Stat(filepath.Join(repo, "io", "heureka", "clients", "heureka-spring-cloud-starter")); err != nil {
		t.Fatalf("the starter is not installed in %s (%v): run `make javadeps` before the tests", repo, err)
	}
	return mvn
}

// runMavenFor runs the starter's tests offline (mvn test with extra
// arguments) with env added, within limit, streams Maven's output to the test
// log, and fails the test if Maven fails.
func runMavenFor(t *testing.T, mvn string, limit time.Duration, extra []string, env ...string) {
	t.Helper()
	dir, err := filepath.Abs("../spring-starter")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := append([]string{"-o", "-B", "-ntp", "test"}, extra...)
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
	t.Logf("maven took %s", time.Since(start).Round(100*time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("mvn test did not finish within %s: %v", limit, err)
	}
	if offlineMiss {
		t.Fatalf("Maven misses a dependency offline: run `make javadeps` (its output is above)")
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("mvn test in clients/spring-starter failed (exit code %d); its output is above", exitErr.ExitCode())
	}
	require.NoError(t, err, "running mvn test in clients/spring-starter")
}
