package httpapi_test

import (
	"encoding/json"
	"encoding/xml"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// portOf is the port of a base URL.
func portOf(t *testing.T, base string) int {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	_, p, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

// TestStatusReportsRealPort: the instance in /eureka/status carries the
// port the node really listens on (a free port here, never 8761), in JSON
// and XML, under both base paths.
func TestStatusReportsRealPort(t *testing.T) {
	for name, h := range map[string]*harness{"node": startNode(t), "handler": func() *harness { h, _ := startAPI(t, nil, nil); return h }()} {
		t.Run(name, func(t *testing.T) {
			want := portOf(t, h.base)
			require.NotEqual(t, 8761, want, "the test needs a port other than the default")

			res := h.get("/eureka/status", ctJSON)
			require.Equal(t, http.StatusOK, res.code)
			var j struct {
				InstanceInfo wireInstance `json:"instanceInfo"`
			}
			require.NoError(t, json.Unmarshal(res.body, &j), "%s", res.body)
			assert.Equal(t, want, j.InstanceInfo.Port.Number)
			assert.Equal(t, "true", j.InstanceInfo.Port.Enabled)

			res = h.get("/eureka/v2/status", "")
			require.Equal(t, http.StatusOK, res.code)
			var x struct {
				Instance xmlInstance `xml:"instanceInfo"`
			}
			require.NoError(t, xml.Unmarshal(res.body, &x), "%s", res.body)
			assert.Equal(t, strconv.Itoa(want), x.Instance.Port.Number)
		})
	}
}

// TestStatusInstanceIsAnInstance: the node's own instance in /eureka/status
// carries an IP address as ipAddr (the one the request reached, never the
// host name) and the time the node came up as its registration time.
func TestStatusInstanceIsAnInstance(t *testing.T) {
	before := time.Now().UnixMilli()
	h := startNode(t)
	res := h.get("/eureka/status", ctJSON)
	require.Equal(t, http.StatusOK, res.code)
	var j struct {
		InstanceInfo wireInstance `json:"instanceInfo"`
	}
	require.NoError(t, json.Unmarshal(res.body, &j), "%s", res.body)
	u, err := url.Parse(h.base)
	require.NoError(t, err)
	host, _, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	assert.Equal(t, host, j.InstanceInfo.IPAddr, "the address the request reached")
	assert.NotNil(t, net.ParseIP(j.InstanceInfo.IPAddr), "ipAddr is an IP address")
	reg := j.InstanceInfo.LeaseInfo.RegistrationTimestamp
	assert.GreaterOrEqual(t, reg, before-1000, "registered when the node started")
	assert.LessOrEqual(t, reg, time.Now().UnixMilli())
}
