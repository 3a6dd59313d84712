package httpapi

// Membership and replication metrics
//
// ClusterCollector reads the cluster's figures at scrape time through the
// small ClusterStats interface (the node adapts cluster.Membership and
// cluster.Replicator to it, so this package stays free of the cluster
// package). The counters are the replicator's own cumulative counts,
// exported as they are.
//
// Cardinality: members by state has four series; the per-peer families
// (queue depth by class, lag) have one series per other alive member (four
// classes each), so they grow with the cluster size and nothing else.

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ClusterStats is what ClusterCollector reads at every scrape. Its methods
// must not block.
type ClusterStats interface {
	// MemberStates counts the members this node knows (itself included)
	// by state: "alive", "suspect", "dead", "left".
	MemberStates() map[string]int
	// Replication returns the replication figures.
	Replication() ReplicationStats
}

// ReplicationStats are a node's replication figures. The counters are
// cumulative since the node started.
type ReplicationStats struct {
	// Ready is true once the initial sync is done (as /readyz).
	Ready bool
	// OwnedShare is the share of applications this node owns, 0 to 1.
	OwnedShare float64

	// MessagesSent and BytesSent count every message sent to peers.
	MessagesSent, BytesSent uint64
	// RecordBatches counts the messages of replicated registry changes.
	RecordBatches uint64
	// RenewalMessages counts renewal forwarding messages; Renewals the
	// renewals they carried (after coalescing).
	RenewalMessages, Renewals uint64
	// Digests and SyncRequests count the anti-entropy messages sent.
	Digests, SyncRequests uint64
	// TransferRecords counts the records anti-entropy transfers sent.
	TransferRecords uint64
	// Dropped counts the records dropped from full peer queues.
	Dropped uint64
	// SendErrors counts failed sends.
	SendErrors uint64

	// SyncsInFlight is the number of transfers asked of peers, not yet
	// done; InitialSyncPending the applications the initial sync waits for.
	SyncsInFlight, InitialSyncPending int

	// Peers has one entry per other alive member.
	Peers []PeerStats

	// JoinRefused is why the seeds refuse this node ("protocol", "key",
	// "label", "other"), "" while they do not.
	JoinRefused string
	// ServingAlone is true when the node is ready without having joined
	// anyone (no seeds, or none reachable within the ready timeout).
	ServingAlone bool
}

// joinRefusedReasons are the values of heureka_join_refused's reason
// label, all always reported.
var joinRefusedReasons = [...]string{"protocol", "key", "label", "other"}

// PeerStats is the link to one peer.
type PeerStats struct {
	// Name is the member's name.
	Name string
	// Queued is the number of items waiting per message class.
	Control, Renewals, Records, Transfers int
	// Lag is the age of the oldest queued record (0 when none waits).
	Lag time.Duration
}

// memberStates are the values of the state label, all always reported.
var memberStates = [...]string{"alive", "suspect", "dead", "left"}

var (
	membersDesc = prometheus.NewDesc("heureka_cluster_members",
		"Cluster members this node knows, itself included, by state (alive, suspect, dead, left).", []string{"state"}, nil)
	readyDesc = prometheus.NewDesc("heureka_cluster_ready",
		"1 once the node's initial cluster sync is done (it then serves registry reads and /readyz answers 200).", nil, nil)
	ownedDesc = prometheus.NewDesc("heureka_cluster_owned_applications_ratio",
		"Share of the applications this node owns (evicts), 0 to 1.", nil, nil)
	peersDesc = prometheus.NewDesc("heureka_replication_peers",
		"Peers this node replicates to (one sending link each).", nil, nil)
	msgsDesc = prometheus.NewDesc("heureka_replication_messages_sent_total",
		"Messages sent to peers, of every kind, on this node's streams and in answer to their pulls.", nil, nil)
	bytesDesc = prometheus.NewDesc("heureka_replication_sent_bytes_total",
		"Bytes of the messages sent to peers.", nil, nil)
	batchesDesc = prometheus.NewDesc("heureka_replication_record_batches_sent_total",
		"Messages of registry changes (batches of up to MaxBatch records) sent to peers.", nil, nil)
	renewMsgsDesc = prometheus.NewDesc("heureka_replication_renewal_messages_sent_total",
		"Renewal forwarding messages sent to application owners.", nil, nil)
	renewalsDesc = prometheus.NewDesc("heureka_replication_renewals_forwarded_total",
		"Client renewals forwarded to application owners, after coalescing.", nil, nil)
	errorsDesc = prometheus.NewDesc("heureka_replication_send_errors_total",
		"Sends to peers that failed (anti-entropy repairs what they carried).", nil, nil)
	droppedDesc = prometheus.NewDesc("heureka_replication_dropped_records_total",
		"Queued records dropped because a peer's queue was full (anti-entropy repairs them).", nil, nil)
	digestsDesc = prometheus.NewDesc("heureka_antientropy_digests_sent_total",
		"Anti-entropy digests sent to peers.", nil, nil)
	syncsDesc = prometheus.NewDesc("heureka_antientropy_sync_requests_sent_total",
		"Anti-entropy sync requests sent (each asks a peer for the records of applications whose digests differ).", nil, nil)
	transferDesc = prometheus.NewDesc("heureka_antientropy_records_transferred_total",
		"Records sent to peers by anti-entropy transfers.", nil, nil)
	inflightDesc = prometheus.NewDesc("heureka_antientropy_syncs_in_flight",
		"Transfers this node asked of peers that are not done yet.", nil, nil)
	pendingDesc = prometheus.NewDesc("heureka_antientropy_initial_sync_pending_applications",
		"Applications the initial sync still waits for (0 once ready).", nil, nil)
	queueDesc = prometheus.NewDesc("heureka_replication_queue_depth",
		"Items waiting to be sent to a peer, by peer and class (control: digests, sync requests, load reports; renewals: coalesced renewals; records: registry changes; transfers: anti-entropy answers).", []string{"peer", "class"}, nil)
	joinRefusedDesc = prometheus.NewDesc("heureka_join_refused",
		"1 while the seeds answer but refuse this node, by reason (protocol: another wire protocol; key: another gossip key; label: another memberlist label; other); the node stays unready meanwhile.", []string{"reason"}, nil)
	aloneDesc = prometheus.NewDesc("heureka_cluster_serving_alone",
		"1 while the node is ready without having joined anyone (no seeds, or none reachable within the ready timeout) and sees no other member.", nil, nil)
	lagDesc = prometheus.NewDesc("heureka_replication_lag_seconds",
		"Age of the oldest registry change queued for a peer and not sent yet; 0 when its queue is empty.", []string{"peer"}, nil)
)

// ClusterCollector is the Prometheus collector of membership and
// replication figures.
type ClusterCollector struct{ stats ClusterStats }

// NewClusterCollector returns a collector that reads stats at each scrape.
func NewClusterCollector(stats ClusterStats) *ClusterCollector {
	return &ClusterCollector{stats: stats}
}

// Describe implements prometheus.Collector.
func (c *ClusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{membersDesc, readyDesc, ownedDesc, peersDesc, msgsDesc, bytesDesc,
		batchesDesc, renewMsgsDesc, renewalsDesc, errorsDesc, droppedDesc, digestsDesc, syncsDesc, transferDesc,
		inflightDesc, pendingDesc, queueDesc, lagDesc, joinRefusedDesc, aloneDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ClusterCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	states := c.stats.MemberStates()
	for _, s := range memberStates {
		gauge(membersDesc, float64(states[s]), s)
	}
	r := c.stats.Replication()
	gauge(readyDesc, boolValue(r.Ready))
	gauge(ownedDesc, r.OwnedShare)
	gauge(peersDesc, float64(len(r.Peers)))
	counter(msgsDesc, r.MessagesSent)
	counter(bytesDesc, r.BytesSent)
	counter(batchesDesc, r.RecordBatches)
	counter(renewMsgsDesc, r.RenewalMessages)
	counter(renewalsDesc, r.Renewals)
	counter(errorsDesc, r.SendErrors)
	counter(droppedDesc, r.Dropped)
	counter(digestsDesc, r.Digests)
	counter(syncsDesc, r.SyncRequests)
	counter(transferDesc, r.TransferRecords)
	gauge(inflightDesc, float64(r.SyncsInFlight))
	gauge(pendingDesc, float64(r.InitialSyncPending))
	for _, reason := range joinRefusedReasons {
		gauge(joinRefusedDesc, boolValue(r.JoinRefused == reason), reason)
	}
	gauge(aloneDesc, boolValue(r.ServingAlone))
	for _, p := range r.Peers {
		gauge(queueDesc, float64(p.Control), p.Name, "control")
		gauge(queueDesc, float64(p.Renewals), p.Name, "renewals")
		gauge(queueDesc, float64(p.Records), p.Name, "records")
		gauge(queueDesc, float64(p.Transfers), p.Name, "transfers")
		gauge(lagDesc, max(p.Lag, 0).Seconds(), p.Name)
	}
}
