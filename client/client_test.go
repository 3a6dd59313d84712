package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/client"
	"github.com/heureka/heureka/node"
)

// startNode starts a real Heureka node on loopback with its timers shrunk
// for leases of a few seconds: eviction every 50 ms, no self-preservation
// (it would stop evictions of the few instances a test has).
func startNode(t *testing.T) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig("client-test")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Registry.EvictionInterval = 50 * time.Millisecond
	cfg.Registry.RenewalWindow = 100 * time.Millisecond
	cfg.Registry.SelfPreservation = false
	cfg.Registry.ExpectedClientRenewalInterval = 500 * time.Millisecond
	cfg.View.DeltaRetentionInterval = 50 * time.Millisecond
	cfg.View.CacheUpdateInterval = 20 * time.Millisecond
	n, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
	})
	return n
}

// testConfig is a client of app/id against urls with a 2 s lease renewed
// every 500 ms and short watch timers; it logs to t.
func testConfig(t *testing.T, app, id string, urls ...string) client.Config {
	cfg := client.DefaultConfig()
	cfg.ServerURLs = urls
	cfg.Instance.App = app
	cfg.Instance.InstanceID = id
	cfg.Instance.HostName = id + ".local"
	cfg.Instance.IPAddr = "10.0.0.1"
	cfg.Instance.Port = 8080
	cfg.Instance.VIPAddress = strings.ToLower(app)
	cfg.Instance.Metadata = map[string]string{"zone": "a"}
	cfg.LeaseDuration = 2 * time.Second
	cfg.RenewalInterval = 500 * time.Millisecond
	cfg.RequestTimeout = 2 * time.Second
	cfg.ShutdownTimeout = 2 * time.Second
	cfg.WatchWait = 5 * time.Second
	cfg.PollInterval = 100 * time.Millisecond
	cfg.RetryInitial = 20 * time.Millisecond
	cfg.RetryMax = 200 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// eurekaURL is the Eureka base URL of n.
func eurekaURL(n *node.Node) string { return n.URL() + "/" }

// appIDs returns the instance ids of app as GET /eureka/apps shows them.
func appIDs(t *testing.T, n *node.Node, app string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, n.URL()+"/apps", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var doc struct {
		Applications struct {
			Application []struct {
				Name     string `json:"name"`
				Instance []struct {
					InstanceID string `json:"instanceId"`
				} `json:"instance"`
			} `json:"application"`
		} `json:"applications"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&doc))
	ids := []string{}
	for _, a := range doc.Applications.Application {
		if a.Name == app {
			for _, in := range a.Instance {
				ids = append(ids, in.InstanceID)
			}
		}
	}
	return ids
}

// requireIDs waits until GET /eureka/apps shows exactly the instances
// want of app (the node's read cache is refreshed every 20 ms).
func requireIDs(t *testing.T, n *node.Node, app string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, appIDs(t, n, app)) }, 10*time.Second, 10*time.Millisecond,
		"%s shows %v", app, want)
}

// registerRaw registers an instance that nobody renews, with a lease of
// leaseSecs, straight through the API.
func registerRaw(t *testing.T, n *node.Node, app, id string, leaseSecs int) {
	t.Helper()
	body := fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"h","app":%q,"ipAddr":"10.0.0.9","status":"UP",`+
		`"port":{"$":8080,"@enabled":"true"},"leaseInfo":{"durationInSecs":%d},`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`, id, app, leaseSecs)
	res, err := http.Post(n.URL()+"/apps/"+app, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode)
}

func TestRegisterIsVisible(t *testing.T) {
	n := startNode(t)
	c, err := client.New(testConfig(t, "orders", "orders-1", eurekaURL(n)))
	require.NoError(t, err)
	require.NoError(t, c.Register(t.Context()))
	requireIDs(t, n, "ORDERS", "orders-1")

	require.NoError(t, c.Renew(t.Context()))
	require.NoError(t, c.Cancel(t.Context()))
	requireIDs(t, n, "ORDERS")
	assert.ErrorIs(t, c.Renew(t.Context()), client.ErrNotRegistered)
	assert.ErrorIs(t, c.Cancel(t.Context()), client.ErrNotRegistered)
}

func TestRunRenewsPastTheLeaseAndCancelsOnShutdown(t *testing.T) {
	n := startNode(t)
	c, err := client.New(testConfig(t, "orders", "orders-1", eurekaURL(n)))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	requireIDs(t, n, "ORDERS", "orders-1")
	// A control instance with the same 2 s lease that nobody renews: once
	// it is evicted, a whole lease has passed with the eviction running.
	registerRaw(t, n, "CONTROL", "control-1", 2)
	requireIDs(t, n, "CONTROL", "control-1")
	requireIDs(t, n, "CONTROL") // evicted
	assert.Equal(t, []string{"orders-1"}, appIDs(t, n, "ORDERS"), "renewals keep the instance past its lease")

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	requireIDs(t, n, "ORDERS") // Run cancels the registration on shutdown
}

func TestRunRegistersAgainAfterA404(t *testing.T) {
	n := startNode(t)
	c, err := client.New(testConfig(t, "orders", "orders-1", eurekaURL(n)))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	requireIDs(t, n, "ORDERS", "orders-1")

	// The server forgets the instance (an operator's DELETE): the next
	// renewal is answered 404 and Run registers again.
	req, err := http.NewRequest(http.MethodDelete, n.URL()+"/apps/ORDERS/orders-1", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	requireIDs(t, n, "ORDERS")             // the DELETE is visible
	requireIDs(t, n, "ORDERS", "orders-1") // registered again after a renewal got 404

	// SetStatus registers the new status.
	require.NoError(t, c.SetStatus(t.Context(), client.StatusDown))
	watch, wstop := context.WithCancel(t.Context())
	defer wstop()
	ch := c.Watch(watch, "orders")
	require.Eventually(t, func() bool {
		select {
		case list := <-ch:
			return len(list) == 1 && list[0].Status == client.StatusDown
		default:
			return false
		}
	}, 10*time.Second, 20*time.Millisecond)

	stop()
	require.NoError(t, <-done)
}

func TestRunTwiceIsRefused(t *testing.T) {
	n := startNode(t)
	c, err := client.New(testConfig(t, "orders", "orders-1", eurekaURL(n)))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	requireIDs(t, n, "ORDERS", "orders-1")
	assert.ErrorIs(t, c.Run(t.Context()), client.ErrRunning)
	stop()
	require.NoError(t, <-done)
}

// deadURL is a base URL on a loopback port where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + "/eureka/"
}

func TestFailoverToTheNextServer(t *testing.T) {
	n := startNode(t)
	c, err := client.New(testConfig(t, "orders", "orders-1", deadURL(t), eurekaURL(n)))
	require.NoError(t, err)
	require.NoError(t, c.Register(t.Context()))
	requireIDs(t, n, "ORDERS", "orders-1")
	require.NoError(t, c.Renew(t.Context()))

	// A watch fails over too.
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	ch := c.Watch(ctx, "orders")
	waitFor(t, ch, "orders-1")
}

func TestFailoverOn5xx(t *testing.T) {
	n := startNode(t)
	failing := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = failing.Serve(l) }()
	t.Cleanup(func() { _ = failing.Close() })

	c, err := client.New(testConfig(t, "orders", "orders-1", "http://"+l.Addr().String()+"/eureka/", eurekaURL(n)))
	require.NoError(t, err)
	require.NoError(t, c.Register(t.Context()))
	requireIDs(t, n, "ORDERS", "orders-1")
}

func TestAllServersDown(t *testing.T) {
	c, err := client.New(testConfig(t, "orders", "orders-1", deadURL(t), deadURL(t)))
	require.NoError(t, err)
	err = c.Register(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no server answered (2 tried)")
}

// receive returns the next list from ch, failing the test if none comes.
func receive(t *testing.T, ch <-chan []client.Instance) []client.Instance {
	t.Helper()
	select {
	case list, ok := <-ch:
		require.True(t, ok, "the watch channel is open")
		return list
	case <-time.After(10 * time.Second):
		t.Fatal("no instance list delivered")
		return nil
	}
}
