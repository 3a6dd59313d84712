package migration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/clients/internal/javaharness"
	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/eurekapeer"
	"github.com/heureka/heureka/internal/freeport"
	"github.com/heureka/heureka/node"
)

// The timers, scaled together. Clients renew every second with a 3 s lease;
// the Java server evicts every second (and, by its known bug, only after
// twice the lease); Heureka evicts every 500 ms. A hold of holdLease covers
// the Java server's effective expiry with a margin, so an instance whose
// renewals do not arrive is gone before the hold ends.
const (
	renewInterval = time.Second
	leaseSecs     = 3
	javaEviction  = time.Second
	heurekaEvict  = 500 * time.Millisecond
	holdLease     = 2*leaseSecs*time.Second + 3*javaEviction
	converge      = 20 * time.Second // a change reaches every server
	pollEvery     = 200 * time.Millisecond
)

// ---- the Java reference server ----

// startJava starts the reference server on port with peers (Eureka service
// URLs, possibly not up yet) in its defaultZone, and returns once it serves.
func startJava(t *testing.T, port int, peers ...string) *javaharness.Reference {
	t.Helper()
	args := []string{
		fmt.Sprintf("--eureka.server.eviction-interval-timer-in-ms=%d", javaEviction.Milliseconds()),
		"--eureka.server.registry-sync-retries=1",
		// Peer requests on a loaded machine take longer than Java's 200 ms.
		"--eureka.server.peer-node-read-timeout-ms=5000",
		"--eureka.server.peer-node-connect-timeout-ms=2000",
		"--logging.level.com.netflix.eureka.registry=INFO",
	}
	if len(peers) > 0 {
		args = append(args,
			"--eureka.client.service-url.defaultZone="+strings.Join(peers, ","),
			"--eureka.client.register-with-eureka=true",
			"--eureka.client.fetch-registry=true")
	}
	j, err := javaharness.StartReference(t, port, args...)
	require.NoError(t, err)
	return j
}

// freePort reserves a loopback port for a server started later.
func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Port("127.0.0.1", true) // a node's gossip port too
	require.NoError(t, err)
	return p
}

// ---- Heureka nodes ----

// heurekaCluster is Heureka nodes on loopback (real gossip, real HTTP).
type heurekaCluster struct {
	t     *testing.T
	nodes []*node.Node
}

// nodeConfig is a Heureka node with the timers scaled with the clients' and
// self-preservation off on both sides, so that an instance whose renewals
// stop is evicted (the check must be able to fail). eurekaPeers, when not
// empty, are given to --eureka-peers.
func nodeConfig(name, addr string, join []string, eurekaPeers []string) node.Config {
	cfg := node.DefaultConfig(name)
	cfg.HTTPAddr = addr
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Registry.EvictionInterval = heurekaEvict
	cfg.Registry.SelfPreservation = false
	cfg.Registry.ExpectedClientRenewalInterval = renewInterval
	cfg.Registry.RenewalWindow = 4 * renewInterval
	cc := javaharness.ClusterConfig(join)
	cfg.Cluster = &cc
	cfg.Replication = cluster.DefaultReplicatorConfig()
	cfg.Replication.RenewFlushInterval = 200 * time.Millisecond
	cfg.Replication.AntiEntropyInterval = time.Second
	cfg.Replication.ReadyTimeout = 5 * time.Second
	if len(eurekaPeers) > 0 {
		ep := eurekapeer.DefaultConfig(eurekaPeers...)
		ep.FlushInterval = 200 * time.Millisecond
		ep.MaxBackoff = 2 * time.Second
		ep.Timeout = 3 * time.Second
		cfg.EurekaPeers = &ep
	}
	return cfg
}

// startHeureka starts nodes at addrs ("127.0.0.1:0" for any port), each
// after the first joining the first, and waits until they see each other.
func startHeureka(t *testing.T, addrs []string, eurekaPeers []string, tweak func(*node.Config)) *heurekaCluster {
	t.Helper()
	hc := &heurekaCluster{t: t}
	var seed []string
	for i, addr := range addrs {
		cfg := nodeConfig(fmt.Sprintf("h%d", i+1), addr, seed, eurekaPeers)
		if tweak != nil {
			tweak(&cfg)
		}
		nd, err := node.Start(cfg)
		require.NoError(t, err)
		hc.nodes = append(hc.nodes, nd)
		if i == 0 {
			seed = []string{nd.Members().LocalNode().Address}
		}
	}
	t.Cleanup(hc.stop)
	require.Eventually(t, func() bool {
		for _, nd := range hc.nodes {
			if len(nd.Members().LiveMembers()) != len(hc.nodes) || !nd.Replicator().Ready() {
				return false
			}
		}
		return true
	}, converge, pollEvery, "the Heureka nodes see each other")
	return hc
}

func (hc *heurekaCluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, nd := range hc.nodes {
		_ = nd.Stop(ctx)
	}
}

// urls returns the nodes' Eureka service URLs (without the trailing slash).
func (hc *heurekaCluster) urls() []string {
	var out []string
	for _, nd := range hc.nodes {
		out = append(out, nd.URL())
	}
	return out
}

// ---- HTTP ----

var httpClient = &http.Client{Timeout: 5 * time.Second}

func do(method, url string, body []byte) (int, []byte) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func get(url string) (int, []byte) { return do(http.MethodGet, url, nil) }

// status returns the instance's status on the server at base, "" when the
// server does not show it.
func status(base, app, id string) string {
	code, body := get(base + "/apps/" + app + "/" + id)
	if code != http.StatusOK {
		return ""
	}
	var doc struct {
		Instance struct {
			Status string `json:"status"`
		} `json:"instance"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	return doc.Instance.Status
}

// ---- simulated Eureka clients ----

// client is a Eureka client as the Java DiscoveryClient behaves: it
// registers, renews every renewInterval with its lastDirtyTimestamp, and
// registers again when a renewal gets 404. Its server can be switched
// (moving it from Eureka to Heureka).
type client struct {
	app, id string
	dirty   int64

	mu      sync.Mutex
	target  string   // the server it renews with
	errs    []string // renewals that did not get 200 (or 404 then a 204) in any attempt: when, where, what
	retried []string // failed attempts that a retry made good

	stop chan struct{}
	done chan struct{}
}

func (c *client) body() []byte {
	return []byte(fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"%s.local","app":%q,"ipAddr":"10.0.0.1",`+
		`"status":"UP","overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},`+
		`"countryId":1,"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":%d,"durationInSecs":%d},"vipAddress":%q,"lastDirtyTimestamp":"%d"}}`,
		c.id, c.id, c.app, int(renewInterval/time.Second), leaseSecs, strings.ToLower(c.app), c.dirty))
}

// startClient registers app/id on target and renews there until stopped.
func startClient(t *testing.T, target, app, id string) *client {
	t.Helper()
	c := &client{app: app, id: id, dirty: time.Now().UnixMilli(), target: target, stop: make(chan struct{}), done: make(chan struct{})}
	code, body := do(http.MethodPost, target+"/apps/"+app, c.body())
	require.Equal(t, http.StatusNoContent, code, "register %s/%s on %s: %s", app, id, target, body)
	go c.run()
	t.Cleanup(c.halt)
	return c
}

func (c *client) run() {
	defer close(c.done)
	tick := time.NewTicker(renewInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		target := c.target
		c.mu.Unlock()
		c.renew(target)
	}
}

// heartbeatAttempts is how many times a renewal is tried, as the Java
// client's RetryableEurekaHttpClient does (three attempts) when a request
// fails in transport or gets a 5xx.
const heartbeatAttempts = 3

// renew sends one renewal to target (registering again on 404), trying it
// up to heartbeatAttempts times while it fails in transport or gets a 5xx.
// A failed renewal is kept in c.errs; failed attempts that a retry made
// good, in c.retried.
func (c *client) renew(target string) {
	var tried []string
	for range heartbeatAttempts {
		start := time.Now()
		op := "renew"
		code, body := do(http.MethodPut, fmt.Sprintf("%s/apps/%s/%s?status=UP&lastDirtyTimestamp=%d", target, c.app, c.id, c.dirty), nil)
		if code == http.StatusNotFound {
			op = "register after 404"
			code, body = do(http.MethodPost, target+"/apps/"+c.app, c.body())
		}
		if code == http.StatusOK || code == http.StatusNoContent {
			c.mu.Lock()
			c.retried = append(c.retried, tried...)
			c.mu.Unlock()
			return
		}
		tried = append(tried, fmt.Sprintf("%s %s on %s after %v: %d %s",
			start.Format("15:04:05.000"), op, target, time.Since(start).Round(time.Millisecond), code, body))
		if code != 0 && code < http.StatusInternalServerError {
			break // a 4xx is an answer, not a fault to retry
		}
	}
	c.mu.Lock()
	c.errs = append(c.errs, strings.Join(tried, "; "))
	c.mu.Unlock()
}

// moveTo registers the client on target and renews there from now on; it
// no longer renews with its old server (README, migration step 3).
func (c *client) moveTo(t *testing.T, target string) {
	t.Helper()
	code, body := do(http.MethodPost, target+"/apps/"+c.app, c.body())
	require.Equal(t, http.StatusNoContent, code, "register %s/%s on %s: %s", c.app, c.id, target, body)
	c.mu.Lock()
	c.target = target
	c.mu.Unlock()
}

// checkRenewals asserts that no client's renewal failed in every attempt,
// and logs the attempts that a retry made good.
func checkRenewals(t *testing.T, clients []*client) {
	t.Helper()
	for _, c := range clients {
		c.mu.Lock()
		errs, retried := append([]string(nil), c.errs...), append([]string(nil), c.retried...)
		c.mu.Unlock()
		for _, r := range retried {
			t.Logf("%s/%s: an attempt failed, its retry did not: %s", c.app, c.id, r)
		}
		assert.Empty(t, errs, "%s/%s: failed renewals", c.app, c.id)
	}
}

// halt stops renewing (idempotent).
func (c *client) halt() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// cancel stops renewing and cancels with the client's server.
func (c *client) cancel(t *testing.T) {
	t.Helper()
	c.halt()
	c.mu.Lock()
	target := c.target
	c.mu.Unlock()
	code, body := do(http.MethodDelete, target+"/apps/"+c.app+"/"+c.id, nil)
	require.Equal(t, http.StatusOK, code, "cancel %s/%s: %s", c.app, c.id, body)
}

// ---- checks ----

// missing returns "server: app/id" for every client not shown by a server.
func missing(servers []string, clients []*client) []string {
	var out []string
	for _, s := range servers {
		for _, c := range clients {
			if status(s, c.app, c.id) == "" {
				out = append(out, s+": "+c.app+"/"+c.id)
			}
		}
	}
	return out
}

// waitVisible waits until every client is shown by every server.
func waitVisible(t *testing.T, what string, servers []string, clients []*client) {
	t.Helper()
	var last []string
	ok := assertEventually(converge, func() bool { last = missing(servers, clients); return len(last) == 0 })
	require.True(t, ok, "%s: still missing after %s: %v", what, converge, last)
}

// holdVisible checks, for d, that every client stays shown by every server:
// the number of instances lost is 0 at every sample.
func holdVisible(t *testing.T, what string, d time.Duration, servers []string, clients []*client) {
	t.Helper()
	samples := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(pollEvery) {
		lost := missing(servers, clients)
		require.Empty(t, lost, "%s: instances lost while their clients keep renewing", what)
		samples++
	}
	t.Logf("%s: %d instances on %d servers, 0 lost over %s (%d samples)", what, len(clients), len(servers), d, samples)
}

// waitGone waits until no server shows app/id.
func waitGone(t *testing.T, what string, servers []string, app, id string) {
	t.Helper()
	ok := assertEventually(converge, func() bool {
		for _, s := range servers {
			if status(s, app, id) != "" {
				return false
			}
		}
		return true
	})
	require.True(t, ok, "%s: %s/%s still shown", what, app, id)
}

// waitStatus waits until every server shows app/id with status want.
func waitStatus(t *testing.T, what string, servers []string, app, id, want string) {
	t.Helper()
	var got []string
	ok := assertEventually(converge, func() bool {
		got = got[:0]
		for _, s := range servers {
			got = append(got, status(s, app, id))
		}
		for _, g := range got {
			if g != want {
				return false
			}
		}
		return true
	})
	require.True(t, ok, "%s: want %s everywhere, got %v", what, want, got)
}

func assertEventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(pollEvery) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// The simulated client's renewal check can fail: a renewal that gets a 5xx
// in all three attempts (the Java client's RetryableEurekaHttpClient makes
// three), or a 4xx other than 404 (not retried), is a failed renewal; one
// that a retry makes good is only logged.
func TestClientRenewalCheck(t *testing.T) {
	t.Parallel()
	var fail atomic.Int32 // the next fail requests get 503
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if fail.Add(-1) >= 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "conflict") {
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	base := srv.URL + "/eureka"

	c := &client{app: "A", id: "a-1"}
	fail.Store(2)
	c.renew(base)
	assert.Empty(t, c.errs, "made good by its third attempt")
	assert.Len(t, c.retried, 2)
	assert.EqualValues(t, 3, requests.Swap(0))

	fail.Store(3)
	c.renew(base)
	assert.Len(t, c.errs, 1, "a 503 in every attempt")
	assert.EqualValues(t, 3, requests.Swap(0), "three attempts, no more")

	fail.Store(0)
	conflict := &client{app: "A", id: "conflict"}
	conflict.renew(base)
	assert.Len(t, conflict.errs, 1, "a 409 fails the renewal")
	assert.Empty(t, conflict.retried)
	assert.EqualValues(t, 1, requests.Load(), "a 409 is not retried")
}
