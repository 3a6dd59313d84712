package springstarter_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/clients/internal/javaharness"
	"github.com/heureka/heureka/node"
)

// TestSpringStarterMeasure is `make spring-starter-measure`, not a test: with
// HEUREKA_MEASURE=1 it starts a three-node cluster and runs the Java
// measurements against it (B's Eureka client on the first node, A's
// instances registered on the second), for the stock defaults, fast polling
// and the starter. HEUREKA_MEASURE_CASES chooses what is measured
// (measureClasses); the tables are at the end of the output.
func TestSpringStarterMeasure(t *testing.T) {
	if os.Getenv("HEUREKA_MEASURE") == "" {
		t.Skip("a measurement: HEUREKA_MEASURE=1 (make spring-starter-measure) runs it")
	}
	classes, err := measureClasses(os.Getenv("HEUREKA_MEASURE_CASES"))
	require.NoError(t, err)
	mvn := maven(t)
	nodes := []*node.Node{javaharness.StartClusterNode(t, "measure-1", nil, nil)}
	seed := nodes[0].Members().LocalNode().Address
	nodes = append(nodes, javaharness.StartClusterNode(t, "measure-2", []string{seed}, nil), javaharness.StartClusterNode(t, "measure-3", []string{seed}, nil))
	javaharness.WaitReady(t, nodes)
	runMavenFor(t, mvn, 60*time.Minute, []string{"-Dtest=" + strings.Join(classes, ","), "-Dsurefire.failIfNoSpecifiedTests=false"},
		"HEUREKA_MEASURE_B_URL="+nodes[0].URL()+"/",
		"HEUREKA_MEASURE_A_URL="+nodes[1].URL()+"/",
	)
}

// measureClasses maps HEUREKA_MEASURE_CASES (comma-separated; register and
// cancel unless set) to the Java classes that measure them:
//
//   - register (registration → B's first call on the new instance) and
//     cancel (cancel → B's last call on it): EndToEndMeasure, which measures
//     both on the same instances;
//   - kill (kill -9 of an A instance's JVM → B's last call on it, failed
//     calls included; its lease HEUREKA_MEASURE_LEASE, duration/renewal in
//     seconds, 90/30 unless set): EndToEndKillMeasure.
func measureClasses(cases string) ([]string, error) {
	if strings.TrimSpace(cases) == "" {
		cases = "register,cancel"
	}
	var endToEnd, kill bool
	for _, c := range strings.Split(cases, ",") {
		switch strings.TrimSpace(c) {
		case "register", "cancel":
			endToEnd = true
		case "kill":
			kill = true
		default:
			return nil, fmt.Errorf("HEUREKA_MEASURE_CASES: unknown case %q (register, cancel, kill)", strings.TrimSpace(c))
		}
	}
	var classes []string
	if endToEnd {
		classes = append(classes, "EndToEndMeasure")
	}
	if kill {
		classes = append(classes, "EndToEndKillMeasure")
	}
	return classes, nil
}
