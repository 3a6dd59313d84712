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

// Config.ReadyReason is what /readyz answers while not ready, and the
// readiness element of /eureka/status in JSON and XML, ready or not.
func TestReadyReasonShown(t *testing.T) {
	var ready atomic.Bool
	reason := atomic.Value{}
	reason.Store("not ready: join refused (key): gossip key mismatch")
	h, _ := startAPI(t, nil, func(c *httpapi.Config) {
		c.Ready = ready.Load
		c.ReadyReason = func() string { return reason.Load().(string) }
	})
	res := h.get("/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, res.code)
	assert.Equal(t, "not ready: join refused (key): gossip key mismatch", string(res.body))

	res = h.get("/eureka/status", ctJSON)
	require.Equal(t, http.StatusOK, res.code, "%s", res)
	var doc struct {
		Readiness struct {
			Ready  bool   `json:"ready"`
			Reason string `json:"reason"`
		} `json:"readiness"`
	}
	require.NoError(t, json.Unmarshal(res.body, &doc), "%s", res.body)
	assert.False(t, doc.Readiness.Ready)
	assert.Contains(t, doc.Readiness.Reason, "gossip key mismatch")

	ready.Store(true)
	reason.Store("serving alone: no seed reachable (10.0.0.1:7946)")
	res = h.get("/eureka/status", "")
	require.Equal(t, http.StatusOK, res.code, "%s", res)
	assert.Contains(t, string(res.body), "<readiness>\n    <ready>true</ready>\n    <reason>serving alone: no seed reachable (10.0.0.1:7946)</reason>")
	res = h.get("/readyz", "")
	assert.Equal(t, http.StatusOK, res.code)
}
