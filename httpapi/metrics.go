package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's Prometheus metrics.
type metrics struct {
	requests *prometheus.CounterVec
}

func newMetrics(reg *prometheus.Registry, registry Registry, snaps Snapshots) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heureka_http_requests_total",
			Help: "Eureka API requests by route.",
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "heureka_instances", Help: "Registered instances."},
			func() float64 { return float64(snaps.Snapshot().Count()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "heureka_registry_version", Help: "Version of the read snapshot."},
			func() float64 { return float64(snaps.Snapshot().Version()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "heureka_renews_last_window", Help: "Renewals counted in the last complete window."},
			func() float64 { return float64(registry.SelfPreservation().RenewsLastWindow) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "heureka_renews_threshold", Help: "Renewals per window below which self-preservation engages."},
			func() float64 { return float64(registry.SelfPreservation().Threshold) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "heureka_lease_expiration_enabled", Help: "1 when eviction may run (self-preservation not engaged)."},
			func() float64 {
				if registry.SelfPreservation().ExpirationEnabled {
					return 1
				}
				return 0
			}),
	)
	return m
}
