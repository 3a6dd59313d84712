package node_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// selfInstances returns the HEUREKA instances nd lists, by instanceId.
func selfInstances(t *testing.T, nd *node.Node) map[string]map[string]any {
	t.Helper()
	code, body := do(t, "GET", nd.URL()+"/apps/"+node.SelfApp, "")
	if code != http.StatusOK {
		return nil
	}
	var doc struct {
		Application struct {
			Instance []map[string]any `json:"instance"`
		} `json:"application"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc), body)
	out := map[string]map[string]any{}
	for _, in := range doc.Application.Instance {
		out[in["instanceId"].(string)] = in
	}
	return out
}

func TestSelfRegistrationListsEveryServerAndStopCancels(t *testing.T) {
	t.Cleanup(func() { leakCheck(t) })
	tc := startCluster(t, 2, true, func(c *node.Config) {
		c.SelfRegister = true
		c.Version = "v-test"
	})
	for _, nd := range tc.nodes {
		require.Eventually(t, func() bool { return len(selfInstances(t, nd)) == 2 }, 10*time.Second, 20*time.Millisecond,
			"every node lists both servers")
	}
	// Each instance describes its node: the HTTP address clients use, the
	// gossip address, the version.
	insts := selfInstances(t, tc.nodes[0])
	for i, nd := range tc.nodes {
		in := insts[tc.names[i]]
		require.NotNil(t, in, tc.names[i])
		host, port, err := net.SplitHostPort(nd.Addr())
		require.NoError(t, err)
		assert.Equal(t, host, in["hostName"])
		assert.Equal(t, host, in["ipAddr"])
		assert.Equal(t, "UP", in["status"])
		assert.Equal(t, node.SelfApp, in["app"])
		assert.Equal(t, port, strconv.Itoa(int(in["port"].(map[string]any)["$"].(float64))))
		meta := in["metadata"].(map[string]any)
		assert.Equal(t, nd.Members().LocalNode().Address, meta[node.MetaGossipAddr])
		assert.Equal(t, "v-test", meta[node.MetaVersion])
		assert.Equal(t, "http://"+nd.Addr()+"/eureka/", meta[node.MetaServiceURL])
		// The lease is the one the registry expects of a client: renewed
		// every ExpectedClientRenewalInterval (30 s), lasting three.
		lease := in["leaseInfo"].(map[string]any)
		assert.Equal(t, 30.0, lease["renewalIntervalInSecs"])
		assert.Equal(t, 90.0, lease["durationInSecs"])
	}

	// A graceful stop cancels the instance: the survivor drops it at once,
	// not after its 90 s lease.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tc.nodes[1].Stop(ctx))
	require.Eventually(t, func() bool {
		insts := selfInstances(t, tc.nodes[0])
		return len(insts) == 1 && insts[tc.names[0]] != nil
	}, 5*time.Second, 20*time.Millisecond, "the stopped node's instance is cancelled")
	f := scrape(t, tc.nodes[0])
	assert.Equal(t, 1.0, f.must(t, "heureka_replicated_changes_total", "action", "deleted"), "a cancel, not an eviction")
	assert.Equal(t, 0.0, f.must(t, "heureka_evictions_total", "cause", "evict"))
	tc.stop()
}

func TestSelfRegistrationRenewsLikeAClient(t *testing.T) {
	t.Cleanup(func() { leakCheck(t) })
	cfg := node.DefaultConfig("self-renew")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.SelfRegister = true
	cfg.Registry.ExpectedClientRenewalInterval = 50 * time.Millisecond
	nd, err := node.Start(cfg)
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, nd.Stop(ctx))
		assert.Equal(t, 0, nd.View().Snapshot().Count(), "Stop cancelled the node's own instance")
		testClient.CloseIdleConnections()
	}()
	require.Eventually(t, func() bool {
		v, _ := scrape(t, nd).value("heureka_renewals_total")
		return v >= 3
	}, 5*time.Second, 20*time.Millisecond, "the node renews its own lease")
	in := selfInstances(t, nd)["self-renew"]
	require.NotNil(t, in)
	lease := in["leaseInfo"].(map[string]any)
	assert.Equal(t, 1.0, lease["renewalIntervalInSecs"], "intervals below a second round up")
	assert.Equal(t, 3.0, lease["durationInSecs"])

	// Evicted or replaced behind its back (here: cancelled by an operator),
	// it registers again, as a Eureka client does on a 404.
	require.Equal(t, http.StatusOK, status(t, "DELETE", nd.URL()+"/apps/"+node.SelfApp+"/self-renew", ""))
	require.Eventually(t, func() bool { return selfInstances(t, nd)["self-renew"] != nil }, 5*time.Second, 20*time.Millisecond)
}
