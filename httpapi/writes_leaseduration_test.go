package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// absurdLeaseCodes registers, in JSON and in XML, an instance whose
// durationInSecs is far beyond a day (it would overflow time.Duration),
// and returns both answers and whether the instance was installed.
func absurdLeaseCodes(t *testing.T) (jsonRes, xmlRes response, installed bool) {
	h, _ := startAPI(t, nil, nil)
	const huge = int64(10_000_000_000) // above 9.2e9 s: overflows
	in := javaInstance("ORDER-SERVICE", 21)
	in = in.with("leaseInfo", map[string]any{"renewalIntervalInSecs": 30, "durationInSecs": huge})
	jsonRes = h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", in.json(), "Content-Type", ctJSON)
	x := fmt.Sprintf(`<instance><instanceId>10.0.0.22:order-service:8080</instanceId><hostName>10.0.0.22</hostName>`+
		`<app>ORDER-SERVICE</app><ipAddr>10.0.0.22</ipAddr><status>UP</status>`+
		`<dataCenterInfo class="com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"><name>MyOwn</name></dataCenterInfo>`+
		`<leaseInfo><renewalIntervalInSecs>30</renewalIntervalInSecs><durationInSecs>%d</durationInSecs></leaseInfo></instance>`, huge)
	xmlRes = h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", []byte(x), "Content-Type", "application/xml")
	code, _ := h.instance("ORDER-SERVICE", in.id())
	return jsonRes, xmlRes, code == http.StatusOK
}

// A durationInSecs above MaxLeaseDurationSecs gets a 400 that says so, in
// JSON and XML alike; one day is accepted.
func TestAbsurdLeaseDurationRefused(t *testing.T) {
	j, x, installed := absurdLeaseCodes(t)
	assert.Equal(t, http.StatusBadRequest, j.code, "%s", j)
	assert.Equal(t, http.StatusBadRequest, x.code, "%s", x)
	assert.Contains(t, string(j.body), "durationInSecs")
	assert.Contains(t, string(x.body), "exceeds the maximum")
	assert.False(t, installed)

	h, _ := startAPI(t, nil, nil)
	in := javaInstance("ORDER-SERVICE", 23)
	in = in.with("leaseInfo", map[string]any{"renewalIntervalInSecs": 30, "durationInSecs": actors.MaxLeaseDurationSecs})
	h.register(in)
	got := h.mustInstance("ORDER-SERVICE", in.id())
	require.NotNil(t, got)
	assert.Equal(t, actors.MaxLeaseDurationSecs, got.LeaseInfo.DurationInSecs)
}
