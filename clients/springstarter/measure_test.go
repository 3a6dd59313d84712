package springstarter_test

import (
	"os"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/node"
)

// TestSpringStarterMeasure is `make spring-starter-measure`, not a test: with
// HEUREKA_MEASURE=1 it starts a three-node cluster and runs the Java
// EndToEndMeasure against it (B's Eureka client on the first node, A's
// instances registered on the second): registration → B's first call on the
// new instance and cancel → B's last call on it, for the stock defaults, fast
// polling and the starter. The table is at the end of the output.
func TestSpringStarterMeasure(t *testing.T) {
	if os.Getenv("HEUREKA_MEASURE") == "" {
		t.Skip("a measurement: HEUREKA_MEASURE=1 (make spring-starter-measure) runs it")
	}
	mvn := maven(t)
	nodes := []*node.Node{startClusterNode(t, "measure-1", nil)}
	seed := nodes[0].Members().LocalNode().Address
	nodes = append(nodes, startClusterNode(t, "measure-2", []string{seed}), startClusterNode(t, "measure-3", []string{seed}))
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if len(n.Members().LiveMembers()) != len(nodes) || !n.Ready() {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the three nodes did not form a ready cluster")
	runMavenFor(t, mvn, 60*time.Minute, []string{"-Dtest=EndToEndMeasure", "-Dsurefire.failIfNoSpecifiedTests=false"},
		"HEUREKA_MEASURE_B_URL="+nodes[0].URL()+"/",
		"HEUREKA_MEASURE_A_URL="+nodes[1].URL()+"/",
	)
}

// startClusterNode starts a node on loopback that joins the given seeds, with
// failure detection in seconds (as clients/java's cluster tests do).
func startClusterNode(t *testing.T, name string, join []string) *node.Node {
	return startNodeWith(t, name, func(cfg *node.Config) {
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
		cfg.Cluster = &cc
		cfg.Replication = cluster.DefaultReplicatorConfig()
		cfg.Replication.ReadyTimeout = 10 * time.Second
	})
}
