package fargo_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/hudl/fargo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// A new user's first try: a node started with a 1 s
// eviction timer and self-preservation off, and fargo registering an
// instance with a 3 s lease that it never renews. The node evicts it about
// one lease plus one eviction run after the registration, right after
// start; it used to keep it for a fixed 90 s takeover grace, listed in
// GET /apps while GET /apps/{app}/{id} already answered 404.
func TestFreshNodeEvictsShortLeaseRightAfterStart(t *testing.T) {
	cfg := node.DefaultConfig("fargo-evict")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Registry.EvictionInterval = time.Second
	cfg.Registry.SelfPreservation = false
	n, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Stop(t.Context()) })

	conn := newConn(t, n.URL(), true)
	ins := newInstance("shortlease", "short-1", "short-1.local", 8080)
	ins.LeaseInfo = fargo.LeaseInfo{RenewalIntervalInSecs: 1, DurationInSecs: 3}
	registered := time.Now()
	require.NoError(t, conn.RegisterInstance(ins))

	// Gone from the whole registry (what fargo's GetApps polls) and from
	// the application's own document.
	gone := func() bool {
		apps, err := conn.GetApps()
		if err != nil {
			return false
		}
		if app := apps["SHORTLEASE"]; app != nil && len(app.Instances) > 0 {
			return false
		}
		resp, err := http.Get(n.URL() + "/apps/SHORTLEASE")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusNotFound
	}
	require.False(t, gone(), "registered")
	// The bound is generous for a loaded machine; the figure is logged.
	require.Eventually(t, gone, 30*time.Second, 50*time.Millisecond, "not evicted (the old fixed grace kept it 90 s)")
	took := time.Since(registered)
	t.Logf("evicted %.2fs after registration (lease 3s, eviction every 1s)", took.Seconds())
	assert.Greater(t, took, 3*time.Second, "never before the lease ran out")
	// A heartbeat now answers 404, and fargo would register again.
	err = conn.HeartBeatInstance(ins)
	assert.Equal(t, 404, statusCode(err), "heartbeat after eviction: %v", err)
}
