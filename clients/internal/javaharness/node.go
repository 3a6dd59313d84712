package javaharness

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/node"
)

// StartNode starts a node on a free loopback port, evicting every 500 ms
// with self-preservation off, stopped when the test ends; mutate (if not
// nil) changes its configuration first.
func StartNode(t *testing.T, name string, mutate func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig(name)
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Registry.EvictionInterval = 500 * time.Millisecond
	cfg.Registry.SelfPreservation = false
	if mutate != nil {
		mutate(&cfg)
	}
	n, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
	})
	return n
}

// StartClusterNode is StartNode for a node on real loopback (the Java apps
// reach it) that joins the given seeds (ClusterConfig), whose replicator
// waits at most 10 s for its initial sync; mutate (if not nil) changes its
// configuration after that.
func StartClusterNode(t *testing.T, name string, join []string, mutate func(*node.Config)) *node.Node {
	t.Helper()
	return StartNode(t, name, func(cfg *node.Config) {
		cc := ClusterConfig(join)
		cfg.Cluster = &cc
		cfg.Replication = cluster.DefaultReplicatorConfig()
		cfg.Replication.ReadyTimeout = 10 * time.Second
		if mutate != nil {
			mutate(cfg)
		}
	})
}

// ClusterConfig is a cluster on loopback that joins the given seeds, with
// failure detection in seconds: probes every 500 ms, gossip every 25 ms,
// push/pull every 2 s.
func ClusterConfig(join []string) cluster.Config {
	cc := cluster.DefaultLocalConfig()
	cc.Join = join
	cc.MemberlistConfig = func(c *memberlist.Config) {
		c.ProbeInterval = 500 * time.Millisecond
		c.ProbeTimeout = 300 * time.Millisecond
		c.SuspicionMult = 4
		c.GossipInterval = 25 * time.Millisecond
		c.PushPullInterval = 2 * time.Second
		c.TCPTimeout = 2 * time.Second
	}
	return cc
}

// WaitReady waits up to 30 s until every node sees all of them live and is
// ready, and fails the test otherwise.
func WaitReady(t *testing.T, nodes []*node.Node) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if len(n.Members().LiveMembers()) != len(nodes) || !n.Ready() {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the %d nodes did not form a ready cluster", len(nodes))
}
