package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/httpapi"
)

// slowRefill is a rate at which no token comes back during a test.
const slowRefill = 1e-6

func TestRateLimitFetches(t *testing.T) {
	h, _ := startAPI(t, nil, func(c *httpapi.Config) {
		c.RateLimit = &httpapi.RateLimitConfig{BurstSize: 3, FetchAverageRate: slowRefill, FullFetchAverageRate: slowRefill,
			PrivilegedClients: []string{"my-sidecar"}}
	})
	inst := javaInstance("limited", 1)
	h.register(inst)

	for i := range 3 {
		assert.Equal(t, http.StatusOK, h.get("/eureka/apps/delta", ctJSON).code, "fetch %d within the burst", i)
	}
	for _, p := range []string{"/eureka/apps/delta", "/eureka/apps", "/eureka/v2/apps/", "/eureka/apps/LIMITED", "/eureka/apps/delta/"} {
		res := h.get(p, ctJSON)
		assert.Equal(t, http.StatusServiceUnavailable, res.code, p)
		assert.Equal(t, "1", res.header.Get("Retry-After"), p)
		assert.Contains(t, string(res.body), "rate limited", p)
	}

	// Never limited: writes, instance and VIP reads, status, probes.
	assert.Equal(t, http.StatusOK, h.renew(inst.app(), inst.id(), "").code)
	assert.Equal(t, http.StatusOK, h.get("/eureka/apps/"+inst.app()+"/"+inst.id(), ctJSON).code)
	assert.Equal(t, http.StatusOK, h.get("/eureka/instances/"+inst.id(), ctJSON).code)
	assert.Equal(t, http.StatusOK, h.get("/eureka/vips/limited", ctJSON).code)
	assert.Equal(t, http.StatusOK, h.get("/eureka/status", ctJSON).code)
	assert.Equal(t, http.StatusOK, h.get("/healthz", "").code)
	h.register(javaInstance("limited", 2))

	// Privileged clients pass: the Java client, Eureka peers, configured names.
	for _, name := range []string{"DefaultClient", "DefaultServer", "my-sidecar"} {
		res := h.do(http.MethodGet, "/eureka/apps", nil, "Accept", ctJSON, "DiscoveryIdentity-Name", name)
		assert.Equal(t, http.StatusOK, res.code, name)
	}
	res := h.do(http.MethodGet, "/eureka/apps", nil, "Accept", ctJSON, "DiscoveryIdentity-Name", "SomeoneElse")
	assert.Equal(t, http.StatusServiceUnavailable, res.code)
}

// TestRateLimitFullFetchBucket: full fetches have their own, smaller budget;
// deltas go on when it is spent.
func TestRateLimitFullFetchBucket(t *testing.T) {
	h, _ := startAPI(t, nil, func(c *httpapi.Config) {
		c.RateLimit = &httpapi.RateLimitConfig{BurstSize: 2, FetchAverageRate: 1e9, FullFetchAverageRate: slowRefill}
	})
	assert.Equal(t, http.StatusOK, h.get("/eureka/apps", ctJSON).code)
	assert.Equal(t, http.StatusOK, h.get("/eureka/apps/", ctJSON).code)
	assert.Equal(t, http.StatusServiceUnavailable, h.get("/eureka/apps", ctJSON).code)
	for range 10 {
		assert.Equal(t, http.StatusOK, h.get("/eureka/apps/delta", ctJSON).code)
	}
}

func TestRateLimitThrottleStandardClients(t *testing.T) {
	h, _ := startAPI(t, nil, func(c *httpapi.Config) {
		c.RateLimit = &httpapi.RateLimitConfig{BurstSize: 1, FetchAverageRate: slowRefill, FullFetchAverageRate: slowRefill,
			ThrottleStandardClients: true}
	})
	get := func() int {
		return h.do(http.MethodGet, "/eureka/apps/delta", nil, "Accept", ctJSON, "DiscoveryIdentity-Name", "DefaultClient").code
	}
	assert.Equal(t, http.StatusOK, get())
	assert.Equal(t, http.StatusServiceUnavailable, get())
}

// TestRateLimitOff: by default nothing is limited.
func TestRateLimitOff(t *testing.T) {
	h, _ := startAPI(t, nil, nil)
	for range 50 {
		require.Equal(t, http.StatusOK, h.get("/eureka/apps", ctJSON).code)
	}
}

// TestRateLimitAfterAuth: requests without credentials are refused before
// they can take the tokens of those with them.
func TestRateLimitAfterAuth(t *testing.T) {
	h, _ := startAPI(t, nil, func(c *httpapi.Config) {
		c.Auth = testAuth(t)
		c.RateLimit = &httpapi.RateLimitConfig{BurstSize: 1, FetchAverageRate: slowRefill, FullFetchAverageRate: slowRefill}
	})
	for range 5 {
		assert.Equal(t, http.StatusUnauthorized, h.get("/eureka/apps", ctJSON).code)
	}
	auth := []string{"Accept", ctJSON, "Authorization", basic("reader", readerPass)}
	assert.Equal(t, http.StatusOK, h.do(http.MethodGet, "/eureka/apps", nil, auth...).code)
	assert.Equal(t, http.StatusServiceUnavailable, h.do(http.MethodGet, "/eureka/apps", nil, auth...).code)
}

func TestRateLimitConfigValidate(t *testing.T) {
	def := httpapi.DefaultRateLimitConfig()
	assert.Equal(t, httpapi.RateLimitConfig{BurstSize: 10, FetchAverageRate: 500, FullFetchAverageRate: 100}, def)
	assert.NoError(t, def.Validate())
	var off *httpapi.RateLimitConfig
	assert.NoError(t, off.Validate())
	for _, bad := range []httpapi.RateLimitConfig{
		{BurstSize: 0, FetchAverageRate: 1, FullFetchAverageRate: 1},
		{BurstSize: 1, FetchAverageRate: 0, FullFetchAverageRate: 1},
		{BurstSize: 1, FetchAverageRate: 1, FullFetchAverageRate: -1},
	} {
		assert.Error(t, bad.Validate(), "%+v", bad)
	}
}
