package httpapi

// Registry event counters
//
// EventMetrics is an actors.Sink: the registry hands it every change it
// makes, synchronously, from the application actor that made it, so the
// counters are exact and cost one atomic add per change. Renewals make no
// event unless they change the instance, so the node also calls OnRenew
// from the registry's renewal hook (actors.Config.OnRenew).
//
// The registrations, cancels, evictions and changes counters count the
// changes this node made: a client's request, a Eureka peer's relayed
// batch, this node's own evictions (as an application's owner). Summed over
// the nodes, they count each change of the cluster once. The copies of
// other members' changes are counted apart, by action only
// (heureka_replicated_changes_total): a replicated record says what the
// instance became, not which operation made it (a replicated deletion is
// the same whether a client cancelled or the owner evicted).

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heureka/heureka/actors"
)

// EventMetrics counts the registry's changes and client renewals. Build
// it with NewEventMetrics, give it to the registry as a Sink (and OnRenew
// as its renewal hook) and register it on the node's Prometheus registry.
// It is safe for concurrent use.
type EventMetrics struct {
	changes       *prometheus.CounterVec
	registrations prometheus.Counter
	cancels       prometheus.Counter
	evictions     *prometheus.CounterVec
	replicated    *prometheus.CounterVec
	renewals      prometheus.Counter

	// Resolved children: Apply runs on every write and must not hash
	// label values.
	byCause [len(causes)]prometheus.Counter
	evicted [len(causes)]prometheus.Counter // nil for the causes that are not evictions
	copies  map[actors.ActionType]prometheus.Counter
}

// causes are the actors.Cause values, in their numeric order from 1.
var causes = [...]actors.Cause{actors.CauseRegister, actors.CauseCancel, actors.CauseEvict,
	actors.CauseStatusUpdate, actors.CauseDeleteOverride, actors.CauseMetadata, actors.CauseRefuseStale,
	actors.CauseRefuseLate}

// NewEventMetrics returns the counters, every label combination at 0.
func NewEventMetrics() *EventMetrics {
	m := &EventMetrics{
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heureka_registry_changes_total",
			Help: "Changes this node made to the registry, by cause: register, cancel, evict, status-update, delete-override, metadata, refuse-stale, refuse-late (copies from other members are in heureka_replicated_changes_total).",
		}, []string{"cause"}),
		registrations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "heureka_registrations_total",
			Help: "Registrations (new leases and re-registrations) this node received from clients or Eureka peers.",
		}),
		cancels: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "heureka_cancels_total",
			Help: "Cancels this node received that removed an instance.",
		}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heureka_evictions_total",
			Help: "Instances this node evicted, by cause: evict (the lease expired; only an application's owner evicts), refuse-stale (a copy older than the tombstone TTL was refused and answered with an eviction).",
		}, []string{"cause"}),
		replicated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heureka_replicated_changes_total",
			Help: "Changes copied from other members and applied here, by action (added, modified, deleted).",
		}, []string{"action"}),
		renewals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "heureka_renewals_total",
			Help: "Successful client renewals received by this node (renewals forwarded by members and Eureka peers' heartbeats are not counted).",
		}),
		copies: map[actors.ActionType]prometheus.Counter{},
	}
	for i, c := range causes {
		m.byCause[i] = m.changes.WithLabelValues(c.String())
		if c == actors.CauseEvict || c == actors.CauseRefuseStale {
			m.evicted[i] = m.evictions.WithLabelValues(c.String())
		}
	}
	for _, a := range []actors.ActionType{actors.ActionAdded, actors.ActionModified, actors.ActionDeleted} {
		m.copies[a] = m.replicated.WithLabelValues(strings.ToLower(string(a)))
	}
	return m
}

// Apply implements actors.Sink.
func (m *EventMetrics) Apply(ev *actors.Event) {
	if ev.Replicated {
		if c := m.copies[ev.Action]; c != nil {
			c.Inc()
		}
		return
	}
	i := int(ev.Cause) - 1
	if i < 0 || i >= len(causes) {
		return
	}
	m.byCause[i].Inc()
	switch ev.Cause {
	case actors.CauseRegister:
		m.registrations.Inc()
	case actors.CauseCancel:
		m.cancels.Inc()
	case actors.CauseEvict, actors.CauseRefuseStale:
		m.evicted[i].Inc()
	}
}

// OnRenew counts one successful client renewal; it has the signature of
// actors.Config.OnRenew.
func (m *EventMetrics) OnRenew(app, id string) { m.renewals.Inc() }

// Describe implements prometheus.Collector.
func (m *EventMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.changes.Describe(ch)
	m.registrations.Describe(ch)
	m.cancels.Describe(ch)
	m.evictions.Describe(ch)
	m.replicated.Describe(ch)
	m.renewals.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *EventMetrics) Collect(ch chan<- prometheus.Metric) {
	m.changes.Collect(ch)
	m.registrations.Collect(ch)
	m.cancels.Collect(ch)
	m.evictions.Collect(ch)
	m.replicated.Collect(ch)
	m.renewals.Collect(ch)
}
