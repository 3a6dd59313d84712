package dashboard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/httpapi/dashboard"
)

// The page is served at / and /eureka/ (and /eureka redirects there) by a
// real node over loopback, with its assets and the headers that keep it
// self-contained.
func TestPageAndAssetsServed(t *testing.T) {
	nd := startNode(t, nil)
	root := base(nd)

	for _, path := range []string{"/", "/eureka/"} {
		resp, err := http.Get(root + path)
		require.NoError(t, err)
		body := readAll(t, resp)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), path)
		assert.Contains(t, body, "<title>Heureka</title>", path)
		assert.Contains(t, body, `src="/dashboard/dashboard.js"`, path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'", path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'", path)
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer noRedirect.CloseIdleConnections()
	resp, err := noRedirect.Get(root + "/eureka")
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	assert.Equal(t, "/eureka/", resp.Header.Get("Location"))

	for path, ctype := range map[string]string{
		"/dashboard/dashboard.js":  "text/javascript; charset=utf-8",
		"/dashboard/dashboard.css": "text/css; charset=utf-8",
	} {
		resp, err := http.Get(root + path)
		require.NoError(t, err)
		body := readAll(t, resp)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, ctype, resp.Header.Get("Content-Type"), path)
		assert.NotEmpty(t, body, path)
		// A page load revalidates the asset and gets 304.
		etag := resp.Header.Get("ETag")
		require.NotEmpty(t, etag, path)
		code, _ := call(t, http.MethodGet, root+path, "", "If-None-Match", etag)
		assert.Equal(t, http.StatusNotModified, code, path)
	}

	for _, path := range []string{"/dashboard/", "/dashboard/index.html", "/dashboard/nope.js", "/eureka/v2/", "/nope"} {
		code, _ := call(t, http.MethodGet, root+path, "")
		assert.Equal(t, http.StatusNotFound, code, path)
	}
	code, _ := call(t, http.MethodPost, root+"/", "")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
}

// Mounting the dashboard at /eureka/ leaves the Eureka API where it was.
func TestEurekaAPIUnchangedBesideDashboard(t *testing.T) {
	nd := startNode(t, nil)
	root := base(nd)
	register(t, root, instance{app: "GREETER", id: "greeter-1", zone: "zone-a"})

	for _, path := range []string{"/eureka/apps", "/eureka/apps/", "/eureka/v2/apps", "/eureka/apps/GREETER"} {
		code, body := call(t, http.MethodGet, root+path, "")
		assert.Equal(t, http.StatusOK, code, path)
		assert.True(t, strings.HasPrefix(body, "<"), "%s: XML by default, got %.80q", path, body)
		assert.Contains(t, body, "greeter-1", path)

		code, body = call(t, http.MethodGet, root+path, "", "Accept", "application/json")
		assert.Equal(t, http.StatusOK, code, path)
		assert.True(t, json.Valid([]byte(body)), "%s: JSON when asked, got %.80q", path, body)
		assert.Contains(t, body, `"instanceId":"greeter-1"`, path)
	}
	code, body := call(t, http.MethodGet, root+"/eureka/status", "", "Accept", "application/json")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"generalStats"`)
}

// The state endpoint reports what was registered, through the snapshot
// the API serves, with the node, its (single) member and self-preservation.
func TestStateReportsRegistration(t *testing.T) {
	nd := startNode(t, nil)
	root := base(nd)
	register(t, root, instance{app: "GREETER", id: "greeter-1", zone: "zone-a",
		metadata: map[string]string{"version": "7", "team": "core"}})
	register(t, root, instance{app: "GREETER", id: "greeter-2", zone: "zone-b"})
	register(t, root, instance{app: "BILLING", id: "i-0abc", zone: "eu-west-1c", aws: true})
	code, _ := call(t, http.MethodPut, root+"/eureka/apps/GREETER/greeter-2/status?value=OUT_OF_SERVICE", "")
	require.Equal(t, http.StatusOK, code)

	st := state(t, root, "")
	assert.Equal(t, "dash-test", st.Node.Name)
	assert.Equal(t, "1.2.3-test", st.Node.Version)
	assert.True(t, st.Node.Ready)
	assert.GreaterOrEqual(t, st.Now, st.Node.Started)
	assert.Positive(t, st.RefreshMillis)

	require.Len(t, st.Members, 1)
	assert.Equal(t, "dash-test", st.Members[0].Name)
	assert.Equal(t, "alive", st.Members[0].State)
	assert.True(t, st.Members[0].Self)
	assert.InDelta(t, 1.0, st.Members[0].Owned, 1e-9)
	assert.NotEmpty(t, st.Members[0].SelfPreservation)

	sp := st.SelfPreservation
	assert.True(t, sp.Enabled)
	assert.NotEmpty(t, sp.Reason)
	// The self-preservation actor counts registrations asynchronously.
	assert.Eventually(t, func() bool { return state(t, root, "").SelfPreservation.Expected == 1+3 }, 10*time.Second,
		10*time.Millisecond, "the initial expected renewer, plus one per registration")
	assert.Equal(t, 1, sp.Members)
	assert.Positive(t, sp.WindowSeconds)

	assert.Equal(t, 2, st.Registry.Applications)
	assert.Equal(t, 3, st.Registry.Instances)
	assert.Equal(t, map[string]int{"UP": 2, "OUT_OF_SERVICE": 1}, st.Registry.Statuses)
	require.Len(t, st.Applications, 2)
	assert.Equal(t, "BILLING", st.Applications[0].Name, "applications in name order")
	assert.Equal(t, "GREETER", st.Applications[1].Name)

	g1 := findInstance(st, "GREETER", "greeter-1")
	require.NotNil(t, g1)
	assert.Equal(t, "greeter-1.internal", g1.HostName)
	assert.Equal(t, "10.0.0.7", g1.IPAddr)
	assert.Equal(t, 8080, g1.Port)
	assert.Equal(t, "UP", g1.Status)
	assert.Empty(t, g1.OverriddenStatus)
	assert.Equal(t, "zone-a", g1.Zone)
	assert.Equal(t, map[string]string{"version": "7", "team": "core", "zone": "zone-a"}, g1.Metadata)
	assert.Equal(t, "greeter", g1.VIPAddress)
	assert.Equal(t, 90, g1.LeaseDurationSecs)
	assert.Equal(t, 1, g1.RenewalIntervalSecs)
	assert.Positive(t, g1.Registered)
	assert.LessOrEqual(t, g1.Registered, st.Now)
	assert.GreaterOrEqual(t, g1.LastRenewal, g1.Registered)

	g2 := findInstance(st, "GREETER", "greeter-2")
	require.NotNil(t, g2)
	assert.Equal(t, "OUT_OF_SERVICE", g2.Status)
	assert.Equal(t, "OUT_OF_SERVICE", g2.OverriddenStatus)

	aws := findInstance(st, "BILLING", "i-0abc")
	require.NotNil(t, aws)
	assert.Equal(t, "eu-west-1c", aws.Zone, "the AWS availability-zone when metadata has no zone")
	assert.Equal(t, "Amazon", aws.DataCenter)

	// A page that holds the current snapshot gets no applications; after
	// a change it gets them again, under a new token.
	code, body := call(t, http.MethodGet, root+"/dashboard/api/state?known="+st.Registry.Token, "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"applications":null`)
	again := state(t, root, st.Registry.Token)
	assert.Nil(t, again.Applications)
	assert.Equal(t, st.Registry.Token, again.Registry.Token)
	assert.Equal(t, 3, again.Registry.Instances, "the summary is always there")

	code, _ = call(t, http.MethodDelete, root+"/eureka/apps/BILLING/i-0abc", "")
	require.Equal(t, http.StatusOK, code)
	after := state(t, root, st.Registry.Token)
	assert.NotEqual(t, st.Registry.Token, after.Registry.Token)
	require.Len(t, after.Applications, 1)
	assert.Equal(t, "GREETER", after.Applications[0].Name)
}

// An empty registry is an empty list, not null, so the page can tell "no
// applications" from "unchanged".
func TestStateOfEmptyRegistry(t *testing.T) {
	nd := startNode(t, nil)
	code, body := call(t, http.MethodGet, base(nd)+"/dashboard/api/state", "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"applications":[]`)
	st := state(t, base(nd), "")
	assert.Equal(t, 0, st.Registry.Instances)
}

func TestZone(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   actors.Instance
		want string
	}{
		{"none", actors.Instance{}, ""},
		{"metadata", actors.Instance{Metadata: map[string]string{"zone": "z1"}}, "z1"},
		{"aws", actors.Instance{DataCenterInfo: actors.DataCenterInfo{Name: "Amazon",
			Metadata: map[string]string{"availability-zone": "us-east-1a"}}}, "us-east-1a"},
		{"metadata wins", actors.Instance{Metadata: map[string]string{"zone": "z1"},
			DataCenterInfo: actors.DataCenterInfo{Metadata: map[string]string{"availability-zone": "us-east-1a"}}}, "z1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, dashboard.Zone(&tc.in))
		})
	}
}

// stubRegistry is a fixed self-preservation reading.
type stubRegistry struct {
	sp *actors.SelfPreservationStatus
}

func (s stubRegistry) SelfPreservation() *actors.SelfPreservationStatus { return s.sp }

// stubCluster is a fixed member list.
type stubCluster []httpapi.Member

func (c stubCluster) Members() []httpapi.Member { return c }

// Members come in name order; this node's row gets its own reading when the
// cluster layer has none, and the other rows keep what they reported.
func TestStateMembers(t *testing.T) {
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	started := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	sp := &actors.SelfPreservationStatus{Enabled: true, Engaged: true, EngagedSince: started.Add(time.Minute),
		Reason: "engaged: 3 renewals …", LocalRenewals: 3, Members: 2, Window: time.Minute}
	h := dashboard.New(dashboard.Config{
		View: v, Registry: stubRegistry{sp}, NodeName: "b",
		Cluster: stubCluster{
			{Name: "c", State: "suspect", Address: "10.0.0.3:7946", Owned: 0.25},
			{Name: "b", State: "alive", Address: "10.0.0.2:7946", Owned: 0.5},
			{Name: "a", State: "alive", Address: "10.0.0.1:7946", Owned: 0.25, SelfPreservation: "not engaged: …", RenewalsLastWindow: 9},
		},
		Started: started, Now: func() time.Time { return started.Add(90 * time.Second) },
		Ready: func() bool { return false },
	})
	st := h.State("")
	require.Len(t, st.Members, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{st.Members[0].Name, st.Members[1].Name, st.Members[2].Name})
	assert.Equal(t, "not engaged: …", st.Members[0].SelfPreservation)
	assert.EqualValues(t, 9, st.Members[0].RenewalsLastWindow)
	assert.False(t, st.Members[0].Self)
	assert.True(t, st.Members[1].Self)
	assert.Equal(t, "engaged: 3 renewals …", st.Members[1].SelfPreservation)
	assert.EqualValues(t, 3, st.Members[1].RenewalsLastWindow)
	assert.Empty(t, st.Members[2].SelfPreservation, "a member that reported nothing")

	assert.InDelta(t, 90, st.Node.UptimeSeconds, 1e-9)
	assert.False(t, st.Node.Ready)
	assert.True(t, st.SelfPreservation.Engaged)
	if assert.NotNil(t, st.SelfPreservation.EngagedSince) {
		assert.True(t, started.Add(time.Minute).Equal(*st.SelfPreservation.EngagedSince))
	}
	assert.InDelta(t, 60, st.SelfPreservation.WindowSeconds, 1e-9)
	assert.Equal(t, dashboard.DefaultRefresh.Milliseconds(), st.RefreshMillis)
	assert.NotNil(t, st.Applications)
	assert.Empty(t, st.Applications)
}

func TestNewRejectsMissingDependencies(t *testing.T) {
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	reg := stubRegistry{&actors.SelfPreservationStatus{}}
	assert.PanicsWithValue(t, "dashboard: Config.View is required", func() { dashboard.New(dashboard.Config{Registry: reg}) })
	assert.PanicsWithValue(t, "dashboard: Config.Registry is required", func() { dashboard.New(dashboard.Config{View: v}) })
	assert.PanicsWithValue(t, "dashboard: Config.Refresh -1s must not be negative", func() {
		dashboard.New(dashboard.Config{View: v, Registry: reg, Refresh: -time.Second})
	})
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// stubHolds is a fixed list of the cluster layer's holds on eviction.
type stubHolds []httpapi.EvictionHold

func (s stubHolds) EvictionHolds() []httpapi.EvictionHold { return s }

// The state carries every hold on eviction, self-preservation's first, as
// GET /admin/eviction does; with none, an empty list and expiration
// enabled.
func TestStateEvictionHolds(t *testing.T) {
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	since := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	silent := httpapi.EvictionHold{Reason: httpapi.HoldSilentMember, Members: []string{"c"}, Since: since, Until: since.Add(2 * time.Minute),
		Detail: "eviction held: no report from c for 40s"}
	engaged := &actors.SelfPreservationStatus{Enabled: true, Engaged: true, EngagedSince: since, Reason: "engaged: 3 renewals …"}
	h := dashboard.New(dashboard.Config{View: v, Registry: stubRegistry{engaged}, EvictionHolds: stubHolds{silent}, NodeName: "b"})
	st := h.State("")
	assert.False(t, st.Eviction.ExpirationEnabled)
	require.Len(t, st.Eviction.Holds, 2)
	assert.Equal(t, httpapi.EvictionHold{Reason: httpapi.HoldSelfPreservation, Members: []string{}, Since: since,
		Detail: "engaged: 3 renewals …"}, st.Eviction.Holds[0])
	assert.Equal(t, silent, st.Eviction.Holds[1])
	assert.Nil(t, st.SelfPreservation.EvictionHolds, "carried once, in eviction")

	calm := &actors.SelfPreservationStatus{Enabled: true, ExpirationEnabled: true, Reason: "not engaged: …"}
	h = dashboard.New(dashboard.Config{View: v, Registry: stubRegistry{calm}, NodeName: "b"})
	st = h.State("")
	assert.Equal(t, httpapi.Eviction{ExpirationEnabled: true, Holds: []httpapi.EvictionHold{}}, st.Eviction)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"eviction":{"expirationEnabled":true,"holds":[]}`)
}
