package httpapi_test

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/httpapi"
)

// spJSON is the self-preservation object of /admin/self-preservation,
// /eureka/status and this node's /cluster/members row.
type spJSON struct {
	Enabled           bool       `json:"enabled"`
	Engaged           bool       `json:"engaged"`
	EngagedSince      *time.Time `json:"engagedSince"`
	Reason            string     `json:"reason"`
	Expected          int        `json:"expected"`
	Threshold         int        `json:"threshold"`
	RenewsLastWindow  int64      `json:"renewsLastWindow"`
	LocalRenewals     int64      `json:"localRenewals"`
	PeerRenewals      int64      `json:"peerRenewals"`
	Members           int        `json:"members"`
	ExpirationEnabled bool       `json:"expirationEnabled"`
	WindowSeconds     float64    `json:"windowSeconds"`
	Protected         int        `json:"protected"`
	RecoveryThreshold int        `json:"recoveryThreshold"`
}

// spKeys are the keys every self-preservation object carries.
var spKeys = []string{"enabled", "engaged", "engagedSince", "reason", "expected", "threshold", "renewsLastWindow",
	"localRenewals", "peerRenewals", "members", "expirationEnabled", "windowSeconds", "protected", "recoveryThreshold"}

// adminSPKeys are the keys of GET and PUT /admin/self-preservation: spKeys
// and the holds on eviction.
var adminSPKeys = append(slices.Clone(spKeys), "evictionHolds")

// adminSP fetches GET /admin/self-preservation, checking its shape.
func (h *harness) adminSP() spJSON {
	h.t.Helper()
	res := h.get("/admin/self-preservation", "")
	require.Equal(h.t, http.StatusOK, res.code, "%s", res)
	require.Equal(h.t, ctJSON, res.header.Get("Content-Type"))
	var keys map[string]any
	require.NoError(h.t, json.Unmarshal(res.body, &keys), "%s", res.body)
	got := make([]string, 0, len(keys))
	for k := range keys {
		got = append(got, k)
	}
	assert.ElementsMatch(h.t, adminSPKeys, got, "%s", res.body)
	var sp spJSON
	require.NoError(h.t, json.Unmarshal(res.body, &sp), "%s", res.body)
	return sp
}

// TestSelfPreservationSwitch: PUT /admin/self-preservation switches a real
// registry's self-preservation at run time and GET reads it back; bad
// values get 400 with a message and change nothing.
func TestSelfPreservationSwitch(t *testing.T) {
	h, reg := startAPI(t, nil, nil)
	h.register(javaInstance("ORDER-SERVICE", 1))

	sp := h.adminSP()
	require.True(t, sp.Enabled, "on by default")
	assert.Equal(t, 60.0, sp.WindowSeconds)
	assert.Equal(t, reg.SelfPreservation().Expected, sp.Expected)
	assert.Equal(t, reg.SelfPreservation().Threshold, sp.Threshold)

	for _, c := range []struct{ query, want string }{
		{"", "missing enabled parameter (PUT /admin/self-preservation?enabled=true|false)"},
		{"?enabled=", "missing enabled parameter (PUT /admin/self-preservation?enabled=true|false)"},
		{"?enabled=maybe", `invalid enabled value "maybe" (want true or false)`},
		{"?enabled=0", `invalid enabled value "0" (want true or false)`},
		{"?enabled=true&enabled=false", "enabled given more than once; give it once, true or false"},
	} {
		res := h.do(http.MethodPut, "/admin/self-preservation"+c.query, nil)
		assert.Equal(t, http.StatusBadRequest, res.code, "PUT %q: %s", c.query, res)
		assert.Equal(t, c.want, string(res.body), "PUT %q", c.query)
		assert.True(t, h.adminSP().Enabled, "PUT %q changed nothing", c.query)
	}

	res := h.do(http.MethodPut, "/admin/self-preservation?enabled=false", nil)
	require.Equal(t, http.StatusOK, res.code, "%s", res)
	var put spJSON
	require.NoError(t, json.Unmarshal(res.body, &put), "%s", res.body)
	assert.False(t, put.Enabled, "the answer is the new state")
	assert.True(t, put.ExpirationEnabled, "with self-preservation off, leases expire")
	assert.False(t, put.Engaged)

	sp = h.adminSP()
	assert.False(t, sp.Enabled)
	assert.True(t, sp.ExpirationEnabled)
	assert.False(t, sp.Engaged)
	assert.Nil(t, sp.EngagedSince)
	assert.False(t, reg.SelfPreservation().Enabled, "the registry itself was switched")
	assert.Contains(t, h.logs.String(), "self-preservation switched at run time")

	res = h.do(http.MethodPut, "/admin/self-preservation?enabled=TRUE", nil)
	require.Equal(t, http.StatusOK, res.code, "%s", res)
	assert.True(t, h.adminSP().Enabled)
	assert.True(t, reg.SelfPreservation().Enabled)

	res = h.do(http.MethodPost, "/admin/self-preservation?enabled=false", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, res.code)
	assert.True(t, h.adminSP().Enabled)
}

// cannedRegistry is a real registry whose self-preservation reading the
// test sets, so that the rendering of a decision the registry would only
// reach after minutes of missing renewals can be checked.
type cannedRegistry struct {
	*actors.Registry
	sp atomic.Pointer[actors.SelfPreservationStatus]
}

func (c *cannedRegistry) SelfPreservation() *actors.SelfPreservationStatus { return c.sp.Load() }

// fakeCluster reports fixed members.
type fakeCluster []httpapi.Member

func (f fakeCluster) Members() []httpapi.Member { return f }

// engagedReading is a reading with self-preservation engaged.
var engagedReading = actors.SelfPreservationStatus{
	Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 9, LocalRenewals: 4, PeerRenewals: 5, Members: 3,
	ExpirationEnabled: false, Engaged: true, EngagedSince: time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC),
	Reason: "engaged: 9 renewals in the last window <= threshold 17 (10 expected) <&>", Window: time.Minute,
}

// TestStatusReportsSelfPreservation: /eureka/status (JSON and XML) carries
// this node's decision and its figures, without changing Eureka's fields.
func TestStatusReportsSelfPreservation(t *testing.T) {
	var canned *cannedRegistry
	h, _ := startAPI(t, func(r *actors.Registry) httpapi.Registry {
		canned = &cannedRegistry{Registry: r}
		reading := engagedReading
		canned.sp.Store(&reading)
		return canned
	}, nil)

	res := h.get("/eureka/status", ctJSON)
	require.Equal(t, http.StatusOK, res.code)
	var j struct {
		GeneralStats     map[string]string `json:"generalStats"`
		ApplicationStats map[string]string `json:"applicationStats"`
		InstanceInfo     wireInstance      `json:"instanceInfo"`
		IsHeathly        bool              `json:"isHeathly"`
		SelfPreservation spJSON            `json:"selfPreservation"`
	}
	require.NoError(t, json.Unmarshal(res.body, &j), "%s", res.body)
	assert.Contains(t, j.GeneralStats, "server-uptime")
	assert.Contains(t, j.ApplicationStats, "registered-replicas")
	assert.Equal(t, apiNodeName, j.InstanceInfo.InstanceID)
	assert.True(t, j.IsHeathly)
	since := engagedReading.EngagedSince
	assert.Equal(t, spJSON{Enabled: true, Engaged: true, EngagedSince: &since, Reason: engagedReading.Reason,
		Expected: 10, Threshold: 17, RenewsLastWindow: 9, LocalRenewals: 4, PeerRenewals: 5, Members: 3,
		ExpirationEnabled: false, WindowSeconds: 60}, j.SelfPreservation)

	res = h.get("/eureka/v2/status", "")
	require.Equal(t, http.StatusOK, res.code)
	assert.Equal(t, ctXML, res.header.Get("Content-Type"))
	var x struct {
		XMLName      xml.Name `xml:"com.netflix.eureka.util.StatusInfo"`
		GeneralStats struct {
			Uptime string `xml:"server-uptime"`
		} `xml:"generalStats"`
		Instance         xmlInstance `xml:"instanceInfo"`
		Healthy          string      `xml:"isHeathly"`
		SelfPreservation struct {
			Enabled           bool    `xml:"enabled"`
			Engaged           bool    `xml:"engaged"`
			EngagedSince      string  `xml:"engagedSince"`
			Reason            string  `xml:"reason"`
			Expected          int     `xml:"expected"`
			Threshold         int     `xml:"threshold"`
			RenewsLastWindow  int64   `xml:"renewsLastWindow"`
			LocalRenewals     int64   `xml:"localRenewals"`
			PeerRenewals      int64   `xml:"peerRenewals"`
			Members           int     `xml:"members"`
			ExpirationEnabled bool    `xml:"expirationEnabled"`
			WindowSeconds     float64 `xml:"windowSeconds"`
		} `xml:"selfPreservation"`
	}
	require.NoError(t, xml.Unmarshal(res.body, &x), "%s", res.body)
	assert.NotEmpty(t, x.GeneralStats.Uptime)
	assert.Equal(t, apiNodeName, x.Instance.InstanceID)
	assert.Equal(t, "true", x.Healthy)
	sp := x.SelfPreservation
	assert.True(t, sp.Enabled)
	assert.True(t, sp.Engaged)
	assert.Equal(t, "2026-05-04T03:02:01Z", sp.EngagedSince)
	assert.Equal(t, engagedReading.Reason, sp.Reason, "escaped and read back")
	assert.Equal(t, []int64{10, 17, 9, 4, 5, 3}, []int64{int64(sp.Expected), int64(sp.Threshold), sp.RenewsLastWindow,
		sp.LocalRenewals, sp.PeerRenewals, int64(sp.Members)})
	assert.False(t, sp.ExpirationEnabled)
	assert.Equal(t, 60.0, sp.WindowSeconds)

	// Released: expiration enabled again, no engagedSince.
	released := engagedReading
	released.Engaged, released.EngagedSince, released.ExpirationEnabled = false, time.Time{}, true
	released.RenewsLastWindow, released.Reason = 20, "not engaged: 20 renewals in the last window > threshold 17"
	canned.sp.Store(&released)
	res = h.get("/eureka/status", ctJSON)
	require.NoError(t, json.Unmarshal(res.body, &j), "%s", res.body)
	assert.False(t, j.SelfPreservation.Engaged)
	assert.Nil(t, j.SelfPreservation.EngagedSince)
	assert.Equal(t, released.Reason, j.SelfPreservation.Reason)
	res = h.get("/eureka/status", "")
	assert.NotContains(t, string(res.body), "<engagedSince>")
	assert.Contains(t, string(res.body), "<engaged>false</engaged>")
}

// memberRow is one row of GET /cluster/members.
type memberRow struct {
	Name               string  `json:"name"`
	Address            string  `json:"address"`
	State              string  `json:"state"`
	Owned              float64 `json:"owned"`
	URL                string  `json:"url"`
	SelfPreservation   string  `json:"selfPreservation"`
	RenewalsLastWindow int64   `json:"renewalsLastWindow"`
	Detail             *spJSON `json:"selfPreservationDetail"`
}

// getMembers fetches GET /cluster/members, sorted by name.
func (h *harness) getMembers() []memberRow {
	h.t.Helper()
	res := h.get("/cluster/members", "")
	require.Equal(h.t, http.StatusOK, res.code)
	var rows []memberRow
	require.NoError(h.t, json.Unmarshal(res.body, &rows), "a JSON array: %s", res.body)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows
}

// TestMembersReportSelfPreservation: /cluster/members shows each member's
// decision as the cluster layer reports it, and this node's own decision
// and figures, which it fills itself when the cluster layer did not.
func TestMembersReportSelfPreservation(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		h, _ := startAPI(t, func(r *actors.Registry) httpapi.Registry {
			c := &cannedRegistry{Registry: r}
			reading := engagedReading
			c.sp.Store(&reading)
			return c
		}, func(c *httpapi.Config) {
			c.Cluster = fakeCluster{
				{Name: apiNodeName, Address: "10.0.0.1:7946", State: "alive", Owned: 0.5},
				{Name: "peer-b", Address: "10.0.0.2:7946", State: "alive", Owned: 0.5, URL: "http://10.0.0.2:8761/eureka/",
					SelfPreservation: "not engaged: 30 renewals > threshold 17", RenewalsLastWindow: 3},
				{Name: "peer-c", Address: "10.0.0.3:7946", State: "suspect"},
			}
		})
		rows := h.getMembers()
		require.Len(t, rows, 3)
		self := rows[0]
		assert.Equal(t, apiNodeName, self.Name)
		assert.Equal(t, engagedReading.Reason, self.SelfPreservation, "the registry's reason, which opens with the decision")
		assert.Equal(t, int64(4), self.RenewalsLastWindow, "this node's own count")
		require.NotNil(t, self.Detail)
		assert.True(t, self.Detail.Engaged)
		assert.Equal(t, engagedReading.Reason, self.Detail.Reason)
		assert.Equal(t, 10, self.Detail.Expected)
		assert.Equal(t, 17, self.Detail.Threshold)
		assert.Equal(t, int64(9), self.Detail.RenewsLastWindow, "cluster-wide")

		assert.Equal(t, memberRow{Name: "peer-b", Address: "10.0.0.2:7946", State: "alive", Owned: 0.5, URL: "http://10.0.0.2:8761/eureka/",
			SelfPreservation: "not engaged: 30 renewals > threshold 17", RenewalsLastWindow: 3}, rows[1], "as the cluster layer reported it")
		assert.Equal(t, memberRow{Name: "peer-c", Address: "10.0.0.3:7946", State: "suspect"}, rows[2], "nothing known")

		// The optional fields are left out when unknown.
		res := h.get("/cluster/members", "")
		var raw []map[string]any
		require.NoError(t, json.Unmarshal(res.body, &raw))
		for _, r := range raw {
			if r["name"] == "peer-c" {
				assert.NotContains(t, r, "selfPreservation")
				assert.NotContains(t, r, "renewalsLastWindow")
				assert.NotContains(t, r, "selfPreservationDetail")
			}
		}
	})

	t.Run("cluster layer's own report of this node wins", func(t *testing.T) {
		h, _ := startAPI(t, nil, func(c *httpapi.Config) {
			c.Cluster = fakeCluster{{Name: apiNodeName, State: "alive", Owned: 1, SelfPreservation: "engaged: from gossip", RenewalsLastWindow: 8}}
		})
		rows := h.getMembers()
		require.Len(t, rows, 1)
		assert.Equal(t, "engaged: from gossip", rows[0].SelfPreservation)
		assert.Equal(t, int64(8), rows[0].RenewalsLastWindow)
		require.NotNil(t, rows[0].Detail, "the detail is always this node's own reading")
		assert.True(t, rows[0].Detail.Enabled)
	})

	t.Run("single node, switched off", func(t *testing.T) {
		h, reg := startAPI(t, nil, nil)
		require.Equal(t, http.StatusOK, h.do(http.MethodPut, "/admin/self-preservation?enabled=false", nil).code)
		rows := h.getMembers()
		require.Len(t, rows, 1)
		assert.Equal(t, apiNodeName, rows[0].Name)
		assert.Equal(t, "alive", rows[0].State)
		assert.NotEmpty(t, rows[0].SelfPreservation)
		assert.Equal(t, reg.SelfPreservation().Reason, rows[0].SelfPreservation)
		require.NotNil(t, rows[0].Detail)
		assert.False(t, rows[0].Detail.Enabled)
		assert.True(t, rows[0].Detail.ExpirationEnabled)
	})
}
