package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// clockBehindCodes starts a node whose clock is behind its two peers' by
// 10 minutes (their fresh changes arrive stamped 10 minutes ahead of it:
// more than a 10-minute TTL less a 90 s lease) and returns its status, its answers
// to a cancel and a registration, and whether the instance is still there.
func clockBehindCodes(t *testing.T) (status, cancel, register response, kept bool) {
	h, reg := startAPI(t, nil, nil)
	in := javaInstance("ORDER-SERVICE", 31)
	inst := &actors.Instance{InstanceID: in.id(), HostName: "10.0.0.31", App: "ORDER-SERVICE", IPAddr: "10.0.0.31",
		Status: actors.StatusUp, DataCenterInfo: actors.DataCenterInfo{Name: "MyOwn"}}
	inst.Normalize()
	require.NoError(t, reg.Register(t.Context(), inst, false))
	ahead := time.Now().Add(10 * time.Minute)
	for _, peer := range []string{"node-b", "node-c"} {
		p := &actors.Instance{InstanceID: peer + "-1", HostName: peer, App: "PEERS", IPAddr: "10.0.1.1",
			Status: actors.StatusUp, DataCenterInfo: actors.DataCenterInfo{Name: "MyOwn"}}
		p.Normalize()
		_, err := reg.ApplyRecords(t.Context(), "PEERS", []actors.Record{{App: "PEERS", ID: p.ID(), Instance: p,
			Version: actors.Version{Clock: uint64(ahead.UnixMilli()) << 16, Node: peer}, LastRenewal: ahead.UnixMilli()}}, false)
		require.NoError(t, err)
	}
	status = h.get("/eureka/status", ctJSON)
	cancel = h.do(http.MethodDelete, "/eureka/apps/ORDER-SERVICE/"+in.id(), nil)
	register = h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", javaInstance("ORDER-SERVICE", 32).json(), "Content-Type", ctJSON)
	code, _ := h.instance("ORDER-SERVICE", in.id())
	return status, cancel, register, code == http.StatusOK
}

// A node whose clock is behind its peers' by more than the HLC tolerance
// refuses writes with a 503 that says why, so that clients fail over to a
// node that stamps their changes right; reads are still served.
func TestClockBehindRefusesWrites(t *testing.T) {
	status, cancel, register, kept := clockBehindCodes(t)
	assert.Contains(t, string(status.body), "writes refused with 503: this node's clock is behind", "the status says so")
	assert.Equal(t, http.StatusServiceUnavailable, cancel.code, "%s", cancel)
	assert.Contains(t, string(cancel.body), "clock")
	assert.Equal(t, http.StatusServiceUnavailable, register.code, "%s", register)
	assert.True(t, kept, "the cancel was not taken here")
}

// The skew shows on /metrics.
func TestClockBehindMetric(t *testing.T) {
	h, _ := startAPI(t, nil, nil)
	m := h.get("/metrics", "")
	require.Equal(t, http.StatusOK, m.code)
	assert.Contains(t, string(m.body), "heureka_clock_behind_peers 0")
}
