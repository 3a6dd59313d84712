package federation

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the heureka_region_* metrics.
type metrics struct {
	f     *Federation
	pulls *prometheus.CounterVec
}

// regionMetrics are one region's counters.
type regionMetrics struct {
	m    *metrics
	name string
}

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
	}, []string{"region", "kind", "result"})}
	if reg != nil {
		reg.MustRegister(m.pulls, m)
	}
	return m
}

func (m *metrics) region(name string) *regionMetrics { return &regionMetrics{m: m, name: name} }

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
