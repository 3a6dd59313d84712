package node_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// The API names the cluster layer's reasons in the same words as the
// cluster package, which it does not import.
func TestEvictionHoldReasonsAgreeWithTheClusterLayer(t *testing.T) {
	assert.Equal(t, cluster.HoldSilentMember, httpapi.HoldSilentMember)
	assert.Equal(t, cluster.HoldDeaf, httpapi.HoldDeaf)
	assert.Equal(t, cluster.HoldViewsDisagree, httpapi.HoldViewsDisagree)
	assert.ElementsMatch(t, []string{httpapi.HoldSelfPreservation, cluster.HoldSilentMember, cluster.HoldDeaf, cluster.HoldViewsDisagree},
		httpapi.EvictionHoldReasons)
}

// getEviction reads GET /admin/eviction of nd; ok is false when the
// request failed (for require.Eventually).
func getEviction(t *testing.T, nd *node.Node) (httpapi.Eviction, bool) {
	t.Helper()
	code, body := do(t, "GET", "http://"+nd.Addr()+"/admin/eviction", "")
	if code != http.StatusOK {
		return httpapi.Eviction{}, false
	}
	var e httpapi.Eviction
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	return e, true
}

// holdOf returns the hold for reason, or nil.
func holdOf(e httpapi.Eviction, reason string) *httpapi.EvictionHold {
	for i := range e.Holds {
		if e.Holds[i].Reason == reason {
			return &e.Holds[i]
		}
	}
	return nil
}

// TestEvictionHoldsOfARealCluster: two nodes on the in-memory network, n1
// stalled (it accepts streams but reads none, while its memberlist keeps
// answering probes, so both stay alive in both views): n0's renewal
// reports stop reaching n1, which then hears no member. n1's
// /admin/eviction, /admin/self-preservation, /eureka/status, dashboard
// state and heureka_eviction_held all show the cluster layer's hold with
// its detail and bound; n0 shows none; unstalled, the hold ends.
func TestEvictionHoldsOfARealCluster(t *testing.T) {
	t.Cleanup(func() { leakCheck(t) })
	tc := startCluster(t, 2, true, func(c *node.Config) {
		c.Cluster.StreamTimeout = 2 * time.Second
		// Long enough that the hold is still on when the test looks,
		// short of the test's own patience.
		c.Replication.SilentMemberBound = time.Minute
		// Self-preservation off: it would hold eviction on an empty
		// registry and is not what this test is about.
		c.Registry.SelfPreservation = false
	})
	n0, n1 := tc.nodes[0], tc.nodes[1]
	require.Eventually(t, func() bool { return n0.Ready() && n1.Ready() }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		e0, ok0 := getEviction(t, n0)
		e1, ok1 := getEviction(t, n1)
		return ok0 && ok1 && e0.ExpirationEnabled && e1.ExpirationEnabled
	}, 10*time.Second, 20*time.Millisecond, "no hold while both report")
	for _, nd := range tc.nodes {
		f := scrape(t, nd)
		for _, r := range httpapi.EvictionHoldReasons {
			assert.Equal(t, 0.0, f.must(t, "heureka_eviction_held", "reason", r), "%s on %s", r, nd.Addr())
		}
	}

	tc.net.Stall("n1")
	var hold *httpapi.EvictionHold
	require.Eventually(t, func() bool {
		e, ok := getEviction(t, n1)
		if !ok {
			return false
		}
		hold = holdOf(e, httpapi.HoldDeaf)
		return hold != nil && !e.ExpirationEnabled
	}, 15*time.Second, 20*time.Millisecond, "n1 hears no member: held")
	assert.Equal(t, []string{"n0"}, hold.Members)
	assert.Contains(t, hold.Detail, "no report from any other member")
	assert.False(t, hold.Since.IsZero())
	assert.Equal(t, time.Minute, hold.Until.Sub(hold.Since), "bounded by the silent-member bound")
	assert.Equal(t, 1.0, scrape(t, n1).must(t, "heureka_eviction_held", "reason", httpapi.HoldDeaf))
	assert.Equal(t, 0.0, scrape(t, n1).must(t, "heureka_eviction_held", "reason", httpapi.HoldSilentMember))

	// The other places show the same hold.
	_, body := do(t, "GET", "http://"+n1.Addr()+"/admin/self-preservation", "")
	var sp httpapi.SelfPreservation
	require.NoError(t, json.Unmarshal([]byte(body), &sp), body)
	require.NotNil(t, holdOf(httpapi.Eviction{Holds: sp.EvictionHolds}, httpapi.HoldDeaf), body)
	_, body = do(t, "GET", n1.URL()+"/status", "")
	var st struct {
		Eviction httpapi.Eviction `json:"eviction"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	require.NotNil(t, holdOf(st.Eviction, httpapi.HoldDeaf), body)
	_, body = do(t, "GET", "http://"+n1.Addr()+"/dashboard/api/state", "")
	var dash struct {
		Eviction httpapi.Eviction `json:"eviction"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &dash))
	require.NotNil(t, holdOf(dash.Eviction, httpapi.HoldDeaf), "the dashboard's state")

	// n0 still hears n1 (n1's own dials work): nothing holds it.
	e0, ok := getEviction(t, n0)
	require.True(t, ok)
	assert.True(t, e0.ExpirationEnabled, "%+v", e0.Holds)

	tc.net.Unstall("n1")
	require.Eventually(t, func() bool {
		e, ok := getEviction(t, n1)
		return ok && e.ExpirationEnabled
	}, 30*time.Second, 50*time.Millisecond, "reports reach n1 again: the hold ends")
	assert.Equal(t, 0.0, scrape(t, n1).must(t, "heureka_eviction_held", "reason", httpapi.HoldDeaf))
	tc.stop()
}
