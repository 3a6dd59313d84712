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
// encrypted and authenticated when Config.GossipKey or Config.GossipKeys is
// set; GossipKeys is a keyring for rotating the key without downtime (the
// procedure is on the field).
//
// # Replication
//
// The Replicator is the memberlist Delegate of a node. Each mechanism has
// its own file and design note:
//
//   - ownership.go: rendezvous hashing of application names over the alive
//     members; only the owner evicts, and a lease is evicted only after it
//     has been silent for a whole lease duration after this node came to
//     own the application (start or takeover): the grace is per lease.
//   - handoff.go: when an application moves and its old owner is alive to
//     say it (a member joins, or this node stops gracefully), the old owner
//     hands the new one its leases' ages, and handed leases get no grace;
//     renewals that reach a former owner go on to the new one.
//   - peerlink.go: one sending goroutine per peer with bounded queues per
//     message class (control, renewals, records, transfers). Every send
//     returns within Config.StreamTimeout, so a peer that stops reading or
//     dies mid-transfer slows only its own link; its transfers are abandoned
//     when it leaves.
//   - forward.go: client renewals are applied where they arrive and
//     forwarded, coalesced, to the owner: at most one message per renewal,
//     whatever the cluster size. The owner stamps a renewal when it
//     arrives, so one that came in more than two anti-entropy rounds ago
//     is dropped rather than delivered late.
//   - antientropy.go: per-application digests through push/pull, on
//     membership changes and periodically; for an application that differs
//     the asker lists its (id, version) pairs and the peer sends only the
//     records that are newer or missing, so a heal moves what differs. A
//     joining node is ready after its initial sync and serves no registry
//     reads before; an application nothing came of is asked again after a
//     retry time, and only its own applications' records count as progress.
//   - exchange.go: pulls (a digest asking for a reply, a sync request)
//     travel on a stream the asker opens on its peer session (stream.go)
//     and are answered on it, so
//     anti-entropy works whenever the asker can dial (an asymmetric
//     partition); a peer that does not answer that way is sent the old way.
//   - load.go: every member reports the client renewals it counted per
//     window, so self-preservation weighs cluster-wide figures
//     (actors.RenewalPeers). The reports also tell an owner when it may be
//     missing renewals: while an alive member is not heard, or a node it
//     thinks is gone still reports, it evicts nothing, and after a member's
//     gap it counts a lease's silence only from when it heard it again.
//   - receive.go: incoming messages are routed by class without holding
//     memberlist's goroutines for long.
//
// # Deletes stay deleted
//
// Every record carries a version (HLC time plus node name) that all nodes
// order the same way, and the lease's last renewal as the sender knows it.
// A cancel or an eviction leaves a tombstone, aged by its HLC deletion time,
// so it expires at the same moment everywhere; expired tombstones are
// neither stored on receipt nor transferred, so nodes cannot re-seed each
// other. A copy that outlives every tombstone (a side of a partition longer
// than the TTL, where self-preservation kept the instance) is recognised on
// arrival: older than the TTL, unknown to the receiver, and its lease run
// out by the sender's own account. The receiver refuses it and answers with
// an eviction tombstone newer than it, which deletes the copy on every node;
// a client that is in fact still renewing overrules that eviction where it
// renews, as it overrules any eviction, or registers again on its next 404.
// So no partition length brings a deleted instance back, and a copied lease
// is never born fresh. (A node in its initial sync takes every record: it
// holds nothing it could have deleted, and the others judge what it copied
// when they meet it.) The TTL must exceed the longest lease; it is
// --tombstone-ttl, 10 minutes by default.
//
// A copy's times (its last renewal, its version's HLC time) are the
// sender's. Every record batch carries the sender's wall clock when it
// was sent (wire.Records.SentAt), and the receiver shifts those times by
// the difference to its own clock at receipt: a copy's age is the same
// on both sides however far their clocks disagree (plus the transit), so
// a node whose clock runs ahead neither refuses live copies as stale nor
// lets copied leases expire early (BUG-17).
//
// # Fault injection
//
// The memnet package is an in-memory network of memberlist transports that tests and
// simulations use instead of UDP/TCP: partitions, packet loss and delay, and
// crashed hosts, and peers that accept streams but never read them (Stall),
// decided by a seeded random source, with per-node counters of
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
// ReconnectInterval), one watching memberlist's probes for suspicion (every
// ProbeInterval), and one delivering events; plus memberlist's own.
//
// The Replicator starts, all stopped by Stop: one goroutine per peer link,
// one applying received records, one handling received digests, and one
// each for renewal forwarding, anti-entropy, load reports and (while
// joining) the ready timeout. Lock order: linkMu before a link's mu;
// ownMu, renewMu, aeMu and loadMu are leaves.
//
// What this package deliberately does not do: persist anything (a
// restarted node refills from its peers). Membership never blocks memberlist on a
// slow subscriber: events queue instead.
package cluster
