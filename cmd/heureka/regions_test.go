package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/node"
)

func TestRegionFlags(t *testing.T) {
	c, _, err := LoadConfig([]string{"--region", "DC1", "--remote-region", "dc2=http://e2:8761/eureka/",
		"--remote-region", "dc3=http://e3:8761/eureka/", "--region-pull-interval", "2s", "--region-transparent-fallback",
		"--remote-region-apps", "dc2=orders,USERS"}, envMap(nil))
	require.NoError(t, err)
	assert.Equal(t, "dc1", c.Region)
	assert.Equal(t, []string{"dc2=http://e2:8761/eureka/", "dc3=http://e3:8761/eureka/"}, c.RemoteRegions)
	nc, err := nodeConfig(c, nil)
	require.NoError(t, err)
	require.NotNil(t, nc.Federation)
	assert.Equal(t, []federation.Remote{{Name: "dc2", URL: "http://e2:8761/eureka/", Apps: []string{"ORDERS", "USERS"}},
		{Name: "dc3", URL: "http://e3:8761/eureka/"}}, nc.Federation.Remotes)
	assert.Equal(t, 2*time.Second, nc.Federation.PullInterval)
	assert.True(t, nc.Federation.TransparentFallback)
	assert.True(t, nc.Federation.Stream, "streams are followed by default")
	assert.Equal(t, c.DeltaRetention, nc.Federation.DeltaRetention)
	assert.Equal(t, 2, nc.Federation.Links, "two WAN links per region by default")

	c, _, err = LoadConfig([]string{"--remote-region", "dc2=http://e2:8761/eureka/", "--region-wan-links", "3"}, envMap(nil))
	require.NoError(t, err)
	nc, err = nodeConfig(c, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, nc.Federation.Links)

	nc, err = nodeConfig(DefaultConfig(), nil)
	require.NoError(t, err)
	assert.Nil(t, nc.Federation, "no remote region: no federation")
}

func TestRegionFlagsRejectBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"--remote-region", "dc2"},
		{"--remote-region", "dc2=ftp://x/"},
		{"--region", "dc1", "--remote-region", "dc1=http://x/eureka/"},
		{"--remote-region", "dc2=http://x/eureka/", "--region-drop-after", "30s"},
		{"--region-stale-after", "0s"},
		{"--remote-region-apps", "dc2"},
		{"--remote-region", "dc2=http://x/eureka/", "--remote-region-apps", "dc9=ORDERS"},
		{"--region-wan-links", "0"},
		{"--region-wan-links", "two"},
	} {
		_, _, err := LoadConfig(args, envMap(nil))
		assert.Error(t, err, "%v", args)
	}
}

func TestRegionSpringKeys(t *testing.T) {
	p := writeYAML(t, `
eureka:
  client:
    region: dc1
  server:
    remote-region-urls-with-name:
      dc3: http://e3:8761/eureka/
      dc2: http://e2:8761/eureka/
    remote-region-registry-fetch-interval: 10
    remote-region-app-whitelist:
      dc2: orders,users
      dc3: [PAYMENTS]
    disable-transparent-fallback-to-other-region: false
`)
	c, _, err := LoadConfig([]string{"--config", p}, envMap(nil))
	require.NoError(t, err)
	assert.Equal(t, "dc1", c.Region)
	assert.Equal(t, []string{"dc2=http://e2:8761/eureka/", "dc3=http://e3:8761/eureka/"}, c.RemoteRegions)
	assert.Equal(t, 10*time.Second, c.RegionPullInterval)
	assert.Equal(t, "dc2=orders,users;dc3=PAYMENTS", c.RemoteRegionApps)
	assert.True(t, c.RegionTransparentFallback)

	p = writeYAML(t, "eureka:\n  remoteRegionUrlsWithName: \"dc2;http://e2:8761/eureka/\"\n")
	c, _, err = LoadConfig([]string{"--config", p}, envMap(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"dc2=http://e2:8761/eureka/"}, c.RemoteRegions)
}

func TestRegionsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes")
	}
	start := func(cfg node.Config) *node.Node {
		n, err := node.Start(cfg)
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = n.Stop(ctx)
		})
		return n
	}
	cfg := node.DefaultConfig("dc2-node")
	cfg.HTTPAddr = "127.0.0.1:0"
	dc2 := start(cfg)
	register(t, "http://"+dc2.Addr(), "ORDERS", "orders-1")

	cfg = node.DefaultConfig("dc1-node")
	cfg.HTTPAddr = "127.0.0.1:0"
	fc := federation.DefaultLocalConfig()
	fc.Region = "dc1"
	fc.StaleAfter, fc.DropAfter = 10*time.Second, 20*time.Second // dc2's stream keep-alive is 15 s
	fc.StreamIdleTimeout = 20 * time.Second
	fc.Remotes = []federation.Remote{{Name: "dc2", URL: dc2.URL() + "/"}}
	cfg.Federation = &fc
	dc1 := start(cfg)
	require.Eventually(t, func() bool {
		s := dc1.Federation().Status()
		return s[0].Instances == 1
	}, 5*time.Second, 10*time.Millisecond)

	code, out, errOut := runCmd(t, nil, "regions", "--addr", "http://"+dc1.Addr())
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "Region dc1; every remote region loaded; transparent fallback off\n"), out)
	rows := tableRows(strings.SplitN(out, "\n\n", 2)[1])
	require.Len(t, rows, 2, out)
	assert.Equal(t, []string{"REGION", "STATE", "INSTANCES", "LAST SUCCESS", "LAST CHANGE", "VIA", "URL", "LAST ERROR"}, rows[0])
	assert.Equal(t, []string{"dc2", "ok", "1"}, rows[1][:3], out)
	assert.Equal(t, "wan", rows[1][5], "a single node holds the WAN link")
	assert.Equal(t, dc2.URL()+"/", rows[1][6])

	code, out, _ = runCmd(t, nil, "regions", "--addr", "http://"+dc1.Addr(), "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"region": "dc1"`)

	code, out, _ = runCmd(t, nil, "regions", "--addr", "http://"+dc2.Addr())
	require.Equal(t, 0, code)
	assert.Equal(t, "Region -; no remote region is configured (--remote-region)\n", out)
}

// The regions table says why a node on fallback follows the WAN: a relay
// set aside, or relays off for want of a gossip key.
func TestRegionsCommandSaysWhyFallback(t *testing.T) {
	rep := federation.Report{Region: "dc1", Ready: true, Remotes: []federation.RegionStatus{
		{Name: "dc2", URL: "http://e2/eureka/", State: federation.StateOK, Instances: 3, Via: federation.ViaRelay,
			Relay: "n2", Links: []string{"n2"}},
		{Name: "dc3", URL: "http://e3/eureka/", State: federation.StateOK, Instances: 1, Via: federation.ViaFallback,
			Links: []string{"n3"}, ViaReason: "relay n3 set aside for 42s: its stream broke: EOF"},
		{Name: "dc4", URL: "http://e4/eureka/", State: federation.StateStale, Via: federation.ViaFallback,
			Links: []string{"n1", "n3"}, ViaReason: "relays off: HTTP basic auth is on and the cluster has no gossip key"},
		{Name: "dc5", URL: "http://e5/eureka/", State: federation.StateOK, Via: federation.ViaFallback},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/admin/regions", r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	}))
	t.Cleanup(srv.Close)

	code, out, errOut := runCmd(t, nil, "regions", "--addr", srv.URL)
	require.Equal(t, 0, code, errOut)
	parts := strings.Split(out, "\n\n")
	require.Len(t, parts, 3, out)
	rows := tableRows(parts[1])
	require.Len(t, rows, 5, out)
	assert.Equal(t, "relay n2", rows[1][5])
	assert.Equal(t, "fallback (wan)", rows[2][5])
	assert.Equal(t, "On fallback: this node holds no WAN link to these regions but follows them over the WAN itself, because\n"+
		"  dc3 (links n3): relay n3 set aside for 42s: its stream broke: EOF\n"+
		"  dc4 (links n1, n3): relays off: HTTP basic auth is on and the cluster has no gossip key\n"+
		"  dc5 (links -): no relay is usable\n", parts[2])

	rep.Remotes = rep.Remotes[:1]
	code, out, _ = runCmd(t, nil, "regions", "--addr", srv.URL)
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "On fallback", "no region on fallback: no explanation")
}

// A remote region's password never reaches the effective-configuration
// log.
func TestRemoteRegionPasswordNotLogged(t *testing.T) {
	c := DefaultConfig()
	c.RemoteRegions = []string{"dc2=http://ops:s3cret@e2:8761/eureka/"}
	o, ok := optionByName("remote-region")
	require.True(t, ok)
	shown := o.get(c)
	assert.NotContains(t, shown, "s3cret")
	assert.Contains(t, shown, "dc2=http://ops:")
}
