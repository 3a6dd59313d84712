package httpapi

// Metrics
//
// /metrics serves the Prometheus registry in Config.Metrics. This file owns
// what the API itself knows: HTTP requests (count, latency by route and
// status code, in flight), the registry's contents read from the snapshot at
// scrape time (metrics_instances.go), the self-preservation figures and
// the holds on eviction (heureka_eviction_held, eviction.go). Two
// more collectors are built by the node, which registers them on the same
// registry: EventMetrics (metrics_events.go), the registry sink that counts
// registrations, cancels, evictions and renewals, and ClusterCollector
// (metrics_cluster.go), membership and replication. Every family is listed,
// with its labels and cardinality, in deploy/METRICS.md; a test in deploy/
// checks that list against what a running node exports.
//
// Names follow Prometheus conventions: heureka_ prefix, _total for
// counters, _seconds for durations, base units only. Label cardinality is
// bounded by the code (routes, status codes, statuses, causes, member
// states, peers) except heureka_application_instances, which has one series
// per application and status present: see metrics_instances.go.

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpDurationBuckets are the latency buckets of
// heureka_http_request_duration_seconds, in seconds: prepared reads answer
// in well under a millisecond, a full registry of 100k instances takes
// around a second to write to a slow client.
var httpDurationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// metrics are the API's Prometheus metrics.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

func newMetrics(reg *prometheus.Registry, registry Registry, snaps Snapshots, holds EvictionHoldSource) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heureka_http_requests_total",
			Help: "HTTP requests received, by route (one label value per API operation).",
		}, []string{"route"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "heureka_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, from routing to the last byte written, by route and status code.",
			Buckets: httpDurationBuckets,
		}, []string{"route", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "heureka_http_requests_in_flight",
			Help: "HTTP requests being served now.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.inFlight,
		newInstancesCollector(snaps),
		selfPreservationCollector{registry},
		evictionCollector{registry: registry, src: holds})
	registerClockSkewMetrics(reg, registry)
	return m
}

// registerClockSkewMetrics registers the clock-skew gauges of a registry
// that can tell (see refusedForSkew).
func registerClockSkewMetrics(reg *prometheus.Registry, registry Registry) {
	src, ok := registry.(skewSource)
	if !ok {
		return
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "heureka_clock_behind_peers",
		Help: "1 while this node's wall clock is behind most peers' by more than the HLC tolerance: writes are refused with 503.",
	}, func() float64 {
		if src.HLC().Skew().Behind {
			return 1
		}
		return 0
	}), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "heureka_clock_peer_lead_seconds",
		Help: "The median lead of the peers' clocks over this node's, from their changes of the last minute.",
	}, func() float64 { return src.HLC().Skew().Lead.Seconds() }))
}

// routeMetrics are one route's request instruments, resolved when the
// route is registered so that a request costs no label lookup: the
// counter, and one histogram observer per status code, created on the
// code's first use (so /metrics lists only the codes a route answered, as
// promhttp's instrumentation did) and then read with one atomic load.
type routeMetrics struct {
	count    prometheus.Counter
	inFlight prometheus.Gauge
	duration prometheus.ObserverVec // curried with the route
	byCode   [maxCode - minCode]atomic.Pointer[prometheus.Observer]
}

// The status codes whose observers routeMetrics caches: every valid code.
const (
	minCode = 100
	maxCode = 600
)

// route returns the instruments of route; each call makes a new set over
// the same series.
func (m *metrics) route(route string) *routeMetrics {
	return &routeMetrics{
		count:    m.requests.WithLabelValues(route),
		inFlight: m.inFlight,
		duration: m.duration.MustCurryWith(prometheus.Labels{"route": route}),
	}
}

// observe times one request answered with code (0: nothing written,
// which net/http sends as 200) after d.
func (rm *routeMetrics) observe(code int, d time.Duration) {
	if code == 0 {
		code = http.StatusOK
	}
	if code < minCode || code >= maxCode {
		rm.duration.WithLabelValues(strconv.Itoa(code)).Observe(d.Seconds())
		return
	}
	slot := &rm.byCode[code-minCode]
	o := slot.Load()
	if o == nil {
		obs := rm.duration.WithLabelValues(strconv.Itoa(code))
		o = &obs
		slot.Store(o) // a racing store holds the same series
	}
	(*o).Observe(d.Seconds())
}

// instrument wraps h so that every request is counted and timed under
// route: http.Handler's face of routeMetrics, for the handlers the mux
// serves directly.
func (m *metrics) instrument(route string, h http.HandlerFunc) http.Handler {
	rm := m.route(route)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rm.inFlight.Inc()
		defer rm.inFlight.Dec()
		sw, start := rm.begin(w)
		h(sw, r)
		rm.end(sw, start)
	})
}

// begin starts timing a request: it returns a ResponseWriter over w that
// records the status code, which end observes and recycles (a request
// allocates nothing here). The caller counts the request in flight, with
// a deferred decrement so that a panicking handler leaves the gauge; like
// promhttp's, a panicking request is not observed.
func (rm *routeMetrics) begin(w http.ResponseWriter) (*statusWriter, time.Time) {
	rm.count.Inc()
	sw := statusWriters.Get().(*statusWriter)
	sw.ResponseWriter, sw.code = w, 0
	return sw, time.Now()
}

// end observes the request begin started and recycles its writer.
func (rm *routeMetrics) end(sw *statusWriter, start time.Time) {
	rm.observe(sw.code, time.Since(start))
	sw.ResponseWriter = nil
	statusWriters.Put(sw)
}

// statusWriter records the status code a handler writes. It keeps the
// optional interfaces net/http's writer has that a handler may use
// (http.Flusher, http.Hijacker, io.ReaderFrom, and Unwrap for
// http.ResponseController).
type statusWriter struct {
	http.ResponseWriter
	code int // 0 until the handler writes
}

var statusWriters = sync.Pool{New: func() any { return &statusWriter{} }}

// WriteHeader implements http.ResponseWriter; the first final code counts.
func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher when the underlying writer does.
func (w *statusWriter) Flush() {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack implements http.Hijacker when the underlying writer does.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, http.ErrNotSupported
}

// ReadFrom implements io.ReaderFrom, so that net/http's sendfile path
// (static files) stays available through the wrapper.
func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(w.ResponseWriter, src)
}

// Unwrap returns the underlying writer (for http.ResponseController).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// selfPreservationCollector reports the self-preservation reading. It loads
// the reading once per scrape, so the figures of one scrape agree.
type selfPreservationCollector struct{ registry Registry }

var (
	spRenewsDesc = prometheus.NewDesc("heureka_renews_last_window",
		"Client renewals (and registrations) counted in the last complete renewal window, cluster-wide: this node's plus every reachable member's report. Self-preservation compares it with heureka_renews_threshold.", nil, nil)
	spLocalDesc = prometheus.NewDesc("heureka_renews_local_last_window",
		"Client renewals (and registrations) this node received itself in its last complete renewal window.", nil, nil)
	spPeerDesc = prometheus.NewDesc("heureka_renews_peers_last_window",
		"Client renewals the other reachable members reported for their last complete window, scaled to this node's window.", nil, nil)
	spThresholdDesc = prometheus.NewDesc("heureka_renews_threshold",
		"Renewals per window at or below which self-preservation engages: expected clients × window / expected renewal interval × renewal percent threshold.", nil, nil)
	spExpectedDesc = prometheus.NewDesc("heureka_renews_expected_clients",
		"Clients expected to send renewals (Eureka's expectedNumberOfClientsSendingRenews): every instance of the registry, recounted every renewal-threshold-update-interval.", nil, nil)
	spWindowDesc = prometheus.NewDesc("heureka_renewal_window_seconds",
		"Length of the window over which renewals are counted.", nil, nil)
	spMembersDesc = prometheus.NewDesc("heureka_renews_members",
		"Members whose renewal counts went into heureka_renews_last_window, this node included.", nil, nil)
	spEnabledDesc = prometheus.NewDesc("heureka_self_preservation_enabled",
		"1 when self-preservation is switched on (--self-preservation, or PUT /admin/self-preservation).", nil, nil)
	spEngagedDesc = prometheus.NewDesc("heureka_self_preservation_engaged",
		"1 when self-preservation is holding expired leases now: enabled, and renewals at or below the threshold.", nil, nil)
	spSinceDesc = prometheus.NewDesc("heureka_self_preservation_engaged_since_timestamp_seconds",
		"When the current self-preservation engagement began, in Unix seconds; 0 when not engaged.", nil, nil)
	spExpirationDesc = prometheus.NewDesc("heureka_lease_expiration_enabled",
		"1 when eviction may run (self-preservation off or not engaged).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c selfPreservationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{spRenewsDesc, spLocalDesc, spPeerDesc, spThresholdDesc, spExpectedDesc,
		spWindowDesc, spMembersDesc, spEnabledDesc, spEngagedDesc, spSinceDesc, spExpirationDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c selfPreservationCollector) Collect(ch chan<- prometheus.Metric) {
	sp := c.registry.SelfPreservation()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	since := 0.0
	if sp.Engaged && !sp.EngagedSince.IsZero() {
		since = float64(sp.EngagedSince.UnixMilli()) / 1e3
	}
	gauge(spRenewsDesc, float64(sp.RenewsLastWindow))
	gauge(spLocalDesc, float64(sp.LocalRenewals))
	gauge(spPeerDesc, float64(sp.PeerRenewals))
	gauge(spThresholdDesc, float64(sp.Threshold))
	gauge(spExpectedDesc, float64(sp.Expected))
	gauge(spWindowDesc, sp.Window.Seconds())
	gauge(spMembersDesc, float64(sp.Members))
	gauge(spEnabledDesc, boolValue(sp.Enabled))
	gauge(spEngagedDesc, boolValue(sp.Engaged))
	gauge(spSinceDesc, since)
	gauge(spExpirationDesc, boolValue(sp.ExpirationEnabled))
}

// boolValue is 1 for true, 0 for false.
func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
