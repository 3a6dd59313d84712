package node_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// A Eureka peer (the reference server listing a Heureka node in its
// defaultZone) sends registrations, heartbeats and cancels by
// POST /peerreplication/batch. They are the Eureka cluster's clients'
// changes: they must fan out to every Heureka member, and the heartbeats
// must reach the application's owner, or it would evict what the Java side
// keeps renewing.
func TestEurekaPeerBatchFansOutAndReachesTheOwner(t *testing.T) {
	tc := startCluster(t, 3, true, func(c *node.Config) { c.Registry.SelfPreservation = false })
	app := "JAVA"
	owner := tc.agreedOwner(app)
	var entry *node.Node // a member that does not own the application
	for i, nd := range tc.nodes {
		if tc.names[i] != owner {
			entry = nd
			break
		}
	}
	require.NotNil(t, entry)
	reg := strings.TrimSuffix(strings.TrimPrefix(registerBody(app, "j-1", 3), `{"instance":`), "}")
	batch := func(items ...string) string { return `{"replicationList":[` + strings.Join(items, ",") + `]}` }
	code, body := do(t, "POST", entry.URL()+"/peerreplication/batch",
		batch(`{"appName":"JAVA","id":"j-1","action":"Register","instanceInfo":`+reg+`}`))
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool {
		for _, nd := range tc.nodes {
			if !hasInstance(t, nd, app, "j-1") {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "a Eureka peer's registration fans out to every member")

	// Heartbeats by batch only, on the non-owner, for three lease
	// durations: the owner must not evict.
	deadline := time.Now().Add(9 * time.Second)
	for time.Now().Before(deadline) {
		code, body := do(t, "POST", entry.URL()+"/peerreplication/batch",
			batch(`{"appName":"JAVA","id":"j-1","status":"UP","action":"Heartbeat"}`))
		require.Equal(t, http.StatusOK, code, body)
		time.Sleep(500 * time.Millisecond)
	}
	for i, nd := range tc.nodes {
		assert.True(t, hasInstance(t, nd, app, "j-1"), "evicted on %s although the Eureka peer kept renewing", tc.names[i])
	}

	code, body = do(t, "POST", entry.URL()+"/peerreplication/batch", batch(`{"appName":"JAVA","id":"j-1","action":"Cancel"}`))
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool {
		for _, nd := range tc.nodes {
			if hasInstance(t, nd, app, "j-1") {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "a Eureka peer's cancel fans out")
}

// The load-report interval scales with the renewal window (a test that
// shrinks the window gets reports every quarter of it); a value that would
// leave self-preservation counting stale reports is refused.
func TestLoadIntervalScalesWithTheWindow(t *testing.T) {
	cfg := clusterNodeConfig("solo", nil, nil)
	cfg.Registry.RenewalWindow = 400 * time.Millisecond
	cfg.Replication.LoadInterval = time.Second
	_, err := node.Start(cfg)
	require.ErrorContains(t, err, "LoadInterval")
}
