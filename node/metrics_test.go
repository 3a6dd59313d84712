package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heureka/heureka/node"
)

// families is one parsed scrape.
type families map[string]*dto.MetricFamily

// scrape fetches /metrics from nd over HTTP and parses it with the
// Prometheus text parser.
func scrape(t *testing.T, nd *node.Node) families {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+nd.Addr()+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "the text parser rejects /metrics")
	return fams
}

// value returns the value of the series of family name whose labels
// include want (a counter, gauge or untyped value; a histogram's count).
func (f families) value(name string, want ...string) (float64, bool) {
	mf, ok := f[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, want...) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// must returns the value of a series that must exist.
func (f families) must(t *testing.T, name string, want ...string) float64 {
	t.Helper()
	v, ok := f.value(name, want...)
	require.True(t, ok, "no series %s%v in /metrics", name, want)
	return v
}

// labelValues returns the values label takes in family name.
func (f families) labelValues(name, label string) []string {
	var out []string
	for _, m := range f[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out = append(out, lp.GetValue())
			}
		}
	}
	sort.Strings(out)
	return out
}

// hasLabels reports whether m carries every name=value pair of want
// (given as "name", "value", ...).
func hasLabels(m *dto.Metric, want ...string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == want[i] && lp.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// checkTypes asserts that every family has the type its name promises:
// _total counters, _seconds histograms or gauges, the rest gauges (for
// heureka_*).
func checkTypes(t *testing.T, f families) {
	t.Helper()
	for name, mf := range f {
		if !strings.HasPrefix(name, "heureka_") {
			continue
		}
		assert.NotEmpty(t, mf.GetHelp(), "%s has no help", name)
		switch {
		case strings.HasSuffix(name, "_total"):
			assert.Equal(t, dto.MetricType_COUNTER, mf.GetType(), name)
		case name == "heureka_http_request_duration_seconds", name == "heureka_push_blocking_fanout_seconds",
			name == "heureka_push_stream_fanout_seconds":
			assert.Equal(t, dto.MetricType_HISTOGRAM, mf.GetType(), name)
		default:
			assert.Equal(t, dto.MetricType_GAUGE, mf.GetType(), name)
		}
	}
}

// leakCheck fails t if goroutines outlive the test (memberlist's Shutdown
// does not wait for a probe in flight: stragglers get a while).
func leakCheck(t *testing.T) {
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for err = goleak.Find(); err != nil && time.Now().Before(deadline); err = goleak.Find() {
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err, "goroutines left after the nodes stopped")
}

func TestMetricsSingleNode(t *testing.T) {
	t.Cleanup(func() { leakCheck(t) }) // registered first: runs after every other cleanup
	cfg := node.DefaultConfig("metrics-1")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.SelfRegister = true
	nd, err := node.Start(cfg)
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, nd.Stop(ctx))
		testClient.CloseIdleConnections()
	}()
	// The node's own instance is registered at start.
	require.Eventually(t, func() bool { return hasInstance(t, nd, node.SelfApp, "metrics-1") }, 5*time.Second, 10*time.Millisecond)

	u := nd.URL()
	for _, r := range []struct{ app, id string }{{"ORDERS", "o-1"}, {"ORDERS", "o-2"}, {"PAYMENTS", "p-1"}} {
		require.Equal(t, http.StatusNoContent, status(t, "POST", u+"/apps/"+r.app, registerBody(r.app, r.id, 30)))
	}
	require.Equal(t, http.StatusOK, status(t, "PUT", u+"/apps/ORDERS/o-1", ""))
	require.Equal(t, http.StatusOK, status(t, "PUT", u+"/apps/ORDERS/o-1", ""))
	require.Equal(t, http.StatusNotFound, status(t, "PUT", u+"/apps/ORDERS/nobody", ""))
	require.Equal(t, http.StatusOK, status(t, "PUT", u+"/apps/ORDERS/o-2/status?value=OUT_OF_SERVICE", ""))
	require.Equal(t, http.StatusOK, status(t, "DELETE", u+"/apps/PAYMENTS/p-1", ""))
	require.Equal(t, http.StatusOK, status(t, "GET", u+"/status", ""))

	f := scrape(t, nd)
	checkTypes(t, f)

	// client_golang's Go and process collectors.
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "go_gc_duration_seconds",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"} {
		assert.Contains(t, f, name)
	}

	// Registry events: three registrations by HTTP plus the node's own.
	assert.Equal(t, 4.0, f.must(t, "heureka_registrations_total"))
	assert.Equal(t, 2.0, f.must(t, "heureka_renewals_total"), "two successful renewals; the 404 is not one")
	assert.Equal(t, 1.0, f.must(t, "heureka_cancels_total"))
	assert.Equal(t, 0.0, f.must(t, "heureka_evictions_total", "cause", "evict"))
	assert.Equal(t, 0.0, f.must(t, "heureka_evictions_total", "cause", "refuse-stale"))
	assert.Equal(t, 4.0, f.must(t, "heureka_registry_changes_total", "cause", "register"))
	assert.Equal(t, 1.0, f.must(t, "heureka_registry_changes_total", "cause", "status-update"))
	assert.Equal(t, 1.0, f.must(t, "heureka_registry_changes_total", "cause", "cancel"))
	assert.Equal(t, 0.0, f.must(t, "heureka_registry_changes_total", "cause", "metadata"))
	assert.Len(t, f["heureka_registry_changes_total"].GetMetric(), 8, "every cause, present from the start")
	assert.Equal(t, 0.0, f.must(t, "heureka_registry_changes_total", "cause", "refuse-late"))
	for _, a := range []string{"added", "modified", "deleted"} {
		assert.Equal(t, 0.0, f.must(t, "heureka_replicated_changes_total", "action", a))
	}

	// Instances from the snapshot.
	assert.Equal(t, 3.0, f.must(t, "heureka_instances"))
	assert.Equal(t, 2.0, f.must(t, "heureka_applications"))
	assert.Equal(t, 2.0, f.must(t, "heureka_instances_by_status", "status", "UP"))
	assert.Equal(t, 1.0, f.must(t, "heureka_instances_by_status", "status", "OUT_OF_SERVICE"))
	assert.Equal(t, []string{"DOWN", "OUT_OF_SERVICE", "STARTING", "UNKNOWN", "UP"}, f.labelValues("heureka_instances_by_status", "status"))
	assert.Equal(t, 1.0, f.must(t, "heureka_application_instances", "application", "ORDERS", "status", "UP"))
	assert.Equal(t, 1.0, f.must(t, "heureka_application_instances", "application", "ORDERS", "status", "OUT_OF_SERVICE"))
	assert.Equal(t, 1.0, f.must(t, "heureka_application_instances", "application", node.SelfApp, "status", "UP"))
	assert.Len(t, f["heureka_application_instances"].GetMetric(), 3, "no series for a cancelled application or an empty status")
	assert.Positive(t, f.must(t, "heureka_registry_version"))
	assert.Positive(t, f.must(t, "heureka_delta_instances"), "the changes above are in the delta")
	assert.Greater(t, f.must(t, "heureka_delta_held_bytes"), 100.0, "the cancelled instance is held packed")

	// Self-preservation.
	assert.Equal(t, 1.0, f.must(t, "heureka_self_preservation_enabled"))
	assert.GreaterOrEqual(t, f.must(t, "heureka_renews_expected_clients"), 1.0)
	assert.GreaterOrEqual(t, f.must(t, "heureka_renews_threshold"), 0.0)
	assert.Equal(t, 60.0, f.must(t, "heureka_renewal_window_seconds"))
	assert.Equal(t, 1.0, f.must(t, "heureka_renews_members"))
	for _, name := range []string{"heureka_renews_last_window", "heureka_renews_local_last_window", "heureka_renews_peers_last_window",
		"heureka_self_preservation_engaged", "heureka_self_preservation_engaged_since_timestamp_seconds", "heureka_lease_expiration_enabled"} {
		assert.GreaterOrEqual(t, f.must(t, name), 0.0, name)
	}
	engaged, expiring := f.must(t, "heureka_self_preservation_engaged"), f.must(t, "heureka_lease_expiration_enabled")
	assert.Equal(t, 1.0, engaged+expiring, "enabled self-preservation is either engaged or lets leases expire")

	// A single node is a cluster of one that sends nothing.
	assert.Equal(t, 1.0, f.must(t, "heureka_cluster_members", "state", "alive"))
	for _, s := range []string{"suspect", "dead", "left"} {
		assert.Equal(t, 0.0, f.must(t, "heureka_cluster_members", "state", s))
	}
	assert.Equal(t, 1.0, f.must(t, "heureka_cluster_ready"))
	assert.Equal(t, 1.0, f.must(t, "heureka_cluster_owned_applications_ratio"))
	assert.Equal(t, 0.0, f.must(t, "heureka_replication_peers"))
	for _, name := range []string{"heureka_replication_messages_sent_total", "heureka_replication_sent_bytes_total",
		"heureka_replication_record_batches_sent_total", "heureka_replication_renewal_messages_sent_total",
		"heureka_replication_renewals_forwarded_total", "heureka_replication_send_errors_total",
		"heureka_replication_dropped_records_total", "heureka_antientropy_digests_sent_total",
		"heureka_antientropy_sync_requests_sent_total", "heureka_antientropy_records_transferred_total",
		"heureka_antientropy_syncs_in_flight", "heureka_antientropy_initial_sync_pending_applications"} {
		assert.Equal(t, 0.0, f.must(t, name), name)
	}

	// HTTP: one histogram series per route and code; the status page and
	// status overrides have distinct routes.
	assert.Equal(t, 3.0, f.must(t, "heureka_http_request_duration_seconds", "route", "register", "code", "204"))
	assert.Equal(t, 2.0, f.must(t, "heureka_http_request_duration_seconds", "route", "renew", "code", "200"))
	assert.Equal(t, 1.0, f.must(t, "heureka_http_request_duration_seconds", "route", "renew", "code", "404"))
	assert.Equal(t, 1.0, f.must(t, "heureka_http_request_duration_seconds", "route", "statusoverride", "code", "200"))
	assert.Equal(t, 1.0, f.must(t, "heureka_http_request_duration_seconds", "route", "cancel", "code", "200"))
	assert.Equal(t, 1.0, f.must(t, "heureka_http_request_duration_seconds", "route", "status", "code", "200"))
	assert.Equal(t, 3.0, f.must(t, "heureka_http_requests_total", "route", "register"))
	assert.Equal(t, 1.0, f.must(t, "heureka_http_requests_total", "route", "statusoverride"))
	assert.Equal(t, 1.0, f.must(t, "heureka_http_requests_total", "route", "status"))
	assert.Equal(t, 0.0, f.must(t, "heureka_http_requests_in_flight"), "/metrics itself is not counted")
	for _, m := range f["heureka_http_request_duration_seconds"].GetMetric() {
		h := m.GetHistogram()
		assert.Positive(t, h.GetSampleSum(), "a request takes some time")
		assert.Equal(t, h.GetSampleCount(), h.GetBucket()[len(h.GetBucket())-1].GetCumulativeCount(), "the last bucket (30 s) holds every test request")
	}
}

func TestMetricsTwoNodeCluster(t *testing.T) {
	t.Cleanup(func() { leakCheck(t) }) // registered first: runs after every other cleanup
	noSP := func(c *node.Config) {
		// Two instances cannot hold self-preservation's threshold: let the
		// owner evict, to see evictions counted.
		c.Registry.SelfPreservation = false
		// Members report their renewal counts every quarter window.
		c.Replication.LoadInterval = c.Registry.RenewalWindow / 4
	}
	// n0 starts alone and holds data before n1 joins, so that n1's initial
	// sync moves records by anti-entropy transfer.
	tc := startCluster(t, 1, true, noSP)
	n0 := tc.nodes[0]
	require.Equal(t, http.StatusNoContent, status(t, "POST", n0.URL()+"/apps/orders", registerBody("ORDERS", "o-1", 30)))
	cfg := clusterNodeConfig("n1", tc.net, []string{"n0"})
	noSP(&cfg)
	n1, err := node.Start(cfg)
	require.NoError(t, err)
	tc.nodes, tc.names = append(tc.nodes, n1), append(tc.names, "n1")
	tc.waitMembers(2)
	require.Eventually(t, n1.Ready, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return hasInstance(t, n1, "ORDERS", "o-1") }, 10*time.Second, 10*time.Millisecond)

	// A change made on n1 fans out to n0; a renewal sent to the node that
	// does not own ORDERS is forwarded to its owner.
	require.Equal(t, http.StatusNoContent, status(t, "POST", n1.URL()+"/apps/orders", registerBody("ORDERS", "o-2", 30)))
	require.Eventually(t, func() bool { return hasInstance(t, n0, "ORDERS", "o-2") }, 10*time.Second, 10*time.Millisecond)
	byName := map[string]*node.Node{"n0": n0, "n1": n1}
	owner := byName[n0.Replicator().OwnerOf("ORDERS")]
	other := n1
	if owner == n1 {
		other = n0
	}
	require.Equal(t, http.StatusOK, status(t, "PUT", other.URL()+"/apps/ORDERS/o-1", ""))
	// A 1 s lease that nobody renews: its owner evicts it.
	require.Equal(t, http.StatusNoContent, status(t, "POST", n0.URL()+"/apps/shortlived", registerBody("SHORTLIVED", "s-1", 1)))

	require.Eventually(t, func() bool {
		f := scrape(t, other)
		fwd, _ := f.value("heureka_replication_renewals_forwarded_total")
		return fwd >= 1
	}, 10*time.Second, 50*time.Millisecond, "the renewal is forwarded to the owner")
	shortOwner := byName[n0.Replicator().OwnerOf("SHORTLIVED")]
	shortOther := n1
	if shortOwner == n1 {
		shortOther = n0
	}
	require.Eventually(t, func() bool {
		local, _ := scrape(t, shortOwner).value("heureka_evictions_total", "cause", "evict")
		repl, _ := scrape(t, shortOther).value("heureka_replicated_changes_total", "action", "deleted")
		return local == 1 && repl == 1
	}, 20*time.Second, 100*time.Millisecond, "the owner evicts and the other member applies the eviction")
	require.Eventually(t, func() bool {
		for _, nd := range tc.nodes {
			if v, _ := scrape(t, nd).value("heureka_renews_members"); v != 2 {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "self-preservation counts both members")

	for i, nd := range tc.nodes {
		peer := tc.names[1-i]
		t.Run(tc.names[i], func(t *testing.T) {
			f := scrape(t, nd)
			checkTypes(t, f)
			assert.Equal(t, 2.0, f.must(t, "heureka_cluster_members", "state", "alive"))
			assert.Equal(t, 0.0, f.must(t, "heureka_cluster_members", "state", "dead"))
			assert.Equal(t, 1.0, f.must(t, "heureka_cluster_ready"))
			share := f.must(t, "heureka_cluster_owned_applications_ratio")
			assert.True(t, share >= 0 && share <= 1, "owned share %v", share)
			assert.Equal(t, 1.0, f.must(t, "heureka_replication_peers"))
			for _, class := range []string{"control", "renewals", "records", "transfers"} {
				assert.GreaterOrEqual(t, f.must(t, "heureka_replication_queue_depth", "peer", peer, "class", class), 0.0)
			}
			assert.GreaterOrEqual(t, f.must(t, "heureka_replication_lag_seconds", "peer", peer), 0.0)
			assert.Positive(t, f.must(t, "heureka_replication_messages_sent_total"))
			assert.Positive(t, f.must(t, "heureka_replication_sent_bytes_total"))
			assert.Positive(t, f.must(t, "heureka_antientropy_digests_sent_total"))
			assert.Equal(t, 0.0, f.must(t, "heureka_antientropy_initial_sync_pending_applications"))
			for _, name := range []string{"heureka_replication_send_errors_total", "heureka_replication_dropped_records_total",
				"heureka_antientropy_syncs_in_flight"} {
				assert.GreaterOrEqual(t, f.must(t, name), 0.0, name)
			}
			assert.Equal(t, 1.0, f.must(t, "heureka_applications"), "SHORTLIVED was evicted")
			assert.Equal(t, 2.0, f.must(t, "heureka_application_instances", "application", "ORDERS", "status", "UP"))
			assert.Equal(t, 2.0, f.must(t, "heureka_instances_by_status", "status", "UP"))
			assert.Equal(t, 2.0, f.must(t, "heureka_renews_members"))
		})
	}
	f0, f1 := scrape(t, n0), scrape(t, n1)
	// Each registration counts where it arrived; the other node counts
	// the copy it applied.
	assert.Equal(t, 2.0, f0.must(t, "heureka_registrations_total"), "o-1 and s-1 were registered on n0")
	assert.Equal(t, 1.0, f0.must(t, "heureka_replicated_changes_total", "action", "added"), "o-2 came from n1")
	assert.Equal(t, 1.0, f1.must(t, "heureka_registrations_total"), "o-2 was registered on n1")
	assert.Equal(t, 2.0, f1.must(t, "heureka_replicated_changes_total", "action", "added"), "o-1 (initial sync) and s-1 came from n0")
	assert.Positive(t, f0.must(t, "heureka_replication_record_batches_sent_total"), "n0 fanned out s-1")
	assert.Positive(t, f1.must(t, "heureka_replication_record_batches_sent_total"), "n1 fanned out o-2")
	assert.Positive(t, f0.must(t, "heureka_antientropy_records_transferred_total"), "n0 sent o-1 to n1's initial sync")
	assert.Positive(t, f1.must(t, "heureka_antientropy_sync_requests_sent_total"), "n1 asked n0 for ORDERS")
	fo := scrape(t, other)
	assert.Equal(t, 1.0, fo.must(t, "heureka_renewals_total"), "the client renewal counts where it arrived")
	assert.Positive(t, fo.must(t, "heureka_replication_renewal_messages_sent_total"))
	tc.stop()
}

func TestMetricsReplicationLagWhilePeerStalls(t *testing.T) {
	t.Cleanup(func() { leakCheck(t) })
	tc := startCluster(t, 2, true, func(c *node.Config) { c.Cluster.StreamTimeout = 2 * time.Second })
	n0 := tc.nodes[0]
	require.Eventually(t, func() bool { return n0.Ready() && tc.nodes[1].Ready() }, 10*time.Second, 10*time.Millisecond)
	// n1 accepts streams but never reads them: n0's link to it blocks on
	// its first send, and later changes wait in its queue.
	tc.net.Stall("n1")
	for i := range 5 {
		require.Equal(t, http.StatusNoContent, status(t, "POST", n0.URL()+"/apps/lag", registerBody("LAG", fmt.Sprintf("l-%d", i), 30)))
		time.Sleep(50 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		f := scrape(t, n0)
		depth, _ := f.value("heureka_replication_queue_depth", "peer", "n1", "class", "records")
		lag, _ := f.value("heureka_replication_lag_seconds", "peer", "n1")
		return depth >= 1 && lag >= 0.2
	}, 5*time.Second, 20*time.Millisecond, "changes wait for the stalled peer, and their age shows")
	require.Eventually(t, func() bool {
		v, _ := scrape(t, n0).value("heureka_replication_send_errors_total")
		return v >= 1
	}, 10*time.Second, 50*time.Millisecond, "the blocked send times out")
	tc.net.Unstall("n1")
	require.Eventually(t, func() bool {
		f := scrape(t, n0)
		depth, _ := f.value("heureka_replication_queue_depth", "peer", "n1", "class", "records")
		lag, _ := f.value("heureka_replication_lag_seconds", "peer", "n1")
		return depth == 0 && lag == 0
	}, 15*time.Second, 50*time.Millisecond, "the queue drains once the peer reads again")
	require.Eventually(t, func() bool { return len(instanceIDs(t, tc.nodes[1], "LAG")) == 5 }, 15*time.Second, 50*time.Millisecond)
	tc.stop()
}

// instanceIDs returns the instance ids of app that nd lists.
func instanceIDs(t *testing.T, nd *node.Node, app string) []string {
	code, body := do(t, "GET", nd.URL()+"/apps/"+app, "")
	if code != http.StatusOK {
		return nil
	}
	var ids []string
	for _, part := range strings.Split(body, `"instanceId":"`)[1:] {
		ids = append(ids, part[:strings.Index(part, `"`)])
	}
	return ids
}
