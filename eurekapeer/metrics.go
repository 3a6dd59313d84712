package eurekapeer

// The sender's Prometheus figures, read from Stats at scrape time:
//
//	heureka_eurekapeer_pending{peer}                 instances with changes to send
//	heureka_eurekapeer_dropped_total{peer}           changes refused by the queue bound
//	heureka_eurekapeer_batches_total{peer,result}    requests, result ok or failed
//	heureka_eurekapeer_items_total{peer,action}      items delivered, by action
//	heureka_eurekapeer_reregistrations_total{peer}   404 replies answered with a registration

import "github.com/prometheus/client_golang/prometheus"

var (
	descPending = prometheus.NewDesc("heureka_eurekapeer_pending",
		"Instances with changes not yet sent to the Eureka peer.", []string{"peer"}, nil)
	descDropped = prometheus.NewDesc("heureka_eurekapeer_dropped_total",
		"Changes not queued for the Eureka peer because its queue was full.", []string{"peer"}, nil)
	descBatches = prometheus.NewDesc("heureka_eurekapeer_batches_total",
		"Replication batches sent to the Eureka peer, by result (ok or failed).", []string{"peer", "result"}, nil)
	descItems = prometheus.NewDesc("heureka_eurekapeer_items_total",
		"Replication items the Eureka peer accepted, by action.", []string{"peer", "action"}, nil)
	descRereg = prometheus.NewDesc("heureka_eurekapeer_reregistrations_total",
		"Registrations sent because the Eureka peer answered 404.", []string{"peer"}, nil)
)

// collector exports a Sender's Stats.
type collector struct{ s *Sender }

func newCollector(s *Sender) prometheus.Collector { return collector{s} }

// Describe implements prometheus.Collector.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPending, descDropped, descBatches, descItems, descRereg} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.s.Stats() {
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(st.Pending), st.Peer)
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(st.Dropped), st.Peer)
		ch <- prometheus.MustNewConstMetric(descBatches, prometheus.CounterValue, float64(st.Batches), st.Peer, "ok")
		ch <- prometheus.MustNewConstMetric(descBatches, prometheus.CounterValue, float64(st.Failed), st.Peer, "failed")
		for a, n := range st.Sent {
			ch <- prometheus.MustNewConstMetric(descItems, prometheus.CounterValue, float64(n), st.Peer, a)
		}
		ch <- prometheus.MustNewConstMetric(descRereg, prometheus.CounterValue, float64(st.Reregistered), st.Peer)
	}
}
