// Package actors owns all mutable registry state: the leases of every
// instance, Eureka's registration rules, eviction and self-preservation.
//
// # Ownership
//
// Each application is one protoactor-go actor (appActor), the only code that
// reads or writes that application's leases; no lock guards registry state.
// A front actor spawns an application's actor on first use and stops it when
// it holds neither leases nor tombstones. The Registry facade is the typed
// API: each method sends one command and waits for one reply on a pooled
// channel. Commands for a running application go straight to its actor; the
// front is involved only to spawn or stop one (see appEntry for the protocol
// that makes this safe).
//
// The logic lives in plain structs that tests drive without an actor system:
// appState (register, renew, cancel, status overrides, metadata, expiry,
// last-writer-wins replication), selfPreservation (Eureka's threshold
// arithmetic) and the eviction helpers evictionLimit and chooseEvictions.
// The actors are thin shells that decode a message, call the core and
// publish what it returns.
//
// # Events
//
// Every change is an Event (ADDED, MODIFIED or DELETED) carrying the new
// immutable *Instance and a Version: a hybrid logical clock reading plus the
// node name, which every node orders the same way. Events go synchronously to
// the configured Sinks before the command's caller is answered, so the read
// view (package view) shows a change to the very next read, and the cluster
// layer replicates it. Instances held by the registry are never modified
// after publication; a change makes a new one.
//
// # Timers
//
// Eviction and self-preservation are actors ticked by a self-re-arming
// time.AfterFunc (ticker.go), never by protoactor's scheduler (racy when
// cancelled) or ReceiveTimeout (an idle timer). The evictor runs every
// EvictionInterval: unless self-preservation disables expiry, it collects
// expired leases from every application it may evict, caps them at
// size − int(size × RenewalPercentThreshold) and evicts a random choice; the
// application actors re-check each lease, so a racing renewal wins. A lease
// counts as expired only once it has been silent for its whole duration
// after the later of its last renewal, the moment this node came to own its
// application, and the moment this node first held it (per-lease grace),
// unless the application's previous owner handed the lease over with its
// last renewal (handoff.go): then a lease after that renewal.
//
// Self-preservation (selfpreserve.go) weighs cluster-wide figures: every
// instance of the registry is expected to renew, and the renewals counted
// here are added to those the other members report (RenewalPeers). Its
// window slides every quarter, and it releases by itself after one
// RenewalThresholdUpdateInterval engaged, expecting the lowest count of the
// last window. For one such interval after a release it engages again only
// once the count has stayed at or below the threshold for a whole window:
// the summed count is noisy, and one low close must not undo a release.
// Likewise, once engaged it lets go only after two closes in a row above
// the threshold, so a falling count that crosses it twice does not flap it.
//
// How long protection lasts is one knob, RenewalThresholdUpdateInterval,
// and a documented choice against Eureka's never letting go (Eureka
// #1267): renewals low for longer than it are the new normal. Its price:
// when 70% of the clients fall silent for longer than the interval, the
// release evicts them (15% of the registry per run) while the 30% that
// renew are kept; the evictions of the leases a release gave up on do not
// lower the measured expectation. A collapse (fewer than one expected
// client in ten renewing) is never adopted: it is a network fault, and
// protection lasts until renewals come back, after which the release
// needs two closes above the threshold and the evictor runs at once. An
// expectation of 0 while leases exist is recounted at once (a threshold
// of 0 would keep expiry off whatever the renewals).
//
// Protection also ends when the fault does: an engagement remembers the
// fleet it protects (the clients expected when it began, and no more than
// renewed in the window before it: the expectation also counts the dead
// leases that wait for eviction), and two closes above percent of that
// fleet's renewals, with every alive member's reports reaching this node,
// release it the way the release rule does (recovery). The clients that
// register and die silently while it is engaged, which nothing evicts
// then, would otherwise keep the live share under the threshold after the
// fault and hold it until the recount. While a member is unheard its
// clients' renewals are missing from the count, so the fault is not over
// whatever the count says. The copies a heal's transfers bring after a
// recovery, of instances registered before it, are not expected again:
// their renewals are in the rate it adopted (or, if their copy ran out,
// they are silent).
//
// # Deletes
//
// A cancel or eviction leaves a tombstone aged by the deletion's HLC time;
// expired tombstones are neither stored on receipt nor sent. An
// application packs its older tombstones into sorted runs of about 25
// bytes each (tombstones.go), since churn keeps millions for the TTL. A live record
// older than TombstoneTTL that this node does not know, whose lease has run
// out by the sender's account, is refused and answered with an eviction
// tombstone (applyRecord explains why this makes resurrection impossible
// whatever the partition length). Staleness is judged on client evidence
// only (Record.LastRenewal, the last client registration or renewal):
// operators' writes renew the lease where they are made but do not move
// it. A tombstone is kept at least its application's longest lease plus a
// renewal window and an eviction interval (tombstoneTTLFor), and one
// stamped past the HLC tolerance ahead of this node's clock ages from its
// receipt plus the tolerance. HLC.Skew tells a node whose clock is behind
// most peers' by more than that tolerance, which refuses writes (httpapi).
// A peer's record that ValidateRecord refuses (a live record without an
// instance, a lease over MaxLeaseDurationSecs) is skipped, and the rest of
// its batch applied.
//
// A cancel is the client's latest word: its tombstone outranks a
// registration whose lastDirtyTimestamp is no newer than the cancelled
// record's, however late that registration arrives (a node frozen by
// SIGSTOP serves what its kernel queued when it wakes). A node that holds
// such a cancel refuses the registration, or a peer's copy of it, and
// answers the copy with a newer cancel tombstone (appState.cancelOutranks).
// A client that registers again in earnest sends a newer lastDirtyTimestamp
// (or none, and gets the receipt time); evictions never outrank, so a
// client still renewing after an eviction comes back on its next 404.
//
// # Cluster hooks
//
// An Ownership (the cluster's replicator) restricts eviction to the
// applications this node owns and says since when; RenewalPeers gives the
// other members' renewal counts; OnRenew lets the cluster forward client
// renewals to owners; ApplyRecords, Versions and RecordsNewerThan carry
// anti-entropy. Without them the registry is a single Eureka node.
//
// This package imports no other package of the project except
// internal/sabotage, whose switches are constant false unless built with
// the sabotage tag.
package actors
