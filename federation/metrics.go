package federation

import (
	"io"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the heureka_region_* metrics.
type metrics struct {
	f     *Federation
	pulls *prometheus.CounterVec
	bytes *prometheus.CounterVec
}

// regionMetrics are one region's counters.
type regionMetrics struct {
	m        *metrics
	name     string
	received [2]prometheus.Counter // by from: fromWAN, fromRelay
}

// Where a region's bytes come from (the from label of
// heureka_region_received_bytes_total).
const (
	fromWAN   = 0 // the remote, over the WAN: a link, or a node on fallback
	fromRelay = 1 // a member's relay, over the local network
)

var (
	instancesDesc = prometheus.NewDesc("heureka_region_instances",
		"Instances served from a remote region now (0 while loading or dropped).", []string{"region"}, nil)
	stateDesc = prometheus.NewDesc("heureka_region_state",
		"A remote region's state: 1 for the state it is in (loading, ok, stale, dropped), 0 for the others.",
		[]string{"region", "state"}, nil)
	lagDesc = prometheus.NewDesc("heureka_region_last_success_age_seconds",
		"Seconds since a remote region's last successful pull (-1: never).", []string{"region"}, nil)
	readyDesc = prometheus.NewDesc("heureka_region_ready",
		"1 once every remote region has loaded once (?regions= reads answer 403 before), else 0.", nil, nil)
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{pulls: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "heureka_region_pulls_total",
		Help: "Pulls of a remote region by kind (full, delta) and result (ok, error, mismatch: a delta whose apps__hashcode disagreed, followed by a full pull).",
	}, []string{"region", "kind", "result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heureka_region_received_bytes_total",
			Help: "Bytes of the response bodies read from a remote region (from=wan: its stream and polls) or from a member's relay of it (from=relay), as they came on the connection: compressed when the body was.",
		}, []string{"region", "from"})}
	if reg != nil {
		reg.MustRegister(m.pulls, m.bytes, m)
	}
	return m
}

func (m *metrics) region(name string) *regionMetrics {
	return &regionMetrics{m: m, name: name, received: [2]prometheus.Counter{
		m.bytes.WithLabelValues(name, "wan"), m.bytes.WithLabelValues(name, "relay")}}
}

// counted returns body, counting what is read of it as received from
// from (fromWAN, fromRelay).
func (r *regionMetrics) counted(from int, body io.ReadCloser) io.ReadCloser {
	return &countingBody{ReadCloser: body, c: r.received[from]}
}

// countingBody counts the bytes read of a response body.
type countingBody struct {
	io.ReadCloser
	c prometheus.Counter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.c.Add(float64(n))
	}
	return n, err
}

func (r *regionMetrics) pull(kind, result string) {
	r.m.pulls.WithLabelValues(r.name, kind, result).Inc()
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- instancesDesc
	ch <- stateDesc
	ch <- lagDesc
	ch <- readyDesc
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	if m.f == nil {
		return
	}
	ready := 0.0
	if m.f.Ready() {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, ready)
	for _, s := range m.f.Status() {
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(s.Instances), s.Name)
		for _, st := range []State{StateLoading, StateOK, StateStale, StateDropped} {
			v := 0.0
			if s.State == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, s.Name, string(st))
		}
		lag := -1.0
		if s.Loaded {
			lag = s.LagSeconds
		}
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, lag, s.Name)
	}
}
