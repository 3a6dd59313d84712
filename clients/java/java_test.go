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
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/clients/internal/javaharness"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// mavenTimeout bounds one Maven run (JVM start, compile, tests).
const mavenTimeout = 4 * time.Minute

// startNode starts a node on a free loopback port with short timers, stopped
// when the test ends (javaharness.StartNode).
func startNode(t *testing.T, name string, mutate func(*node.Config)) *node.Node {
	t.Helper()
	return javaharness.StartNode(t, name, mutate)
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
	javaharness.WaitReady(t, nodes)

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
	t.Helper()
	return javaharness.StartClusterNode(t, name, join, func(cfg *node.Config) {
		cfg.Replication.RenewFlushInterval = 100 * time.Millisecond
		cfg.Replication.AntiEntropyInterval = 500 * time.Millisecond
	})
}

// maven returns the mvn executable, failing the test if Maven, Java or the
// project's dependencies are missing.
func maven(t *testing.T) string {
	t.Helper()
	return javaharness.Maven(t, "the Maven dependencies are", "com", "netflix", "eureka", "eureka-client")
}

// runMaven runs the module's tests offline with env added, streams Maven's
// output to the test log, and fails the test if Maven fails.
func runMaven(t *testing.T, mvn, module string, env ...string) {
	t.Helper()
	javaharness.RunMaven(t, mvn, ".", mavenTimeout, []string{"-pl", module, "test"}, env...)
}
