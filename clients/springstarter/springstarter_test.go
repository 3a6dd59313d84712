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
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/clients/internal/javaharness"
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
	n := javaharness.StartNode(t, "spring-starter", nil)
	plain := hideStream(t, n.URL())
	pair := []*node.Node{javaharness.StartClusterNode(t, "spring-starter-1", nil, nil)}
	pair = append(pair, javaharness.StartClusterNode(t, "spring-starter-2", []string{pair[0].Members().LocalNode().Address}, nil))
	javaharness.WaitReady(t, pair)
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
	return javaharness.Maven(t, "the starter is", "io", "heureka", "clients", "heureka-spring-cloud-starter")
}

// runMavenFor runs the starter's tests offline (mvn test with extra
// arguments) with env added, within limit, streams Maven's output to the test
// log, and fails the test if Maven fails.
func runMavenFor(t *testing.T, mvn string, limit time.Duration, extra []string, env ...string) {
	t.Helper()
	javaharness.RunMaven(t, mvn, "../spring-starter", limit, append([]string{"test"}, extra...), env...)
}
