package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// fedConfig is a node on loopback in region, pulling remotes with the
// scaled timers of federation.DefaultLocalConfig (every federation timer
// scaled together) and the view's delta retention scaled with them.
func fedConfig(t *testing.T, region string, remotes ...federation.Remote) node.Config {
	cfg := node.DefaultConfig(region + "-node")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Registry.SelfPreservation = false
	fc := federation.DefaultLocalConfig()
	fc.Region = region
	fc.Remotes = remotes
	cfg.Federation = &fc
	// Every node is also a remote: its stream's keep-alive is scaled
	// with the federation timers (below StreamIdleTimeout and StaleAfter).
	pc := httpapi.DefaultPushConfig()
	pc.StreamKeepAlive = 50 * time.Millisecond
	cfg.Push = &pc
	return cfg
}

// startFed starts a node and stops it at the end of the test.
func startFed(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	n, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	return n
}

// fedRegister registers instance id of app with status and metadata.
func fedRegister(t *testing.T, base, app, id, status string, meta map[string]string) {
	t.Helper()
	m, _ := json.Marshal(meta)
	body := fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":%q,"app":%q,"ipAddr":"10.0.0.1","status":%q,`+
		`"port":{"$":8080,"@enabled":"true"},"vipAddress":%q,"metadata":%s,`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`,
		id, id, app, status, strings.ToLower(app), m)
	res, err := http.Post(base+"/apps/"+app, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode)
}

// fedInstance is what the tests read of an instance.
type fedInstance struct {
	InstanceID string            `json:"instanceId"`
	App        string            `json:"app"`
	Status     string            `json:"status"`
	ActionType string            `json:"actionType"`
	Metadata   map[string]string `json:"metadata"`
}

// fedApps is a decoded applications document.
type fedApps struct {
	Applications struct {
		VersionsDelta string `json:"versions__delta"`
		Hashcode      string `json:"apps__hashcode"`
		Application   []struct {
			Name     string        `json:"name"`
			Instance []fedInstance `json:"instance"`
		} `json:"application"`
	} `json:"applications"`
}

// ids returns "APP/id" of every instance, and fails on an application
// element that appears twice (a Java client keeps one per name).
func (a *fedApps) ids(t *testing.T) map[string]fedInstance {
	t.Helper()
	out := map[string]fedInstance{}
	names := map[string]bool{}
	for _, app := range a.Applications.Application {
		require.False(t, names[app.Name], "application %s appears twice", app.Name)
		names[app.Name] = true
		for _, in := range app.Instance {
			k := app.Name + "/" + in.InstanceID
			require.NotContains(t, out, k, "instance %s appears twice", k)
			out[k] = in
		}
	}
	return out
}

// fedGet reads path (relative to the node's /eureka) as JSON; a non-200
// answer returns its code and no document.
func fedGet(t *testing.T, base, path string, hdr ...string) (int, *fedApps) {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, nil
	}
	var a fedApps
	require.NoError(t, json.Unmarshal(b, &a), string(b))
	return res.StatusCode, &a
}

// switchable is a proxy to a node that can be made to fail (503), to cut
// the WAN link of a pull: cut also breaks the connections in flight (a
// change stream).
type switchable struct {
	*httptest.Server
	down atomic.Bool
}

// cut makes the link fail, streams included.
func (s *switchable) cut() {
	s.down.Store(true)
	s.CloseClientConnections()
}

func newSwitchable(t *testing.T, target string) *switchable {
	u, err := url.Parse(target)
	require.NoError(t, err)
	s := &switchable{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestFederationRegionsReads(t *testing.T) {
	dc1 := startFed(t, fedConfig(t, "dc1"))
	fedRegister(t, dc1.URL(), "ORDERS", "o-1", "UP", nil)
	fedRegister(t, dc1.URL(), "ORDERS", "o-2", "DOWN", nil)
	fedRegister(t, dc1.URL(), "USERS", "u-1", "UP", map[string]string{"zone": "z9"})

	link := newSwitchable(t, dc1.URL())
	link.down.Store(true) // dc1 not reachable yet: dc2 has not loaded it
	dc2 := startFed(t, fedConfig(t, "dc2", federation.Remote{Name: "dc1", URL: link.URL + "/eureka/"}))
	fedRegister(t, dc2.URL(), "ORDERS", "o-9", "UP", nil)

	code, _ := fedGet(t, dc2.URL(), "/apps?regions=dc1")
	assert.Equal(t, http.StatusForbidden, code, "403 before the region loaded once")
	code, _ = fedGet(t, dc2.URL(), "/apps/delta?regions=dc1")
	assert.Equal(t, http.StatusForbidden, code, "403 on the delta too")
	code, local := fedGet(t, dc2.URL(), "/apps")
	require.Equal(t, http.StatusOK, code, "the plain read does not wait for regions")
	assert.Equal(t, "UP_1_", local.Applications.Hashcode)

	link.down.Store(false)
	var full *fedApps
	require.Eventually(t, func() bool {
		code, full = fedGet(t, dc2.URL(), "/apps?regions=DC1,,dc1")
		return code == http.StatusOK
	}, 5*time.Second, 10*time.Millisecond)

	ids := full.ids(t)
	assert.Len(t, ids, 4, "local and remote in the same application elements")
	assert.Equal(t, "DOWN_1_UP_3_", full.Applications.Hashcode, "the hashcode is over the union")
	assert.Equal(t, "1", full.Applications.VersionsDelta)
	assert.Equal(t, "dc1", ids["ORDERS/o-1"].Metadata["zone"], "a remote instance without a zone gets its region")
	assert.Equal(t, "dc1", ids["ORDERS/o-1"].Metadata[federation.MarkerKey])
	assert.Equal(t, "z9", ids["USERS/u-1"].Metadata["zone"], "a zone of its own is kept")
	assert.NotContains(t, ids["ORDERS/o-9"].Metadata, federation.MarkerKey, "local instances are not marked")

	// Plain reads stay local; a pull from another region too.
	_, local = fedGet(t, dc2.URL(), "/apps")
	assert.Len(t, local.ids(t), 1)
	_, pulled := fedGet(t, dc2.URL(), "/apps", "User-Agent", federation.UserAgent)
	assert.Len(t, pulled.ids(t), 1)
	_, pulled = fedGet(t, dc2.URL(), "/apps?regions=dc1", "User-Agent", "Java-EurekaClient-RemoteRegion/v1.10.17")
	assert.Len(t, pulled.ids(t), 1, "a pull gets local data only, even if it asks for regions")
	// eureka-client 2.x's remote-region pulls send Jersey's User-Agent and
	// the server identity.
	_, pulled = fedGet(t, dc2.URL(), "/apps?regions=dc1", "User-Agent", "Jersey/4.0.2 (Apache HttpClient 4.5.3)",
		"DiscoveryIdentity-Name", "DefaultServer")
	assert.Len(t, pulled.ids(t), 1, "a Java server's pull gets local data only")
	// Unknown regions are ignored.
	_, other := fedGet(t, dc2.URL(), "/apps?regions=nowhere")
	assert.Len(t, other.ids(t), 1)

	code, delta := fedGet(t, dc2.URL(), "/apps/delta?regions=dc1")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "DOWN_1_UP_3_", delta.Applications.Hashcode, "the delta's hashcode is the full union's")
	assert.Contains(t, delta.ids(t), "ORDERS/o-1", "remote changes are in the region delta")

	// A cancel in dc1 disappears from dc2's region read, with a DELETED
	// delta entry.
	req, _ := http.NewRequest("DELETE", dc1.URL()+"/apps/ORDERS/o-1", nil)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Eventually(t, func() bool {
		_, full = fedGet(t, dc2.URL(), "/apps?regions=dc1")
		_, gone := full.ids(t)["ORDERS/o-1"]
		return !gone
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "DOWN_1_UP_2_", full.Applications.Hashcode)
	_, delta = fedGet(t, dc2.URL(), "/apps/delta?regions=dc1")
	assert.Equal(t, "DELETED", delta.ids(t)["ORDERS/o-1"].ActionType)
	assert.Equal(t, "DOWN_1_UP_2_", delta.Applications.Hashcode)

	// XML and gzip are served too.
	req, _ = http.NewRequest("GET", dc2.URL()+"/apps?regions=dc1", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err = http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, "gzip", res.Header.Get("Content-Encoding"))
	assert.Equal(t, "application/xml", res.Header.Get("Content-Type"))

	var report federation.Report
	res, err = http.Get("http://" + dc2.Addr() + "/admin/regions")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&report))
	res.Body.Close()
	assert.Equal(t, "dc2", report.Region)
	require.Len(t, report.Remotes, 1)
	assert.Equal(t, federation.StateOK, report.Remotes[0].State)
	assert.Equal(t, 2, report.Remotes[0].Instances)

	// /eureka/status carries the same document, in JSON and XML.
	var status struct {
		Regions federation.Report `json:"regions"`
	}
	req, _ = http.NewRequest("GET", dc2.URL()+"/status", nil)
	req.Header.Set("Accept", "application/json")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&status))
	res.Body.Close()
	assert.Equal(t, "dc2", status.Regions.Region)
	require.Len(t, status.Regions.Remotes, 1)
	assert.Equal(t, "dc1", status.Regions.Remotes[0].Name)
	res, err = http.Get(dc2.URL() + "/status")
	require.NoError(t, err)
	xml, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Contains(t, string(xml), "  <regions>\n    <ready>true</ready>\n    <region>dc2</region>\n    <remote>\n")
	assert.Contains(t, string(xml), "      <name>dc1</name>\n")

	// The dashboard's state carries it for the "Remote regions" table.
	var state struct {
		Regions federation.Report `json:"regions"`
	}
	res, err = http.Get("http://" + dc2.Addr() + "/dashboard/api/state")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&state))
	res.Body.Close()
	require.Len(t, state.Regions.Remotes, 1)
	assert.Equal(t, federation.StateOK, state.Regions.Remotes[0].State)
}

// TestFederationRingNoEchoes runs three regions in a ring, each pulling
// the next, all with transparent fallback on (Eureka's echo-prone
// setting): every region serves each instance once, and never its own
// instances back as remote ones.
func TestFederationRingNoEchoes(t *testing.T) {
	names := []string{"dc1", "dc2", "dc3"}
	// Start the three with pulls to placeholders, then learn the URLs:
	// each node pulls the next through a proxy started first.
	links := make([]*switchable, 3)
	targets := make([]atomic.Pointer[string], 3)
	for i := range links {
		s := &switchable{}
		i := i
		s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := targets[i].Load()
			if p == nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			u, _ := url.Parse(*p)
			httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host}).ServeHTTP(w, r)
		}))
		t.Cleanup(s.Close)
		links[i] = s
	}
	nodes := make([]*node.Node, 3)
	for i, name := range names {
		next := (i + 1) % 3
		cfg := fedConfig(t, name, federation.Remote{Name: names[next], URL: links[next].URL + "/eureka/"})
		cfg.Federation.TransparentFallback = true
		nodes[i] = startFed(t, cfg)
		u := nodes[i].URL()
		targets[i].Store(&u)
		fedRegister(t, u, "SVC", "svc-"+name, "UP", nil)
	}
	for i, n := range nodes {
		next := names[(i+1)%3]
		require.Eventually(t, func() bool {
			code, a := fedGet(t, n.URL(), "/apps?regions="+next)
			return code == http.StatusOK && len(a.ids(t)) == 2
		}, 5*time.Second, 10*time.Millisecond, "%s loads %s", names[i], next)
	}
	// Let several pull rounds pass, so that an echo would have had time
	// to travel the ring.
	time.Sleep(10 * federation.DefaultLocalConfig().PullInterval)
	for i, n := range nodes {
		next := names[(i+1)%3]
		for _, path := range []string{"/apps", "/apps?regions=" + next, "/apps/delta?regions=" + next, "/vips/svc"} {
			code, a := fedGet(t, n.URL(), path)
			require.Equal(t, http.StatusOK, code, path)
			ids := a.ids(t) // fails on a duplicate
			assert.Len(t, ids, 2, "%s %s: own and next region's, no echo", names[i], path)
			own := ids["SVC/svc-"+names[i]]
			assert.NotContains(t, own.Metadata, federation.MarkerKey, "%s %s: its own instance is local", names[i], path)
			assert.Equal(t, next, ids["SVC/svc-"+next].Metadata[federation.MarkerKey])
		}
		// One application, with fallback: the local application, as it has
		// an instance (Eureka's getApplication falls back to a remote
		// region only for an application with none here).
		req, _ := http.NewRequest("GET", n.URL()+"/apps/SVC", nil)
		req.Header.Set("Accept", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var one struct {
			Application struct {
				Instance []fedInstance `json:"instance"`
			} `json:"application"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&one))
		res.Body.Close()
		if assert.Len(t, one.Application.Instance, 1, "%s: one application with fallback: the local one", names[i]) {
			assert.Equal(t, "svc-"+names[i], one.Application.Instance[0].InstanceID)
		}
		res, err = http.Get(n.URL() + "/apps/NOPE")
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusNotFound, res.StatusCode)
		// What the previous region pulls from this one: local only.
		assert.Empty(t, pullLocalOnly(t, n.URL()), "%s answers a pull with local data only", names[i])
	}
}

// TestFederationStaleThenDropped cuts the link to a remote region and
// checks it is marked stale after StaleAfter and dropped after DropAfter,
// not before, and that it comes back in full when the link heals.
func TestFederationStaleThenDropped(t *testing.T) {
	dc1 := startFed(t, fedConfig(t, "dc1"))
	fedRegister(t, dc1.URL(), "ORDERS", "o-1", "UP", nil)
	link := newSwitchable(t, dc1.URL())
	cfg := fedConfig(t, "dc2", federation.Remote{Name: "dc1", URL: link.URL + "/eureka/"})
	fc := *cfg.Federation
	dc2 := startFed(t, cfg)
	f := dc2.Federation()
	require.NotNil(t, f)
	require.Eventually(t, f.Ready, 5*time.Second, 5*time.Millisecond)
	state := func() federation.RegionStatus { return f.Status()[0] }

	link.cut()
	cut := time.Now()
	lastOK := state().LastSuccess
	require.Eventually(t, func() bool { return state().State == federation.StateStale }, 5*time.Second, 2*time.Millisecond)
	stale := time.Now()
	code, a := fedGet(t, dc2.URL(), "/apps?regions=dc1")
	require.Equal(t, http.StatusOK, code)
	assert.Len(t, a.ids(t), 1, "a stale region is still served")
	require.Eventually(t, func() bool { return state().State == federation.StateDropped }, 5*time.Second, 2*time.Millisecond)
	dropped := time.Now()
	_, a = fedGet(t, dc2.URL(), "/apps?regions=dc1")
	assert.Empty(t, a.ids(t), "a dropped region's instances are gone")
	_, d := fedGet(t, dc2.URL(), "/apps/delta?regions=dc1")
	assert.Equal(t, "DELETED", d.ids(t)["ORDERS/o-1"].ActionType, "clients learn the drop from the delta")

	// On schedule: never before the bound (measured from the last
	// success), and at most a pull interval and a request timeout after it.
	slack := fc.PullInterval + fc.RequestTimeout + 100*time.Millisecond
	assert.GreaterOrEqual(t, stale.Sub(lastOK), fc.StaleAfter)
	assert.Less(t, stale.Sub(cut), fc.StaleAfter+slack)
	assert.GreaterOrEqual(t, dropped.Sub(lastOK), fc.DropAfter)
	assert.Less(t, dropped.Sub(cut), fc.DropAfter+slack)

	link.down.Store(false)
	require.Eventually(t, func() bool {
		_, a = fedGet(t, dc2.URL(), "/apps?regions=dc1")
		return len(a.ids(t)) == 1 && state().State == federation.StateOK
	}, 5*time.Second, 5*time.Millisecond, "the region loads again after the heal")
}

// TestFederationStreamPropagation: a region follows another Heureka's
// change stream, so a registration and a cancel cross in well under a
// second although the poll interval is seconds long; after the WAN link is
// cut and healed, what changed meanwhile arrives.
func TestFederationStreamPropagation(t *testing.T) {
	dc1 := startFed(t, fedConfig(t, "dc1"))
	link := newSwitchable(t, dc1.URL())
	cfg := fedConfig(t, "dc2", federation.Remote{Name: "dc1", URL: link.URL + "/eureka/"})
	cfg.Federation.PullInterval = 3 * time.Second // polls alone would take seconds
	cfg.Federation.StaleAfter = 10 * time.Second
	cfg.Federation.DropAfter = 30 * time.Second
	dc2 := startFed(t, cfg)
	require.Eventually(t, dc2.Federation().Ready, 5*time.Second, 5*time.Millisecond)

	visible := func(id string) bool {
		_, a := fedGet(t, dc2.URL(), "/apps?regions=dc1")
		_, ok := a.ids(t)["SVC/"+id]
		return ok
	}
	var worst time.Duration
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("s-%d", i)
		start := time.Now()
		fedRegister(t, dc1.URL(), "SVC", id, "UP", nil)
		require.Eventually(t, func() bool { return visible(id) }, 2*time.Second, 2*time.Millisecond, "%s crosses", id)
		worst = max(worst, time.Since(start))
		start = time.Now()
		req, _ := http.NewRequest("DELETE", dc1.URL()+"/apps/SVC/"+id, nil)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Eventually(t, func() bool { return !visible(id) }, 2*time.Second, 2*time.Millisecond, "%s's cancel crosses", id)
		worst = max(worst, time.Since(start))
	}
	t.Logf("slowest of 10 registrations and 10 cancels across: %v (poll interval %v)", worst, cfg.Federation.PullInterval)
	assert.Less(t, worst, time.Second, "changes cross in under a second")

	fedRegister(t, dc1.URL(), "SVC", "cancelled-during-cut", "UP", nil)
	require.Eventually(t, func() bool { return visible("cancelled-during-cut") }, 2*time.Second, 2*time.Millisecond)
	link.cut()
	fedRegister(t, dc1.URL(), "SVC", "during-cut", "UP", nil)
	req, _ := http.NewRequest("DELETE", dc1.URL()+"/apps/SVC/cancelled-during-cut", nil)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	time.Sleep(100 * time.Millisecond)
	assert.False(t, visible("during-cut"))
	link.down.Store(false)
	require.Eventually(t, func() bool { return visible("during-cut") && !visible("cancelled-during-cut") },
		10*time.Second, 10*time.Millisecond, "a registration and a cancel made during the cut arrive after the heal")
	assert.Equal(t, federation.StateOK, dc2.Federation().Status()[0].State)

	// The heureka_region_* families, from the node's registry.
	families, err := dc2.Metrics().Gather()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{"heureka_region_ready", "heureka_region_state", "heureka_region_instances",
		"heureka_region_last_success_age_seconds", "heureka_region_pulls_total"} {
		assert.True(t, got[name], "%s exported", name)
	}
}

// pullLocalOnly says what is wrong with the answer a node gives another
// region's pull ("" when it holds local instances only).
func pullLocalOnly(t *testing.T, base string) string {
	t.Helper()
	_, pulled := fedGet(t, base, "/apps", "User-Agent", federation.UserAgent)
	ids := pulled.ids(t)
	remote := 0
	for _, in := range ids {
		if in.Metadata[federation.MarkerKey] != "" {
			remote++
		}
	}
	if remote > 0 {
		return fmt.Sprintf("a pull got %d instances, %d of them remote", len(ids), remote)
	}
	return ""
}

// TestFederationWhitelist: only the whitelisted applications of a region
// are served; its hashcode check still covers the whole registry (no full
// refetch loop).
func TestFederationWhitelist(t *testing.T) {
	dc1 := startFed(t, fedConfig(t, "dc1"))
	fedRegister(t, dc1.URL(), "ORDERS", "o-1", "UP", nil)
	fedRegister(t, dc1.URL(), "USERS", "u-1", "UP", nil)
	cfg := fedConfig(t, "dc2", federation.Remote{Name: "dc1", URL: dc1.URL() + "/", Apps: []string{"users"}})
	cfg.Federation.Stream = false // polls: deltas checked against the hashcode
	dc2 := startFed(t, cfg)
	require.Eventually(t, dc2.Federation().Ready, 5*time.Second, 5*time.Millisecond)
	_, a := fedGet(t, dc2.URL(), "/apps?regions=dc1")
	ids := a.ids(t)
	assert.Contains(t, ids, "USERS/u-1")
	assert.NotContains(t, ids, "ORDERS/o-1")
	assert.Equal(t, "UP_1_", a.Applications.Hashcode)
	time.Sleep(10 * federation.DefaultLocalConfig().PullInterval)
	families, err := dc2.Metrics().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "heureka_region_pulls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "mismatch" {
					assert.Zero(t, m.GetCounter().GetValue(), "no delta mismatched")
				}
			}
		}
	}
}

// TestFederationQuietRegionStaysFresh: a remote whose own keep-alive is an
// hour, followed with a stale bound of 3 s, sends the follower a
// keep-alive every second (it asks for a third of its stale bound), so a
// region where nothing changes never looks stale. Before the follower
// asked, such a region flapped between ok and stale.
func TestFederationQuietRegionStaysFresh(t *testing.T) {
	cfg1 := fedConfig(t, "dc1")
	cfg1.Push.StreamKeepAlive = time.Hour
	dc1 := startFed(t, cfg1)
	fedRegister(t, dc1.URL(), "ORDERS", "o-1", "UP", nil)
	cfg := fedConfig(t, "dc2", federation.Remote{Name: "dc1", URL: dc1.URL() + "/"})
	fc := cfg.Federation
	fc.PullInterval = 2 * time.Second
	fc.RequestTimeout = time.Second
	fc.StaleAfter = 3 * time.Second
	fc.DropAfter = 10 * time.Second
	fc.StreamIdleTimeout = 5 * time.Second
	dc2 := startFed(t, cfg)
	f := dc2.Federation()
	require.Eventually(t, f.Ready, 5*time.Second, 5*time.Millisecond)
	assert.Never(t, func() bool { return f.Status()[0].State != federation.StateOK }, 2*fc.StaleAfter, 20*time.Millisecond,
		"a quiet region stays ok")
}
