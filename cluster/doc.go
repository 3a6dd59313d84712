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
// # Hooks for replication
//
// The replication layer plugs into the same memberlist through Config:
// Delegate (user messages, broadcasts, push/pull state for anti-entropy),
// Events and Alive, and sends point-to-point with SendReliable and
// SendBestEffort. Memberlist exposes the underlying *memberlist.Memberlist.
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
// What this package deliberately does not do: pick which node owns an
// application, or persist anything. Membership never blocks memberlist on a
// slow subscriber: events queue instead.
package cluster
