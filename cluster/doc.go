// Package cluster makes heureka nodes one cluster: it finds and tracks the
// other nodes (membership, over hashicorp/memberlist's SWIM gossip) and
// carries node-to-node messages, encoded by package wire, between them.
//
// # Membership
//
// A Membership is created from a Config (DefaultConfig for production,
// DefaultLocalConfig for tests) and started with Start. It joins the seeds in
// Config.Join in the background, retrying with backoff until one answers, so
// nodes can start in any order and a node needs only one seed (or one DNS name
// listing them all). Joined reports when that has happened. Members lists
// every node seen, with its state (alive, suspect, dead, left); Subscribe
// delivers join, leave and update events in order, from one goroutine, never
// from inside memberlist's locks. Leave announces a graceful departure,
// Shutdown leaves and stops.
//
// Nodes advertise their wire.ProtocolVersion in memberlist's node meta and
// refuse peers that advertise another one, so a rolling upgrade that changes
// the wire format splits cleanly instead of misreading messages. Gossip is
// encrypted and authenticated when Config.GossipKey is set.
//
// # Replication
//
// The Replicator (replicate.go, whose design note says more) is the
// memberlist Delegate of a node. It fans every local registry change out to
// every member in per-peer batches, forwards client renewals, coalesced, to
// each application's owner (rendezvous hashing over the live members),
// decides which applications this node owns and may evict, and runs
// anti-entropy: per-application digests through push/pull, on membership
// changes and periodically, then transfers of the applications that differ.
// It implements actors.Sink and actors.Ownership.
//
// # Fault injection
//
// MemNetwork is an in-memory network of memberlist transports that tests and
// simulations use instead of UDP/TCP: partitions, packet loss and delay, and
// crashed hosts, decided by a seeded random source, with per-node counters of
// the bytes each node sends.
//
// # Logging
//
// Everything logs through Config.Logger (log/slog) with component=cluster
// and node=<NodeName>; memberlist's own log lines are bridged into it by
// LogWriter at their level, with lib=memberlist.
//
// # Concurrency
//
// All exported types are safe for concurrent use. Membership starts these
// goroutines, all stopped by Shutdown: one joining the seeds (until joined),
// one reconnecting to failed members and forgetting old ones (every
// ReconnectInterval), and one delivering events; plus memberlist's own.
//
// What this package deliberately does not do: persist anything (a
// restarted node refills from its peers). Membership never blocks memberlist on a
// slow subscriber: events queue instead.
package cluster
