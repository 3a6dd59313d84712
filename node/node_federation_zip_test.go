package node_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/internal/wanlink"
	"github.com/heureka/heureka/node"
)

// newWANLink starts a wanlink.Proxy to target, closed with the test.
func newWANLink(t *testing.T, target string) *wanlink.Proxy {
	p, err := wanlink.Listen(target)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// receivedWAN is the follower's heureka_region_received_bytes_total for
// region over the WAN.
func receivedWAN(t *testing.T, n *node.Node, region string) float64 {
	t.Helper()
	mfs, err := n.Metrics().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "heureka_region_received_bytes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["region"] == region && labels["from"] == "wan" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// streamWANBytes runs a remote region dc1 of 200 instances followed by
// dc2 over its change stream through a proxy that counts the bytes on the
// WAN, registers and cancels changes instances in dc1, each once dc2
// holds the one before, and returns the bytes dc2 received per change,
// as the proxy counted them, and what dc2's
// heureka_region_received_bytes_total{from="wan"} counted meanwhile.
func streamWANBytes(t *testing.T, changes int) (perChange, metricPerChange float64) {
	cfg := fedConfig(t, "dc1")
	cfg.Push.StreamKeepAlive = 5 * time.Second // below dc2's stale bound, out of the measure
	dc1 := startFed(t, cfg)
	for i := range 200 {
		fedRegister(t, dc1.URL(), fmt.Sprintf("APP%d", i%10), fmt.Sprintf("app%d-%03d", i%10, i), "UP", nil)
	}
	wan := newWANLink(t, dc1.Addr())
	fc := fedConfig(t, "dc2", federation.Remote{Name: "dc1", URL: "http://" + wan.Addr() + "/eureka/"})
	fc.Federation.PullInterval = 3 * time.Second // the stream carries every change
	fc.Federation.StaleAfter = 15 * time.Second
	fc.Federation.DropAfter = 30 * time.Second
	dc2 := startFed(t, fc)
	held := func() int { return dc2.Federation().Status()[0].Instances }
	require.Eventually(t, func() bool { return held() == 200 }, 10*time.Second, 5*time.Millisecond, "dc2 loads dc1")
	time.Sleep(200 * time.Millisecond) // the snapshot's last bytes

	down, metric := wan.Down.Load(), receivedWAN(t, dc2, "dc1")
	for i := range changes {
		id := fmt.Sprintf("new-%03d", i)
		fedRegister(t, dc1.URL(), "APP3", id, "UP", nil)
		require.Eventually(t, func() bool { return held() == 201 }, 5*time.Second, time.Millisecond, "%s crosses", id)
		fedCancel(t, dc1.URL(), "APP3", id)
		require.Eventually(t, func() bool { return held() == 200 }, 5*time.Second, time.Millisecond, "%s's cancel crosses", id)
	}
	time.Sleep(100 * time.Millisecond)
	n := float64(2 * changes)
	return float64(wan.Down.Load()-down) / n, (receivedWAN(t, dc2, "dc1") - metric) / n
}

// fedCancel cancels instance id of app.
func fedCancel(t *testing.T, base, app, id string) {
	t.Helper()
	require.Equal(t, http.StatusOK, status(t, http.MethodDelete, base+"/apps/"+app+"/"+id, ""))
}

// A region followed over its change stream crosses the WAN compressed: a
// registration or a cancel costs a fraction of its plain delta event
// (about 700 bytes of JSON here), and the follower's
// heureka_region_received_bytes_total counts exactly the bytes that came
// on the WAN (switch stream-uncompressed asks for the plain stream, as
// the previous release did: several times the bytes).
func TestFederationStreamCompressedOnTheWAN(t *testing.T) {
	per, metric := streamWANBytes(t, 10)
	t.Logf("%.0f bytes on the WAN per change, %.0f counted by the follower", per, metric)
	assert.Equal(t, per, metric, "the metric counts the bytes as they came")
	assert.Less(t, per, float64(compressedChangeBound))
}

// compressedChangeBound is the most bytes a change may cost on the WAN,
// compressed; plain, a delta event here is about 700 bytes.
const compressedChangeBound = 300
