package main

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// TestNodeConfigMapsTimeouts: the tombstone TTL, the HTTP write timeout and
// the ready timeout reach the node's configuration, 0 for the ready timeout
// included (it is not swapped for a default).
func TestNodeConfigMapsTimeouts(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	def, _, err := LoadConfig(nil, envMap(nil))
	require.NoError(t, err)
	nc, err := nodeConfig(def, log)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, nc.Registry.TombstoneTTL)
	assert.Equal(t, 2*time.Minute, nc.WriteTimeout)
	assert.Equal(t, 30*time.Second, nc.Replication.ReadyTimeout)

	cfg, _, err := LoadConfig([]string{"--tombstone-ttl=45m", "--http-write-timeout=7m", "--ready-timeout=0"}, envMap(nil))
	require.NoError(t, err)
	nc, err = nodeConfig(cfg, log)
	require.NoError(t, err)
	assert.Equal(t, 45*time.Minute, nc.Registry.TombstoneTTL)
	assert.Equal(t, 7*time.Minute, nc.WriteTimeout)
	assert.Zero(t, nc.Replication.ReadyTimeout)
}

// startCommandNode starts a node the way run does, from command-line
// arguments, on loopback ports, and stops it when the test ends (showing its
// log if the test failed).
func startCommandNode(t *testing.T, args ...string) *node.Node {
	t.Helper()
	args = append([]string{"--http-addr=127.0.0.1:0", "--gossip-addr=" + sigFreeAddr(t), "--node-name=" + t.Name()}, args...)
	cfg, _, err := LoadConfig(args, noEnv)
	require.NoError(t, err)
	logs := &syncBuffer{}
	nc, err := nodeConfig(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	n, err := node.Start(nc)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
		if t.Failed() {
			t.Logf("node %v log:\n%s", args, logs.String())
		}
	})
	return n
}

// getCode returns the status of GET url, 0 on a transport error.
func getCode(url string) int {
	res, err := procClient.Get(url)
	if err != nil {
		return 0
	}
	_ = res.Body.Close()
	return res.StatusCode
}

// TestReadyTimeoutZeroDoesNotWait: a node told to join a seed that is not
// there waits for its initial sync (503 on /readyz, 403 on registry reads)
// under a long --ready-timeout, and does not wait at all under
// --ready-timeout 0.
func TestReadyTimeoutZeroDoesNotWait(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cluster nodes")
	}
	deadSeed := sigFreeAddr(t) // nothing listens there

	waiting := startCommandNode(t, "--join="+deadSeed, "--ready-timeout=1h")
	base := "http://" + waiting.Addr()
	assert.Equal(t, http.StatusServiceUnavailable, getCode(base+"/readyz"))
	assert.Equal(t, http.StatusForbidden, getCode(base+"/eureka/apps"))

	eager := startCommandNode(t, "--join="+deadSeed, "--ready-timeout=0")
	base = "http://" + eager.Addr()
	require.Eventually(t, func() bool { return getCode(base+"/readyz") == http.StatusOK }, 20*time.Second, 10*time.Millisecond)
	assert.Equal(t, http.StatusOK, getCode(base+"/eureka/apps"))
}
