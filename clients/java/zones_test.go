package java_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/internal/freeport"
	"github.com/heureka/heureka/node"
)

// TestSpringZoneFailover runs spring/'s ZoneFailoverIT (by name: surefire's
// default includes leave it out of the module's other runs): two Heureka
// datacenters, regions dc1 and dc2, each the other's remote region; greeter
// instances registered in both; a Spring Boot caller in dc1 with
// eureka.client.fetch-remote-regions-registry=dc2 and Spring Cloud
// LoadBalancer's zone preference. Its calls stay in dc1, go to dc2 once
// dc1's greeters are cancelled, and come back when a dc1 greeter registers
// again.
func TestSpringZoneFailover(t *testing.T) {
	mvn := maven(t)
	dc1, dc2 := startDatacenters(t, "java-zones")
	runMaven(t, mvn, "spring",
		"MAVEN_OPTS=-Dtest=ZoneFailoverIT",
		"HEUREKA_DC1_URL="+dc1.URL()+"/",
		"HEUREKA_DC2_URL="+dc2.URL()+"/",
	)
}

// startDatacenters starts a node of region dc1 and one of region dc2, each
// pulling (following the stream of) the other. The federation timers are
// seconds, not the milliseconds of federation.DefaultLocalConfig: the JVMs
// beside the race-detector build must not make a region look dropped.
func startDatacenters(t *testing.T, prefix string) (dc1, dc2 *node.Node) {
	t.Helper()
	ports := map[string]int{}
	for _, r := range []string{"dc1", "dc2"} {
		p, err := freeport.Port("127.0.0.1", false)
		require.NoError(t, err)
		ports[r] = p
	}
	start := func(region, remote string) *node.Node {
		return startNode(t, prefix+"-"+region, func(c *node.Config) {
			c.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", ports[region])
			pc := httpapi.DefaultPushConfig()
			pc.StreamKeepAlive = time.Second // below the other side's StreamIdleTimeout
			c.Push = &pc
			fc := federation.DefaultLocalConfig()
			fc.Region = region
			fc.Remotes = []federation.Remote{{Name: remote, URL: fmt.Sprintf("http://127.0.0.1:%d/eureka/", ports[remote])}}
			fc.PullInterval = 200 * time.Millisecond
			fc.RequestTimeout = 2 * time.Second
			fc.StaleAfter = 10 * time.Second
			fc.DropAfter = 30 * time.Second
			fc.StreamIdleTimeout = 5 * time.Second
			c.Federation = &fc
		})
	}
	dc1, dc2 = start("dc1", "dc2"), start("dc2", "dc1")
	require.Eventually(t, func() bool { return dc1.Federation().Ready() && dc2.Federation().Ready() },
		30*time.Second, 20*time.Millisecond, "each datacenter loads the other")
	return dc1, dc2
}
