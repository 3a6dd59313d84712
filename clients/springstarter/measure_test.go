package springstarter_test

import (
	"os"
	"testing"
	"time"

	"github.com/heureka/heureka/clients/internal/javaharness"
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
	nodes := []*node.Node{javaharness.StartClusterNode(t, "measure-1", nil, nil)}
	seed := nodes[0].Members().LocalNode().Address
	nodes = append(nodes, javaharness.StartClusterNode(t, "measure-2", []string{seed}, nil), javaharness.StartClusterNode(t, "measure-3", []string{seed}, nil))
	javaharness.WaitReady(t, nodes)
	runMavenFor(t, mvn, 60*time.Minute, []string{"-Dtest=EndToEndMeasure", "-Dsurefire.failIfNoSpecifiedTests=false"},
		"HEUREKA_MEASURE_B_URL="+nodes[0].URL()+"/",
		"HEUREKA_MEASURE_A_URL="+nodes[1].URL()+"/",
	)
}
