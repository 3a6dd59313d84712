package httpapi

// Instances by application and status
//
// The collector reads the published snapshot (what cached reads serve) at
// scrape time, so it costs nothing between scrapes and always agrees with
// /eureka/apps. Counting is incremental: applications are immutable values
// that a write replaces, so the counts of an application whose *view.App is
// the one seen at the previous scrape are reused, and a scrape walks only
// the instances of the applications that changed since.
//
// Cardinality: heureka_instances_by_status has one series per Eureka status
// (five, always present). heureka_application_instances has one series per
// (application, status) pair with at least one instance: at most five per
// application, typically one. A registry of N applications exports about N
// series; applications are few (tens to a few thousands) even when
// instances are many, which is why the per-application family is kept. An
// application that disappears, or a status no instance has any more, drops
// its series (it is not reported as 0).

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

var (
	instancesDesc = prometheus.NewDesc("heureka_instances",
		"Registered instances, as the read snapshot holds them.", nil, nil)
	applicationsDesc = prometheus.NewDesc("heureka_applications",
		"Registered applications (with at least one instance).", nil, nil)
	byStatusDesc = prometheus.NewDesc("heureka_instances_by_status",
		"Registered instances by Eureka status (UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN; always all five).", []string{"status"}, nil)
	byAppDesc = prometheus.NewDesc("heureka_application_instances",
		"Registered instances by application and status; one series per (application, status) pair that has instances.", []string{"application", "status"}, nil)
	versionDesc = prometheus.NewDesc("heureka_registry_version",
		"Version of the read snapshot; it increases with every change.", nil, nil)
	deltaDesc = prometheus.NewDesc("heureka_delta_instances",
		"Instances /eureka/apps/delta shows (each changed instance once).", nil, nil)
	deltaHeldDesc = prometheus.NewDesc("heureka_delta_held_bytes",
		"Estimated memory the delta holds beyond the registry, which --delta-max-bytes bounds.", nil, nil)
)

// statusCounts counts instances per status, in actors.AllStatuses order.
type statusCounts [len(actors.AllStatuses)]int

// appCounts is one application's counts, valid while its *view.App is app.
type appCounts struct {
	app    *view.App
	counts statusCounts
}

// instancesCollector reports the registry's contents from the snapshot.
type instancesCollector struct {
	snaps Snapshots

	mu    sync.Mutex           // serialises scrapes over the cache
	cache map[string]appCounts // guarded by mu: by application name
}

func newInstancesCollector(snaps Snapshots) *instancesCollector {
	return &instancesCollector{snaps: snaps, cache: map[string]appCounts{}}
}

// Describe implements prometheus.Collector.
func (c *instancesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- instancesDesc
	ch <- applicationsDesc
	ch <- byStatusDesc
	ch <- byAppDesc
	ch <- versionDesc
	ch <- deltaDesc
	ch <- deltaHeldDesc
}

// Collect implements prometheus.Collector.
func (c *instancesCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.snaps.Snapshot()
	c.mu.Lock()
	defer c.mu.Unlock()
	var total statusCounts
	seen := make(map[string]bool, len(c.cache))
	apps := 0
	snap.Apps(func(a *view.App) bool {
		name := a.Name()
		seen[name] = true
		ac, ok := c.cache[name]
		if !ok || ac.app != a {
			ac = appCounts{app: a}
			for in := range a.All() {
				ac.counts[statusIndex(in.Status)]++
			}
			c.cache[name] = ac
		}
		n := 0
		for i, k := range ac.counts {
			if k > 0 {
				total[i] += k
				n += k
				ch <- prometheus.MustNewConstMetric(byAppDesc, prometheus.GaugeValue, float64(k), name, string(actors.AllStatuses[i]))
			}
		}
		if n > 0 {
			apps++
		}
		return true
	})
	for name := range c.cache {
		if !seen[name] {
			delete(c.cache, name)
		}
	}
	for i, k := range total {
		ch <- prometheus.MustNewConstMetric(byStatusDesc, prometheus.GaugeValue, float64(k), string(actors.AllStatuses[i]))
	}
	ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(snap.Count()))
	ch <- prometheus.MustNewConstMetric(applicationsDesc, prometheus.GaugeValue, float64(apps))
	ch <- prometheus.MustNewConstMetric(versionDesc, prometheus.GaugeValue, float64(snap.Version()))
	ch <- prometheus.MustNewConstMetric(deltaDesc, prometheus.GaugeValue, float64(snap.DeltaLen()))
	ch <- prometheus.MustNewConstMetric(deltaHeldDesc, prometheus.GaugeValue, float64(snap.DeltaHeldBytes()))
}

// statusIndex is the index of st in actors.AllStatuses; anything else
// counts as UNKNOWN (the registry holds only the five).
func statusIndex(st actors.Status) int {
	for i, s := range actors.AllStatuses {
		if s == st {
			return i
		}
	}
	for i, s := range actors.AllStatuses {
		if s == actors.StatusUnknown {
			return i
		}
	}
	return 0
}
