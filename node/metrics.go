package node

// Metrics wiring: every node has its own Prometheus registry (Node.Metrics),
// served at /metrics, holding client_golang's Go and process collectors, the
// API's metrics (httpapi), the registry's event counters
// (httpapi.EventMetrics, a registry sink) and the membership and
// replication figures (httpapi.ClusterCollector over clusterStats below).
// The families are listed in deploy/METRICS.md.

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/httpapi"
)

// newMetricsRegistry returns a registry with the Go and process collectors.
func newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// clusterStats adapts the node's membership and replicator to
// httpapi.ClusterStats. A single node (no cluster) is a cluster of one that
// sends nothing.
type clusterStats struct{ n *Node }

// MemberStates implements httpapi.ClusterStats.
func (c clusterStats) MemberStates() map[string]int {
	if c.n.members == nil {
		return map[string]int{string(cluster.StateAlive): 1}
	}
	out := map[string]int{}
	for _, m := range c.n.members.Members() {
		out[string(m.State)]++
	}
	return out
}

// Replication implements httpapi.ClusterStats.
func (c clusterStats) Replication() httpapi.ReplicationStats {
	r := c.n.replicator
	if r == nil {
		return httpapi.ReplicationStats{Ready: true, OwnedShare: 1}
	}
	w := r.Stats()
	msgs, bytes := w.Sent()
	ss := r.SyncState()
	out := httpapi.ReplicationStats{
		Ready:        r.Ready(),
		OwnedShare:   r.OwnedShare()[c.n.cfg.Name],
		MessagesSent: msgs, BytesSent: bytes,
		RecordBatches: w.RecordMessages, RenewalMessages: w.RenewalMessages, Renewals: w.Renewals,
		Digests: w.DigestMessages, SyncRequests: w.SyncMessages, TransferRecords: w.TransferRecords,
		Dropped: w.Dropped, SendErrors: w.SendErrors,
		SyncsInFlight: ss.InFlight, InitialSyncPending: ss.InitialPending,
	}
	rd := r.Readiness()
	out.ServingAlone = rd.Ready && rd.Alone
	if !rd.Ready && rd.Join.State == cluster.JoinRefused {
		out.JoinRefused = string(rd.Join.Cause)
	}
	now := time.Now()
	if clk := c.n.cfg.Registry.Clock; clk != nil {
		now = clk.Now() // the clock the records' HLC times come from
	}
	for _, q := range r.PeerQueues() {
		p := httpapi.PeerStats{Name: q.Peer, Control: q.Control, Renewals: q.Renewals, Records: q.Records, Transfers: q.Transfers}
		if !q.OldestRecord.IsZero() {
			p.Lag = max(now.Sub(q.OldestRecord), 0)
		}
		out.Peers = append(out.Peers, p)
	}
	return out
}

// Metrics returns the node's Prometheus registry, the one /metrics serves.
func (n *Node) Metrics() *prometheus.Registry { return n.metrics }

// chainOnRenew returns a renewal hook that calls every non-nil hook in turn.
func chainOnRenew(hooks ...func(app, id string)) func(app, id string) {
	var fns []func(app, id string)
	for _, h := range hooks {
		if h != nil {
			fns = append(fns, h)
		}
	}
	return func(app, id string) {
		for _, f := range fns {
			f(app, id)
		}
	}
}
