package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// observations returns the duration histogram's sample counts of route by
// code, and the route's request count, from reg.
func observations(t *testing.T, reg *prometheus.Registry, route string) (byCode map[string]uint64, requests float64) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	byCode = map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] != route {
				continue
			}
			switch mf.GetName() {
			case "heureka_http_request_duration_seconds":
				byCode[labels["code"]] = m.GetHistogram().GetSampleCount()
			case "heureka_http_requests_total":
				requests = m.GetCounter().GetValue()
			}
		}
	}
	return byCode, requests
}

// The status writer records the first final status (200 when the handler
// only writes or writes nothing), forwards the optional interfaces, and
// each request is counted and observed under its route and code.
func TestRouteMetricsRecordCodes(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry(), nil, nil, nil)
	reg := prometheus.NewRegistry() // the request metrics alone
	reg.MustRegister(m.requests, m.duration)
	handlers := []http.HandlerFunc{
		func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) },
		func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("x")) },
		func(http.ResponseWriter, *http.Request) {},
		func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusContinue)
			w.WriteHeader(http.StatusNotFound)
		},
		func(w http.ResponseWriter, _ *http.Request) { w.(http.Flusher).Flush() },
		func(w http.ResponseWriter, _ *http.Request) {
			n, err := w.(io.ReaderFrom).ReadFrom(strings.NewReader("abc"))
			assert.NoError(t, err)
			assert.Equal(t, int64(3), n)
		},
		func(w http.ResponseWriter, _ *http.Request) {
			_, _, err := w.(http.Hijacker).Hijack()
			assert.ErrorIs(t, err, http.ErrNotSupported, "the recorder cannot be hijacked")
			assert.NotNil(t, w.(interface{ Unwrap() http.ResponseWriter }).Unwrap())
			w.WriteHeader(499)
		},
	}
	for _, h := range handlers {
		m.instrument("test", h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	byCode, requests := observations(t, reg, "test")
	assert.Equal(t, map[string]uint64{"204": 1, "200": 4, "404": 1, "499": 1}, byCode)
	assert.Equal(t, float64(len(handlers)), requests)
}
