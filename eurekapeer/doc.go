// Package eurekapeer replicates this node's client changes into legacy
// Netflix/Spring Cloud Eureka servers, the way a Java Eureka peer does, so
// that a team can run Heureka and Eureka side by side while it migrates
// (README "Migrating from Eureka").
//
// # What it owns
//
// A Sender holds one queue and one goroutine per configured Eureka peer
// (--eureka-peers). Data enters through Observe, a wrapper of the registry
// the HTTP API writes through: every register, renewal, cancel, status
// update, override delete and metadata update that one of this node's
// clients made successfully is noted in each peer's queue. Data leaves as
// Eureka's POST {peer}/peerreplication/batch (a JSON ReplicationList, with
// the x-netflix-discovery-replication: true header a Java peer sends), so
// the Java server applies each item as a replica and does not pass it on to
// its own peers.
//
// # Which changes are sent, and why there are no loops
//
// Only the changes this node's own clients made are sent: Observe ignores
// every write the API marks as replicated (a Eureka peer's batch or a
// request with the replication header), and changes that arrive from other
// Heureka members never pass through the API at all. So:
//
//   - a change a Eureka peer sent to Heureka is never echoed back to Eureka
//     peers (the Java server does not echo replicated changes either), and
//     nothing can circulate between the two clusters;
//   - each change reaches each Eureka peer once, from the Heureka node its
//     client talked to, instead of once per Heureka member.
//
// The price is that every Heureka node must be given the same
// --eureka-peers: a node without it keeps its clients' changes to the
// Heureka cluster. A client that fails over to another Heureka node is
// still covered: that node sends its renewals, and if the Eureka peer does
// not know the instance (404 on the heartbeat) it sends the registration,
// as a Java peer does.
//
// # Batching, coalescing, retries
//
// Items are coalesced per instance: any number of renewals of one instance
// between two sends become one Heartbeat, a registration absorbs the
// renewals before it, and a cancel absorbs everything before it. A queue is
// flushed every FlushInterval, or as soon as BatchSize instances are
// pending, in requests of at most BatchSize items. The instance itself
// (registration, lastDirtyTimestamp, status, override) is read from the
// registry when the batch is built, so a batch always carries the current
// state. A queue holds at most MaxPending instances; beyond that new
// instances are dropped and counted (a dropped registration comes back
// through the 404 of a later heartbeat, a dropped cancel ends as an
// eviction on the Eureka side).
//
// The replies are handled like a Java peer's: a 404 on a heartbeat or
// status update queues the registration; a 409 on a heartbeat carries the
// peer's newer copy, which is registered here as a replica (Java's
// syncInstancesIfTimestampDiffers); a 5xx item is retried; a failed
// request puts all its items back (newer changes win) and the peer is
// retried with exponential backoff up to MaxBackoff. Nothing here blocks a
// client request or the registry: noting a change is a map update under a
// mutex, and all I/O is on the peers' goroutines.
//
// Close sends what is pending once more, within its context, and stops
// every goroutine.
//
// # Dependencies
//
// It imports actors (the instances), eureka for the Eureka JSON instance
// document, so that the instance a Java peer receives is encoded exactly as
// Heureka serves it. It does not import httpapi: Observe wraps an
// actors.API, the interface httpapi.Registry is too.
// Package node assembles it; the command only fills in its Config.
//
// # What it does not do
//
// Evictions are not sent (Eureka peers never replicate evictions: each
// evicts on its own when the renewals stop). Nothing is read from the Eureka
// peers; the other direction is the Eureka server listing a Heureka node in
// its defaultZone, which the HTTP API's peer batch endpoint serves.
package eurekapeer
