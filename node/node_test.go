package node_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heureka/heureka/node"
)

// lifecycleLogs is a log sink safe for concurrent writers.
type lifecycleLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lifecycleLogs) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lifecycleLogs) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lifecycleConfig is a node on addr with short timers, logging into logs.
func lifecycleConfig(addr string, logs io.Writer) node.Config {
	cfg := node.DefaultConfig("node-test")
	cfg.HTTPAddr = addr
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Registry.EvictionInterval = 50 * time.Millisecond
	cfg.Registry.RenewalWindow = 100 * time.Millisecond
	cfg.Registry.SelfPreservation = false
	cfg.View.DeltaRetentionInterval = 50 * time.Millisecond
	cfg.View.CacheUpdateInterval = 20 * time.Millisecond
	return cfg
}

// lifecycleRegistration is the body registering instance "i-n" of app with
// a lease of durationSecs (0: Eureka's default 90 s).
func lifecycleRegistration(app string, n, durationSecs int) string {
	return fmt.Sprintf(`{"instance":{"instanceId":"i-%d","hostName":"h%d","app":%q,"ipAddr":"10.0.0.%d",`+
		`"status":"UP","port":{"$":8080,"@enabled":"true"},"leaseInfo":{"durationInSecs":%d},`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`, n, n, app, n%250, durationSecs)
}

// lifecycleCall sends one request and returns the status code; the body is
// read (and checked when gzipped) so that the connection can be reused.
func lifecycleCall(t *testing.T, c *http.Client, method, url, body string, hdr ...string) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	require.NoError(t, err, "%s %s", method, url)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		_, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	return res.StatusCode
}

// lifecycleTraffic drives every kind of request at a node from several
// goroutines, some of whose keep-alive connections stay idle afterwards.
func lifecycleTraffic(t *testing.T, c *http.Client, base string) {
	t.Helper()
	// One short lease that nobody renews, for the eviction timer.
	assert.Equal(t, http.StatusNoContent, lifecycleCall(t, c, "POST", base+"/eureka/apps/EVICTEE", lifecycleRegistration("EVICTEE", 1, 1), "Content-Type", "application/json"))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			app := fmt.Sprintf("APP-%d", g)
			for i := 0; i < 10; i++ {
				n := g*100 + i
				id := fmt.Sprintf("i-%d", n)
				assert.Equal(t, http.StatusNoContent, lifecycleCall(t, c, "POST", base+"/eureka/apps/"+app, lifecycleRegistration(app, n, 0), "Content-Type", "application/json"))
				assert.Equal(t, http.StatusOK, lifecycleCall(t, c, "PUT", base+"/eureka/apps/"+app+"/"+id, ""))
				assert.Equal(t, http.StatusOK, lifecycleCall(t, c, "PUT", base+"/eureka/apps/"+app+"/"+id+"/status?value=OUT_OF_SERVICE", ""))
				assert.Equal(t, http.StatusOK, lifecycleCall(t, c, "GET", base+"/eureka/apps", "", "Accept-Encoding", "gzip"))
				assert.Equal(t, http.StatusOK, lifecycleCall(t, c, "GET", base+"/eureka/apps/delta", "", "Accept", "application/json", "Accept-Encoding", "gzip"))
				assert.Equal(t, http.StatusOK, lifecycleCall(t, c, "GET", base+"/eureka/apps/"+app+"/"+id, "", "Accept", "application/json"))
				assert.Equal(t, http.StatusOK, lifecycleCall(t, c, "GET", base+"/metrics", ""))
				if i%2 == 0 {
					assert.Equal(t, http.StatusOK, lifecycleCall(t, c, "DELETE", base+"/eureka/apps/"+app+"/"+id, ""))
				}
			}
		}()
	}
	wg.Wait()
	// Leave some work to the timers: unrenewed leases are evicted.
	require.Eventually(t, func() bool {
		return lifecycleCall(t, c, "GET", base+"/eureka/apps/EVICTEE", "") == http.StatusNotFound
	}, 15*time.Second, 20*time.Millisecond, "eviction runs while the node is up")
}

// within runs fn and fails the test if it has not returned after d (a hung
// Stop fails here instead of at the test binary's timeout).
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		require.FailNow(t, what+" hangs", "still running after %v", d)
	}
}

// TestStartStopLeavesNothing starts and stops a node several times, with
// traffic, and checks that no goroutine survives, that Stop is idempotent
// and that the port is free again after Stop.
func TestStartStopLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t)

	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 8}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	addr := "127.0.0.1:0"
	for round := 0; round < 4; round++ {
		logs := &lifecycleLogs{}
		n, err := node.Start(lifecycleConfig(addr, logs))
		require.NoError(t, err, "round %d", round)
		// Later rounds reuse the port the first one got: Stop released it.
		if round == 0 {
			addr = n.Addr()
		}
		require.Equal(t, addr, n.Addr())
		assert.Equal(t, "http://"+addr+"/eureka", n.URL())
		base := "http://" + addr

		lifecycleTraffic(t, client, base)
		// A client connection still open (idle keep-alive) when Stop begins.
		assert.Equal(t, http.StatusOK, lifecycleCall(t, client, "GET", base+"/healthz", ""))

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// Stop from several goroutines at once, then once more: every call
		// returns the first one's result, and the node stops once.
		errs := make([]error, 3)
		within(t, 20*time.Second, "Stop", func() {
			var wg sync.WaitGroup
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = n.Stop(ctx)
				}()
			}
			wg.Wait()
		})
		for _, err := range errs {
			assert.NoError(t, err)
		}
		assert.NoError(t, n.Stop(ctx), "Stop after Stop")
		cancel()
		assert.Equal(t, 1, strings.Count(logs.String(), "heureka node stopped"), "round %d: stopped once\n%s", round, logs.String())

		// The port is released: nothing answers and it can be bound again.
		_, err = client.Get(base + "/healthz")
		assert.Error(t, err, "round %d: still serving after Stop", round)
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, "round %d: port not released", round)
		require.NoError(t, ln.Close())

		// The registry refuses work once stopped.
		_, err = n.Registry().Cancel(context.Background(), "APP-0", "i-1", false)
		assert.Error(t, err)
	}
	tr.CloseIdleConnections()
}

// TestStopWhileRequestsRun stops a node under load: in-flight requests
// finish or fail cleanly, and nothing leaks.
func TestStopWhileRequestsRun(t *testing.T) {
	defer goleak.VerifyNone(t)

	logs := &lifecycleLogs{}
	n, err := node.Start(lifecycleConfig("127.0.0.1:0", logs))
	require.NoError(t, err)
	tr := &http.Transport{DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	base := "http://" + n.Addr()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				app := fmt.Sprintf("LOAD-%d", g)
				res, err := client.Post(base+"/eureka/apps/"+app, "application/json", strings.NewReader(lifecycleRegistration(app, g*1000+i, 0)))
				if err != nil {
					return // the server is gone
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				// While it runs, the node answers 204; once the registry is
				// closed, 503.
				if res.StatusCode != http.StatusNoContent && res.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("register during shutdown: %d", res.StatusCode)
					return
				}
			}
		}()
	}
	require.Eventually(t, func() bool { return n.Registry().Count() >= 20 }, 15*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	within(t, 20*time.Second, "Stop", func() { assert.NoError(t, n.Stop(ctx)) })
	close(stop)
	wg.Wait()
	tr.CloseIdleConnections()
	assert.NotContains(t, logs.String(), "level=ERROR")
}

// TestStartErrors: a node that cannot start returns an error, leaves no
// goroutine behind and does not hold the port.
func TestStartErrors(t *testing.T) {
	defer goleak.VerifyNone(t)

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, err = node.Start(lifecycleConfig(busy.Addr().String(), io.Discard))
	require.Error(t, err)
	assert.Contains(t, err.Error(), busy.Addr().String())
	require.NoError(t, busy.Close())

	_, err = node.Start(lifecycleConfig("not-an-address", io.Discard))
	assert.Error(t, err)

	cfg := lifecycleConfig("127.0.0.1:0", io.Discard)
	cfg.Registry.EvictionInterval = 0
	_, err = node.Start(cfg)
	assert.ErrorContains(t, err, "EvictionInterval")

	// After the failures a node starts on the address that was busy.
	n, err := node.Start(lifecycleConfig(busy.Addr().String(), io.Discard))
	require.NoError(t, err)
	within(t, 20*time.Second, "Stop", func() { assert.NoError(t, n.Stop(context.Background())) })
}

// TestNodeDefaultConfig pins the node defaults that the command relies on.
func TestNodeDefaultConfig(t *testing.T) {
	cfg := node.DefaultConfig("n1")
	assert.Equal(t, "n1", cfg.Name)
	assert.Equal(t, ":8761", cfg.HTTPAddr)
	assert.Equal(t, "n1", cfg.Registry.NodeName)
	assert.Equal(t, 60*time.Second, cfg.Registry.EvictionInterval)
	assert.True(t, cfg.Registry.SelfPreservation)
	assert.Equal(t, int64(1<<20), cfg.MaxBodyBytes)
	assert.NoError(t, cfg.Registry.Validate())
}
