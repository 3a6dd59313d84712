package httpapi

// Push metrics
//
// The instruments of blocking reads and the change stream, registered on
// Config.Metrics with every label value present from the start (at 0), so
// that a dashboard sees the families before the first watcher.

import "github.com/prometheus/client_golang/prometheus"

// pushMetrics are the push side's Prometheus instruments.
type pushMetrics struct {
	// blockingWaiting and streamsOpen are the two kinds of
	// heureka_push_watchers.
	blockingWaiting, streamsOpen prometheus.Gauge
	// changed and notModified are the outcomes of blocking reads that
	// waited.
	changed, notModified prometheus.Counter
	events, snapshots    prometheus.Counter
	// cutBacklog counts streams whose backlog overflowed (dropped to a
	// snapshot), cutWrite those closed on a write timeout.
	cutBacklog, cutWrite prometheus.Counter
	// nextDirect and nextHandedBack count the requests that came on
	// answered parked connections: served there (watch_direct.go) or
	// handed back to net/http (watch_handoff.go).
	nextDirect, nextHandedBack prometheus.Counter
	// fanout times each change's answers to the blocking reads it ends,
	// streamFanout each stream event's way to the streams it is queued for.
	fanout, streamFanout prometheus.Observer
}

func newPushMetrics(reg *prometheus.Registry) *pushMetrics {
	watchers := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "heureka_push_watchers",
		Help: "Clients waiting for a change now, by kind: blocking (a read held by If-None-Match and wait) or stream (an open /stream connection).",
	}, []string{"kind"})
	blocking := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "heureka_push_blocking_reads_total",
		Help: "Blocking reads that waited, by result: changed (answered with the new document) or not_modified (304 when the wait ended).",
	}, []string{"result"})
	events := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "heureka_push_events_sent_total",
		Help: "Delta events written to stream clients (one per client and event).",
	})
	snapshots := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "heureka_push_snapshots_sent_total",
		Help: "Snapshot events written to stream clients: on connect, on a Last-Event-ID this node cannot replay, after a backlog overflow.",
	})
	cut := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "heureka_push_slow_watchers_cut_total",
		Help: "Stream clients cut for not keeping up, by reason: backlog (queued events dropped, a snapshot sent instead) or write_timeout (connection closed).",
	}, []string{"reason"})
	next := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "heureka_push_parked_next_requests_total",
		Help: "Requests that came on a connection after its parked blocking read was answered, by how they were served: direct (another blocking read, served on the connection) or handed_back (given back to the HTTP server).",
	}, []string{"how"})
	fanout := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "heureka_push_blocking_fanout_seconds",
		Help: "How long one change took to answer every blocking read it ended on this node: from the change seen to the last answer handed to the kernel (or, for a client that does not take it at once, to its connection's own goroutine).",
		// 0.5 ms to about 4 s, each bucket 1.25 times the one before.
		Buckets: prometheus.ExponentialBucketsRange(0.0005, 4, 41),
	})
	streamFanout := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "heureka_push_stream_fanout_seconds",
		Help:    "How long one stream event took to reach every stream it was queued for on this node: from the hub queueing it to the last of those streams writing it to the kernel (or letting it go: cut to a snapshot, closed).",
		Buckets: prometheus.ExponentialBucketsRange(0.0005, 4, 41),
	})
	reg.MustRegister(watchers, blocking, events, snapshots, cut, next, fanout, streamFanout)
	return &pushMetrics{
		blockingWaiting: watchers.WithLabelValues("blocking"),
		streamsOpen:     watchers.WithLabelValues("stream"),
		changed:         blocking.WithLabelValues("changed"),
		notModified:     blocking.WithLabelValues("not_modified"),
		events:          events,
		snapshots:       snapshots,
		cutBacklog:      cut.WithLabelValues("backlog"),
		cutWrite:        cut.WithLabelValues("write_timeout"),
		nextDirect:      next.WithLabelValues("direct"),
		nextHandedBack:  next.WithLabelValues("handed_back"),
		fanout:          fanout,
		streamFanout:    streamFanout,
	}
}
