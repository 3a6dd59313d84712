package httpapi

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

func TestEventCausesInNumericOrder(t *testing.T) {
	// EventMetrics indexes its counters by Cause-1.
	for i, c := range causes {
		assert.Equal(t, actors.Cause(i+1), c)
	}
	assert.Equal(t, "unknown", actors.Cause(len(causes)+1).String(), "a new Cause must be added to causes")
}

func TestEventMetricsCountsBySource(t *testing.T) {
	m := NewEventMetrics()
	inst := &actors.Instance{App: "A", InstanceID: "a-1"}
	for _, ev := range []actors.Event{
		{Action: actors.ActionAdded, Cause: actors.CauseRegister, Instance: inst},
		{Action: actors.ActionModified, Cause: actors.CauseRegister, Instance: inst},
		{Action: actors.ActionModified, Cause: actors.CauseStatusUpdate, Instance: inst},
		{Action: actors.ActionDeleted, Cause: actors.CauseEvict, Instance: inst},
		{Action: actors.ActionDeleted, Cause: actors.CauseRefuseStale, Instance: inst},
		{Action: actors.ActionDeleted, Cause: actors.CauseCancel, Instance: inst},
		{Action: actors.ActionAdded, Cause: actors.CauseRegister, Instance: inst, Replicated: true},
		{Action: actors.ActionDeleted, Cause: actors.CauseCancel, Instance: inst, Replicated: true},
		{Action: actors.ActionDeleted, Cause: 0, Instance: inst}, // no cause: ignored
	} {
		m.Apply(&ev)
	}
	m.OnRenew("A", "a-1")
	assert.Equal(t, 2.0, value(t, m.registrations))
	assert.Equal(t, 1.0, value(t, m.cancels))
	assert.Equal(t, 1.0, value(t, m.evictions.WithLabelValues("evict")))
	assert.Equal(t, 1.0, value(t, m.evictions.WithLabelValues("refuse-stale")))
	assert.Equal(t, 1.0, value(t, m.changes.WithLabelValues("status-update")))
	assert.Equal(t, 1.0, value(t, m.replicated.WithLabelValues("added")))
	assert.Equal(t, 1.0, value(t, m.replicated.WithLabelValues("deleted")))
	assert.Equal(t, 0.0, value(t, m.replicated.WithLabelValues("modified")))
	assert.Equal(t, 1.0, value(t, m.renewals))
	gatherText(t, m) // registers and gathers without error
}

func TestInstancesCollectorFollowsTheSnapshot(t *testing.T) {
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	c := newInstancesCollector(v)
	put := func(app, id string, st actors.Status, action actors.ActionType) {
		v.Apply(&actors.Event{Action: action, Cause: actors.CauseRegister,
			Instance: &actors.Instance{App: app, InstanceID: id, HostName: id, Status: st}})
	}
	expect := func(want string) {
		t.Helper()
		assert.Equal(t, strings.TrimSpace(want), gatherText(t, c))
	}
	expect(`
heureka_applications 0
heureka_delta_held_bytes 0
heureka_delta_instances 0
heureka_instances 0
heureka_instances_by_status{status="DOWN"} 0
heureka_instances_by_status{status="OUT_OF_SERVICE"} 0
heureka_instances_by_status{status="STARTING"} 0
heureka_instances_by_status{status="UNKNOWN"} 0
heureka_instances_by_status{status="UP"} 0
`)
	put("A", "a-1", actors.StatusUp, actors.ActionAdded)
	put("A", "a-2", actors.StatusUp, actors.ActionAdded)
	put("B", "b-1", actors.StatusStarting, actors.ActionAdded)
	expect(`
heureka_application_instances{application="A",status="UP"} 2
heureka_application_instances{application="B",status="STARTING"} 1
heureka_applications 2
heureka_delta_held_bytes 72
heureka_delta_instances 3
heureka_instances 3
heureka_instances_by_status{status="DOWN"} 0
heureka_instances_by_status{status="OUT_OF_SERVICE"} 0
heureka_instances_by_status{status="STARTING"} 1
heureka_instances_by_status{status="UNKNOWN"} 0
heureka_instances_by_status{status="UP"} 2
`)
	// A changed application is recounted (its cached counts are stale); a
	// deleted one loses its series.
	put("A", "a-2", actors.StatusDown, actors.ActionModified)
	v.Apply(&actors.Event{Action: actors.ActionDeleted, Cause: actors.CauseCancel,
		Instance: &actors.Instance{App: "B", InstanceID: "b-1", HostName: "b-1", Status: actors.StatusStarting}})
	// The delta holds a-1 and a-2 as the registry does (24 B each, their
	// slots) and b-1's cancelled state packed.
	held := v.Snapshot().DeltaHeldBytes()
	assert.Greater(t, held, int64(72+100))
	expect(`
heureka_application_instances{application="A",status="DOWN"} 1
heureka_application_instances{application="A",status="UP"} 1
heureka_applications 1
heureka_delta_held_bytes ` + strconv.FormatInt(held, 10) + `
heureka_delta_instances 3
heureka_instances 2
heureka_instances_by_status{status="DOWN"} 1
heureka_instances_by_status{status="OUT_OF_SERVICE"} 0
heureka_instances_by_status{status="STARTING"} 0
heureka_instances_by_status{status="UNKNOWN"} 0
heureka_instances_by_status{status="UP"} 1
`)
	c.mu.Lock()
	assert.Len(t, c.cache, 1, "the deleted application left the cache")
	c.mu.Unlock()
	assert.Contains(t, gatherText(t, selfPreservationCollector{fakeSP{}}), "heureka_renews_threshold 5")
}

// value returns the value of a counter or gauge.
func value(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	require.NoError(t, (<-ch).Write(&m))
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// gatherText registers c alone, gathers, and returns its series (no
// heureka_registry_version, which moves with every change) as
// "name{labels} value" lines in Prometheus' order.
func gatherText(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	fams, err := reg.Gather()
	require.NoError(t, err)
	var lines []string
	for _, f := range fams {
		if f.GetName() == "heureka_registry_version" {
			continue
		}
		require.NotEmpty(t, f.GetHelp(), f.GetName())
		for _, m := range f.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"=\""+lp.GetValue()+"\"")
			}
			name := f.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			lines = append(lines, name+" "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return strings.Join(lines, "\n")
}

// fakeSP is a Registry whose only working method is SelfPreservation.
type fakeSP struct{ Registry }

func (fakeSP) SelfPreservation() *actors.SelfPreservationStatus {
	return &actors.SelfPreservationStatus{Enabled: true, Expected: 3, Threshold: 5}
}
