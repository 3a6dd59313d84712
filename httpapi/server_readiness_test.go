package httpapi_test

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/httpapi"
)

// TestReadinessGate: while Config.Ready is false every registry read, under
// both base paths, answers 403 with a short text (so that the Java client
// and fargo fetch from another server), /readyz answers 503, and writes are
// still applied; once ready, the same reads answer 200 and show those writes.
func TestReadinessGate(t *testing.T) {
	var ready atomic.Bool
	h, _ := startAPI(t, nil, func(c *httpapi.Config) { c.Ready = ready.Load })

	// Written while not ready: a, b and c registered, b cancelled, c taken
	// out of service, a renewed.
	a, b, c := javaInstance("ORDER-SERVICE", 1), javaInstance("ORDER-SERVICE", 2), javaInstance("USER-SERVICE", 3)
	for _, i := range []instance{a, b, c} {
		h.register(i)
	}
	res := h.do(http.MethodDelete, "/eureka/apps/ORDER-SERVICE/"+b.id(), nil)
	assert.Equal(t, http.StatusOK, res.code, "cancel while not ready: %s", res)
	res = h.do(http.MethodPut, "/eureka/v2/apps/USER-SERVICE/"+c.id()+"/status?value=OUT_OF_SERVICE", nil)
	assert.Equal(t, http.StatusOK, res.code, "status while not ready: %s", res)
	res = h.renew("ORDER-SERVICE", a.id(), "status=UP")
	assert.Equal(t, http.StatusOK, res.code, "renew while not ready: %s", res)
	res = h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+a.id()+"/metadata?zone=z1", nil)
	assert.Equal(t, http.StatusOK, res.code, "metadata while not ready: %s", res)

	vip := a["vipAddress"].(string)
	svip := a["secureVipAddress"].(string)
	require.NotEmpty(t, vip)
	require.NotEmpty(t, svip)
	var reads []string
	for _, base := range httpapi.BasePaths {
		reads = append(reads,
			base+"/apps", base+"/apps/", base+"/apps/delta", base+"/apps/delta/",
			base+"/apps/ORDER-SERVICE", base+"/apps/order-service/"+a.id(), base+"/instances/"+a.id(),
			base+"/vips/"+vip, base+"/svips/"+svip)
	}

	for _, p := range reads {
		for _, accept := range []string{"", ctJSON} {
			res := h.get(p, accept)
			assert.Equal(t, http.StatusForbidden, res.code, "GET %s (Accept %q) while not ready: %s", p, accept, res)
			assert.Equal(t, "not ready: initial cluster sync in progress; fetch from another server", string(res.body), p)
			assert.Equal(t, "text/plain; charset=utf-8", res.header.Get("Content-Type"), p)
		}
	}
	res = h.get("/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, res.code)
	assert.Contains(t, string(res.body), "not ready")
	// The status page is not a registry read: it says why.
	res = h.get("/eureka/status", ctJSON)
	require.Equal(t, http.StatusOK, res.code)
	var st struct {
		IsHeathly bool `json:"isHeathly"`
	}
	require.NoError(t, json.Unmarshal(res.body, &st), "%s", res.body)
	assert.False(t, st.IsHeathly)

	ready.Store(true)
	for _, p := range reads {
		res := h.get(p, ctJSON)
		assert.Equal(t, http.StatusOK, res.code, "GET %s once ready: %s", p, res)
	}
	assert.Equal(t, http.StatusOK, h.get("/readyz", "").code)
	assert.ElementsMatch(t, []string{"ORDER-SERVICE/" + a.id(), "USER-SERVICE/" + c.id()}, h.apps("/eureka/apps").ids(),
		"the writes taken while not ready are all there")
	got := h.mustInstance("USER-SERVICE", c.id())
	assert.Equal(t, "OUT_OF_SERVICE", got.Status)
	assert.Equal(t, "z1", h.mustInstance("ORDER-SERVICE", a.id()).Metadata["zone"])
	code, _ := h.instance("ORDER-SERVICE", b.id())
	assert.Equal(t, http.StatusNotFound, code)
}
