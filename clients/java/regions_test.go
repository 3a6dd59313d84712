package java_test

import (
	"testing"
	"time"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// TestNetflixRemoteRegions runs netflix/'s RemoteRegionsTest alone: the
// Netflix DiscoveryClient with fetchRemoteRegionsRegistry=dc2 against a
// node of region dc1 that pulls a node of region dc2.
func TestNetflixRemoteRegions(t *testing.T) {
	mvn := maven(t)
	dc2 := startNode(t, "java-dc2", func(c *node.Config) {
		// dc1 follows dc2's stream; its keep-alive is scaled with dc1's
		// federation timers.
		pc := httpapi.DefaultPushConfig()
		pc.StreamKeepAlive = 50 * time.Millisecond
		c.Push = &pc
	})
	dc1 := startNode(t, "java-dc1", func(c *node.Config) {
		fc := federation.DefaultLocalConfig()
		fc.Region = "dc1"
		fc.Remotes = []federation.Remote{{Name: "dc2", URL: dc2.URL() + "/"}}
		c.Federation = &fc
	})
	// MAVEN_OPTS reaches surefire's test parameter: only this class runs.
	runMaven(t, mvn, "netflix",
		"MAVEN_OPTS=-Dtest=RemoteRegionsTest",
		"HEUREKA_REGION_LOCAL_URL="+dc1.URL()+"/",
		"HEUREKA_REGION_REMOTE_URL="+dc2.URL()+"/",
	)
}
