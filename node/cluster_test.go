package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/node"
)

// testClient is the HTTP client of these tests: a request that hangs fails
// its test instead of running into the test binary's timeout.
var testClient = &http.Client{Timeout: 30 * time.Second}

// testCluster is a set of in-process nodes.
type testCluster struct {
	t     *testing.T
	net   *memnet.Network // nil on real loopback
	nodes []*node.Node
	names []string
}

// clusterNodeConfig returns a node config with short timers for tests.
func clusterNodeConfig(name string, net *memnet.Network, join []string) node.Config {
	cfg := node.DefaultConfig(name)
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Registry.EvictionInterval = 200 * time.Millisecond
	cfg.Registry.RenewalWindow = 500 * time.Millisecond
	cc := cluster.DefaultLocalConfig()
	cc.Join = join
	// Failure detection within seconds, but not so tight that a loaded
	// machine under -race declares healthy nodes dead.
	cc.MemberlistConfig = func(c *memberlist.Config) {
		c.ProbeInterval = 500 * time.Millisecond
		c.ProbeTimeout = 300 * time.Millisecond
		c.SuspicionMult = 4
		c.GossipInterval = 25 * time.Millisecond
		c.PushPullInterval = 2 * time.Second
		c.TCPTimeout = 2 * time.Second
		c.SuspicionMaxTimeoutMult = 2
	}
	if net != nil {
		cc.Transport = net.NewTransport(name)
		cc.Resolver = net.Resolve
	}
	cfg.Cluster = &cc
	cfg.Replication = cluster.DefaultReplicatorConfig()
	cfg.Replication.RenewFlushInterval = 100 * time.Millisecond
	cfg.Replication.AntiEntropyInterval = 500 * time.Millisecond
	cfg.Replication.ReadyTimeout = 10 * time.Second
	return cfg
}

// startCluster starts n nodes; every node after the first joins the first.
func startCluster(t *testing.T, n int, inMemory bool, tweak func(*node.Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t}
	if inMemory {
		tc.net = memnet.New(1)
	}
	var seed string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("n%d", i)
		var join []string
		if i > 0 {
			join = []string{seed}
		}
		cfg := clusterNodeConfig(name, tc.net, join)
		if tweak != nil {
			tweak(&cfg)
		}
		nd, err := node.Start(cfg)
		require.NoError(t, err)
		if i == 0 {
			if tc.net != nil {
				seed = name
			} else {
				seed = nd.Members().LocalNode().Address
			}
		}
		tc.nodes = append(tc.nodes, nd)
		tc.names = append(tc.names, name)
	}
	t.Cleanup(tc.stop)
	tc.waitMembers(n)
	return tc
}

func (tc *testCluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, nd := range tc.nodes {
		_ = nd.Stop(ctx)
	}
	if tc.net != nil {
		tc.net.Shutdown()
	}
	testClient.CloseIdleConnections()
}

// waitMembers waits until every node sees n live members.
func (tc *testCluster) waitMembers(n int) {
	tc.t.Helper()
	require.Eventually(tc.t, func() bool {
		for _, nd := range tc.nodes {
			if len(nd.Members().LiveMembers()) != n {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "cluster did not form")
}

func registerBody(app, id string, durationSecs int) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"%s.example","app":%q,"ipAddr":"10.1.1.1",
"status":"UP","port":{"$":8080,"@enabled":"true"},"vipAddress":"%s",
"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
"leaseInfo":{"renewalIntervalInSecs":1,"durationInSecs":%d}}}`, id, id, app, strings.ToLower(app), durationSecs)
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func status(t *testing.T, method, url, body string) int {
	code, _ := do(t, method, url, body)
	return code
}

// hasInstance reports whether GET apps/{app} on nd lists id.
func hasInstance(t *testing.T, nd *node.Node, app, id string) bool {
	code, body := do(t, "GET", nd.URL()+"/apps/"+app, "")
	return code == http.StatusOK && strings.Contains(body, `"instanceId":"`+id+`"`)
}

// agreedOwner waits until every node's replicator names the same owner of
// app, and returns it.
func (tc *testCluster) agreedOwner(app string) string {
	tc.t.Helper()
	var owner string
	require.Eventually(tc.t, func() bool {
		owner = tc.nodes[0].Replicator().OwnerOf(app)
		for _, nd := range tc.nodes[1:] {
			if nd.Replicator().OwnerOf(app) != owner {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "the replicators agree on the owner of %s", app)
	return owner
}

// converged reports whether all nodes hold the same registry: same apps
// hashcode and the same instance versions.
func (tc *testCluster) converged(nodes ...*node.Node) bool {
	if len(nodes) == 0 {
		nodes = tc.nodes
	}
	var ref string
	for i, nd := range nodes {
		s := nd.View().Snapshot()
		var b bytes.Buffer
		b.WriteString(s.HashCode())
		s.Apps(func(a *view.App) bool {
			for in, v := range a.All() {
				fmt.Fprintf(&b, "|%s/%s@%d.%s", a.Name(), in.ID(), v.Clock, v.Node)
			}
			return true
		})
		if i == 0 {
			ref = b.String()
		} else if b.String() != ref {
			return false
		}
	}
	return true
}

func TestClusterReplicatesRegisterAndCancel(t *testing.T) {
	for _, mode := range []struct {
		name     string
		inMemory bool
	}{{"memnet", true}, {"loopback", false}} {
		t.Run(mode.name, func(t *testing.T) {
			tc := startCluster(t, 3, mode.inMemory, nil)
			a, b := tc.nodes[0], tc.nodes[1]
			require.Equal(t, http.StatusNoContent, status(t, "POST", a.URL()+"/apps/orders", registerBody("ORDERS", "o-1", 30)))
			for _, nd := range tc.nodes {
				require.Eventually(t, func() bool { return hasInstance(t, nd, "ORDERS", "o-1") }, 10*time.Second, 10*time.Millisecond)
			}
			require.Equal(t, http.StatusOK, status(t, "DELETE", b.URL()+"/apps/orders/o-1", ""))
			for _, nd := range tc.nodes {
				require.Eventually(t, func() bool { return status(t, "GET", nd.URL()+"/apps/ORDERS", "") == http.StatusNotFound },
					10*time.Second, 10*time.Millisecond)
			}
			require.Eventually(t, func() bool { return tc.converged() }, 10*time.Second, 20*time.Millisecond)
		})
	}
}

func TestClusterPartitionHealConvergesWithoutResurrection(t *testing.T) {
	tc := startCluster(t, 5, true, nil)
	left, right := tc.names[:2], tc.names[2:]
	// Before the partition: x-1 exists everywhere.
	require.Equal(t, http.StatusNoContent, status(t, "POST", tc.nodes[0].URL()+"/apps/pay", registerBody("PAY", "x-1", 30)))
	for _, nd := range tc.nodes {
		require.Eventually(t, func() bool { return hasInstance(t, nd, "PAY", "x-1") }, 10*time.Second, 10*time.Millisecond)
	}
	tc.net.Partition(left, right)
	// Each side declares the other failed before writing, so that the heal
	// needs membership to reconnect, not just a retransmit.
	require.Eventually(t, func() bool {
		return len(tc.nodes[0].Members().LiveMembers()) == 2 && len(tc.nodes[4].Members().LiveMembers()) == 3
	}, 30*time.Second, 20*time.Millisecond, "partition not detected")
	// Writes on both sides: the left cancels x-1 and adds l-1, the right
	// adds r-1.
	require.Equal(t, http.StatusOK, status(t, "DELETE", tc.nodes[0].URL()+"/apps/pay/x-1", ""))
	require.Equal(t, http.StatusNoContent, status(t, "POST", tc.nodes[1].URL()+"/apps/pay", registerBody("PAY", "l-1", 30)))
	require.Equal(t, http.StatusNoContent, status(t, "POST", tc.nodes[3].URL()+"/apps/pay", registerBody("PAY", "r-1", 30)))
	// The right side still serves x-1 (AP).
	assert.True(t, hasInstance(t, tc.nodes[4], "PAY", "x-1"))
	tc.net.Heal()
	tc.waitMembers(5)
	require.Eventually(t, func() bool { return tc.converged() }, 30*time.Second, 50*time.Millisecond, "no convergence after heal")
	for _, nd := range tc.nodes {
		assert.False(t, hasInstance(t, nd, "PAY", "x-1"), "cancelled instance came back on %s", nd.Addr())
		assert.True(t, hasInstance(t, nd, "PAY", "l-1"))
		assert.True(t, hasInstance(t, nd, "PAY", "r-1"))
	}
}

func TestClusterNewNodeSyncsBeforeReady(t *testing.T) {
	tc := startCluster(t, 2, true, nil)
	for i := 0; i < 50; i++ {
		app := fmt.Sprintf("APP%d", i%7)
		require.Equal(t, http.StatusNoContent, status(t, "POST", tc.nodes[i%2].URL()+"/apps/"+app, registerBody(app, fmt.Sprintf("i-%d", i), 30)))
	}
	require.Eventually(t, func() bool { return tc.converged() }, time.Minute, 20*time.Millisecond, "the two nodes never converged")
	// The assertion is about order (ready only after the initial sync), not
	// speed: the ready timeout, which declares a node ready without a sync,
	// is set beyond the wait, so a slow machine fails this test with "never
	// ready" rather than passing it through the timeout.
	const syncWait = time.Minute
	cfg := clusterNodeConfig("late", tc.net, []string{"n1"})
	cfg.Replication.ReadyTimeout = 5 * syncWait
	nd, err := node.Start(cfg)
	require.NoError(t, err)
	tc.nodes = append(tc.nodes, nd)
	require.Eventually(t, nd.Ready, syncWait, 10*time.Millisecond, "the late node never became ready")
	assert.Equal(t, 50, nd.View().Snapshot().Count(), "ready before the initial sync finished")
	assert.Equal(t, http.StatusOK, status(t, "GET", "http://"+nd.Addr()+"/readyz", ""))
}

func TestClusterRenewalsReachOwnerSoNothingIsEvicted(t *testing.T) {
	tc := startCluster(t, 3, true, func(c *node.Config) {
		c.Registry.SelfPreservation = false
	})
	// Register with a short lease on a node that does not own the app, and
	// keep renewing there only.
	app := "RENEWED"
	// Every replicator agrees on the owner before the client picks a
	// node that is not it (CI once picked by one node's view while
	// another's was still forming: no renewal was forwarded).
	owner := tc.agreedOwner(app)
	var client *node.Node
	for i, nd := range tc.nodes {
		if tc.names[i] != owner {
			client = nd
		}
	}
	require.Equal(t, http.StatusNoContent, status(t, "POST", client.URL()+"/apps/"+app, registerBody(app, "r-1", 2)))
	require.Equal(t, http.StatusNoContent, status(t, "POST", client.URL()+"/apps/"+app, registerBody(app, "gone-1", 2)))
	deadline := time.Now().Add(6 * time.Second) // > takeover grace + several lease durations
	for time.Now().Before(deadline) {
		require.Equal(t, http.StatusOK, status(t, "PUT", client.URL()+"/apps/"+app+"/r-1", ""))
		time.Sleep(300 * time.Millisecond)
	}
	// The unrenewed sibling was evicted by the owner everywhere; the renewed
	// one survived everywhere.
	for _, nd := range tc.nodes {
		require.Eventually(t, func() bool { return !hasInstance(t, nd, app, "gone-1") }, 10*time.Second, 20*time.Millisecond)
		assert.True(t, hasInstance(t, nd, app, "r-1"))
	}
	assert.Positive(t, client.Replicator().Stats().RenewalMessages)
}

func TestClusterOwnerCrashMovesOwnershipWithoutPrematureEviction(t *testing.T) {
	tc := startCluster(t, 3, true, func(c *node.Config) {
		c.Registry.SelfPreservation = false
	})
	app := "CRASHY"
	owner := tc.agreedOwner(app)
	var ownerIdx int
	var survivors []*node.Node
	for i, nd := range tc.nodes {
		if tc.names[i] == owner {
			ownerIdx = i
		} else {
			survivors = append(survivors, nd)
		}
	}
	client := survivors[0]
	require.Equal(t, http.StatusNoContent, status(t, "POST", client.URL()+"/apps/"+app, registerBody(app, "alive-1", 2)))
	for _, nd := range tc.nodes {
		require.Eventually(t, func() bool { return hasInstance(t, nd, app, "alive-1") }, 10*time.Second, 10*time.Millisecond)
	}
	tc.net.Crash(owner)
	// Ownership moves to a survivor once the owner is declared dead.
	require.Eventually(t, func() bool {
		o := survivors[0].Replicator().OwnerOf(app)
		return o != owner && o == survivors[1].Replicator().OwnerOf(app)
	}, 30*time.Second, 20*time.Millisecond, "ownership did not move")
	newOwner := survivors[0].Replicator().OwnerOf(app)
	// Keep renewing on the client's node through the takeover grace and
	// several lease durations: the new owner must never evict it.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		require.Equal(t, http.StatusOK, status(t, "PUT", client.URL()+"/apps/"+app+"/alive-1", ""))
		for _, nd := range survivors {
			require.True(t, hasInstance(t, nd, app, "alive-1"), "renewed instance evicted after owner crash")
		}
		time.Sleep(250 * time.Millisecond)
	}
	assert.NotEqual(t, tc.names[ownerIdx], newOwner)
}

func TestClusterShutdownLeaksNothing(t *testing.T) {
	// memberlist's Shutdown does not wait for a probe already in flight, so
	// give stragglers time to finish before calling them leaks.
	defer func() {
		var err error
		deadline := time.Now().Add(20 * time.Second)
		for err = goleak.Find(); err != nil && time.Now().Before(deadline); err = goleak.Find() {
			time.Sleep(100 * time.Millisecond)
		}
		require.NoError(t, err, "goroutines left after the cluster stopped")
	}()
	for _, inMemory := range []bool{true, false} {
		tc := startCluster(t, 3, inMemory, nil)
		require.Equal(t, http.StatusNoContent, status(t, "POST", tc.nodes[1].URL()+"/apps/leak", registerBody("LEAK", "l-1", 30)))
		for _, nd := range tc.nodes {
			require.Eventually(t, func() bool { return hasInstance(t, nd, "LEAK", "l-1") }, 10*time.Second, 10*time.Millisecond)
		}
		require.Equal(t, http.StatusOK, status(t, "PUT", tc.nodes[2].URL()+"/apps/leak/l-1", ""))
		tc.stop()
	}
}
