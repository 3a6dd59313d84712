package httpapi_test

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/httpapi"
)

// fakeHolds is a cluster layer whose holds on eviction the test sets.
type fakeHolds struct {
	mu sync.Mutex
	hs []httpapi.EvictionHold
}

func (f *fakeHolds) set(hs ...httpapi.EvictionHold) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hs = hs
}

// EvictionHolds implements httpapi.EvictionHoldSource.
func (f *fakeHolds) EvictionHolds() []httpapi.EvictionHold {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]httpapi.EvictionHold(nil), f.hs...)
}

// The holds of these tests: a silent member, bounded, with characters XML
// and HTML must escape; views that disagree, given here without an end to
// show how a hold with none known in advance is encoded.
var (
	holdSince  = time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	silentHold = httpapi.EvictionHold{Reason: httpapi.HoldSilentMember, Members: []string{"peer-c"},
		Since: holdSince, Until: holdSince.Add(2 * time.Minute),
		Detail: "eviction held: no report from peer-c for 40s <&> (renewals it forwards may be lost on the way)"}
	disagreeHold = httpapi.EvictionHold{Reason: httpapi.HoldViewsDisagree, Members: []string{"peer-d", "peer-e"},
		Since:  holdSince.In(time.FixedZone("x", 3600)),
		Detail: "eviction held: peer-d, peer-e still report(s) but are not alive in this node's view"}
)

// calmReading is a reading with self-preservation not engaged.
var calmReading = actors.SelfPreservationStatus{
	Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 20, LocalRenewals: 20, Members: 1,
	ExpirationEnabled: true, Reason: "not engaged: 20 renewals in the last window > threshold 17", Window: time.Minute,
}

// getEviction fetches GET /admin/eviction.
func (h *harness) getEviction() (httpapi.Eviction, map[string]any) {
	h.t.Helper()
	res := h.get("/admin/eviction", "")
	require.Equal(h.t, http.StatusOK, res.code, "%s", res)
	require.Equal(h.t, ctJSON, res.header.Get("Content-Type"))
	var e httpapi.Eviction
	require.NoError(h.t, json.Unmarshal(res.body, &e), "%s", res.body)
	var raw map[string]any
	require.NoError(h.t, json.Unmarshal(res.body, &raw), "%s", res.body)
	return e, raw
}

// evictionHeldRe matches one heureka_eviction_held sample.
var evictionHeldRe = regexp.MustCompile(`(?m)^heureka_eviction_held\{reason="([^"]+)"\} (\S+)$`)

// evictionHeld scrapes /metrics and returns heureka_eviction_held by reason.
func (h *harness) evictionHeld() map[string]float64 {
	h.t.Helper()
	res := h.get("/metrics", "")
	require.Equal(h.t, http.StatusOK, res.code)
	out := map[string]float64{}
	for _, m := range evictionHeldRe.FindAllStringSubmatch(string(res.body), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(h.t, err)
		out[m[1]] = v
	}
	return out
}

// statusEviction fetches /eureka/status as JSON and returns its eviction
// element.
func (h *harness) statusEviction() httpapi.Eviction {
	h.t.Helper()
	res := h.get("/eureka/status", ctJSON)
	require.Equal(h.t, http.StatusOK, res.code)
	var doc struct {
		SelfPreservation map[string]any   `json:"selfPreservation"`
		Eviction         httpapi.Eviction `json:"eviction"`
	}
	require.NoError(h.t, json.Unmarshal(res.body, &doc), "%s", res.body)
	assert.NotContains(h.t, doc.SelfPreservation, "evictionHolds", "the status carries the holds once, in eviction")
	return doc.Eviction
}

// xmlEviction is /eureka/status's <eviction> element.
type xmlEviction struct {
	ExpirationEnabled bool `xml:"expirationEnabled"`
	Holds             []struct {
		Reason  string   `xml:"reason"`
		Members []string `xml:"members>member"`
		Since   string   `xml:"since"`
		Until   string   `xml:"until"`
		Detail  string   `xml:"detail"`
	} `xml:"holds>hold"`
}

// statusEvictionXML fetches /eureka/v2/status as XML and returns its
// eviction element.
func (h *harness) statusEvictionXML() xmlEviction {
	h.t.Helper()
	res := h.get("/eureka/v2/status", "")
	require.Equal(h.t, http.StatusOK, res.code)
	require.Equal(h.t, ctXML, res.header.Get("Content-Type"))
	var doc struct {
		XMLName  xml.Name    `xml:"com.netflix.eureka.util.StatusInfo"`
		Eviction xmlEviction `xml:"eviction"`
	}
	require.NoError(h.t, xml.Unmarshal(res.body, &doc), "%s", res.body)
	return doc.Eviction
}

// TestEvictionHoldsShownEverywhere: a hold of the cluster layer shows, with
// its detail, on GET /admin/eviction, GET /admin/self-preservation,
// /eureka/status (JSON and XML), and flips heureka_eviction_held for its
// reason to 1; every reason is always reported; when the hold ends every
// place says so.
func TestEvictionHoldsShownEverywhere(t *testing.T) {
	src := &fakeHolds{}
	h, _ := startAPI(t, func(r *actors.Registry) httpapi.Registry {
		c := &cannedRegistry{Registry: r}
		c.sp.Store(&calmReading)
		return c
	}, func(c *httpapi.Config) { c.EvictionHolds = src })

	// Nothing holds eviction.
	e, raw := h.getEviction()
	assert.Equal(t, httpapi.Eviction{ExpirationEnabled: true, Holds: []httpapi.EvictionHold{}}, e)
	assert.Equal(t, []any{}, raw["holds"], "an empty list, not null")
	assert.Equal(t, map[string]float64{"self-preservation": 0, "silent-member": 0, "deaf": 0, "views-disagree": 0},
		h.evictionHeld(), "every reason, always")
	res := h.get("/admin/self-preservation", "")
	assert.Contains(t, string(res.body), `"evictionHolds":[]`)
	assert.Equal(t, e, h.statusEviction())
	x := h.statusEvictionXML()
	assert.True(t, x.ExpirationEnabled)
	assert.Empty(t, x.Holds)

	// Two holds of the cluster layer.
	src.set(silentHold, disagreeHold)
	e, raw = h.getEviction()
	assert.False(t, e.ExpirationEnabled)
	require.Len(t, e.Holds, 2)
	assert.Equal(t, silentHold, e.Holds[0])
	assert.Equal(t, disagreeHold.Detail, e.Holds[1].Detail)
	assert.Equal(t, time.UTC, e.Holds[1].Since.Location(), "times in UTC")
	assert.True(t, e.Holds[1].Until.IsZero())
	holds := raw["holds"].([]any)
	assert.Equal(t, "2026-05-04T03:02:01Z", holds[0].(map[string]any)["since"], "RFC 3339")
	assert.Equal(t, "2026-05-04T03:04:01Z", holds[0].(map[string]any)["until"])
	assert.NotContains(t, holds[1], "until", "no end known in advance: absent")
	assert.Equal(t, map[string]float64{"self-preservation": 0, "silent-member": 1, "deaf": 0, "views-disagree": 1}, h.evictionHeld())

	var sp struct {
		Engaged       bool                   `json:"engaged"`
		EvictionHolds []httpapi.EvictionHold `json:"evictionHolds"`
	}
	res = h.get("/admin/self-preservation", "")
	require.NoError(t, json.Unmarshal(res.body, &sp), "%s", res.body)
	assert.False(t, sp.Engaged, "self-preservation itself holds nothing")
	assert.Equal(t, e.Holds, sp.EvictionHolds)
	assert.Contains(t, string(res.body), "<&>", "no HTML escaping")

	assert.Equal(t, e, h.statusEviction())
	x = h.statusEvictionXML()
	assert.False(t, x.ExpirationEnabled)
	require.Len(t, x.Holds, 2)
	assert.Equal(t, "silent-member", x.Holds[0].Reason)
	assert.Equal(t, []string{"peer-c"}, x.Holds[0].Members)
	assert.Equal(t, silentHold.Detail, x.Holds[0].Detail, "escaped and read back")
	assert.Equal(t, "2026-05-04T03:02:01Z", x.Holds[0].Since)
	assert.Equal(t, "2026-05-04T03:04:01Z", x.Holds[0].Until)
	assert.Equal(t, []string{"peer-d", "peer-e"}, x.Holds[1].Members)
	assert.Empty(t, x.Holds[1].Until)

	// The holds end.
	src.set()
	e, _ = h.getEviction()
	assert.True(t, e.ExpirationEnabled)
	assert.Empty(t, e.Holds)
	assert.Equal(t, map[string]float64{"self-preservation": 0, "silent-member": 0, "deaf": 0, "views-disagree": 0}, h.evictionHeld())
}

// TestSelfPreservationIsAHold: engaged self-preservation is listed first,
// with the registry's reason as its detail and its engagement as its
// start, on every endpoint and in the metric; released, it goes.
func TestSelfPreservationIsAHold(t *testing.T) {
	var canned *cannedRegistry
	src := &fakeHolds{}
	src.set(silentHold)
	h, _ := startAPI(t, func(r *actors.Registry) httpapi.Registry {
		canned = &cannedRegistry{Registry: r}
		reading := engagedReading
		canned.sp.Store(&reading)
		return canned
	}, func(c *httpapi.Config) { c.EvictionHolds = src })

	e, _ := h.getEviction()
	assert.False(t, e.ExpirationEnabled)
	require.Len(t, e.Holds, 2)
	assert.Equal(t, httpapi.EvictionHold{Reason: "self-preservation", Members: []string{}, Since: engagedReading.EngagedSince,
		Detail: engagedReading.Reason}, e.Holds[0])
	assert.Equal(t, silentHold, e.Holds[1])
	assert.Equal(t, map[string]float64{"self-preservation": 1, "silent-member": 1, "deaf": 0, "views-disagree": 0}, h.evictionHeld())
	assert.Equal(t, e, h.statusEviction())
	sp := h.adminSP()
	assert.True(t, sp.Engaged, "the old fields are all there")
	assert.Equal(t, engagedReading.Reason, sp.Reason)
	x := h.statusEvictionXML()
	require.Len(t, x.Holds, 2)
	assert.Equal(t, engagedReading.Reason, x.Holds[0].Detail)
	assert.Equal(t, "2026-05-04T03:02:01Z", x.Holds[0].Since)

	canned.sp.Store(&calmReading)
	src.set()
	e, _ = h.getEviction()
	assert.Equal(t, httpapi.Eviction{ExpirationEnabled: true, Holds: []httpapi.EvictionHold{}}, e)
	assert.Equal(t, 0.0, h.evictionHeld()["self-preservation"])
}

// A single node (no cluster layer) can be held by self-preservation only,
// and still reports every reason. A new node expects one renewing client
// (Eureka's rule) and counts none yet: self-preservation is engaged, and
// the hold says so, without a start the registry does not know.
func TestEvictionSingleNode(t *testing.T) {
	h := startNode(t)
	e, _ := h.getEviction()
	st := h.node.Registry().SelfPreservation()
	require.True(t, st.Engaged, "a new node: %s", st.Reason)
	assert.False(t, e.ExpirationEnabled)
	require.Len(t, e.Holds, 1)
	assert.Equal(t, "self-preservation", e.Holds[0].Reason)
	assert.Equal(t, st.Reason, e.Holds[0].Detail)
	assert.Equal(t, map[string]float64{"self-preservation": 1, "silent-member": 0, "deaf": 0, "views-disagree": 0}, h.evictionHeld())
	assert.Equal(t, e, h.statusEviction())

	// Switched off, self-preservation holds nothing.
	require.Equal(t, http.StatusOK, h.do(http.MethodPut, "/admin/self-preservation?enabled=false", nil).code)
	e, _ = h.getEviction()
	assert.Equal(t, httpapi.Eviction{ExpirationEnabled: true, Holds: []httpapi.EvictionHold{}}, e)
	assert.Equal(t, 0.0, h.evictionHeld()["self-preservation"])
}
