// Package sabotage holds the switches that put known bugs back on purpose,
// so that the simulations can show that their invariant checkers catch each
// one (see `make sabotage` and simulations/README.md).
//
// In a normal build On is a constant false: the compiler removes every
// sabotaged branch, and no flag, variable or environment can turn one on.
// Only a build with the `sabotage` tag (`go test -tags sabotage`,
// `go run -tags sabotage`) reads the switches, from Set or from the
// HEUREKA_SABOTAGE environment variable (a comma-separated list of names).
package sabotage

// Switch names one bug that can be put back.
type Switch string

// The switches. Each names the bug it restores; the comment says where.
const (
	// ReplicaOverrulesEviction lets a freshly replicated copy overrule the
	// owner's eviction, as BUG-1 did (actors applyRecord).
	ReplicaOverrulesEviction Switch = "replica-overrules-eviction"
	// TombstoneReceiptAge ages a received tombstone by its local receipt
	// time instead of the deletion's HLC time (actors applyRecord).
	TombstoneReceiptAge Switch = "tombstone-receipt-age"
	// TombstonesDropped keeps no tombstones at all (actors remove and
	// applyRecord).
	TombstonesDropped Switch = "tombstones-dropped"
	// CopiedLeaseFresh gives a replicated copy a fresh lease (lastUpdate =
	// now) instead of the sender's last renewal (actors applyRecord).
	CopiedLeaseFresh Switch = "copied-lease-fresh"
	// StaleRecordsAccepted installs a live record older than the tombstone
	// TTL that this node does not know, whether or not its lease is alive
	// (actors applyRecord).
	StaleRecordsAccepted Switch = "stale-records-accepted"
	// EvictWithoutOwnership lets every node evict every application
	// (cluster MayEvict).
	EvictWithoutOwnership Switch = "evict-without-ownership"
	// NoTakeoverGrace lets a node evict what it just started or took over
	// owning at once (cluster MayEvict / actors grace).
	NoTakeoverGrace Switch = "no-takeover-grace"
	// NoAntiEntropy turns digests and sync transfers off (cluster).
	NoAntiEntropy Switch = "no-anti-entropy"
	// SelfPreservationPerOwner makes each node weigh only the renewals and
	// instances of the applications it owns (actors self-preservation).
	SelfPreservationPerOwner Switch = "self-preservation-per-owner"
	// LateRegistrationOutranksCancel lets a registration whose
	// lastDirtyTimestamp is no newer than the cancelled record's outrank
	// the cancel's tombstone, as it did before the late-registration fix
	// (actors tryRegister and applyRecord).
	LateRegistrationOutranksCancel Switch = "late-registration-outranks-cancel"
	// ReleaseWithoutHysteresis removes self-preservation's hysteresis, as
	// before it: the release takes the last window's count as the
	// expectation and re-engages on the next low close, and one close
	// above the threshold lets go (actors selfPreservation).
	ReleaseWithoutHysteresis Switch = "release-without-hysteresis"
	// ReleaseOnCollapse lets self-preservation's release rule adopt a
	// zero or near-zero measured rate (a total renewal outage) as the
	// expectation, and leaves an expectation of 0 while leases exist
	// until the next recount, as before (actors selfPreservation).
	ReleaseOnCollapse Switch = "release-on-collapse"
	// ReleaseEvictionsLowerExpectation lets the evictions that follow a
	// self-preservation release lower the expectation the release
	// measured from the live fleet, as before: after a mass failure it
	// falls to 0 and eviction stops with silent leases still listed
	// (actors selfPreservation.onCounts).
	ReleaseEvictionsLowerExpectation Switch = "release-evictions-lower-expectation"
	// FastRenewNotApplied leaves the renewals answered by the renewal fast
	// path unapplied: the application actor never moves those leases' last
	// renewal (actors applyFastRenewals).
	FastRenewNotApplied Switch = "fast-renew-not-applied"
	// FastRouteDeltaAsApp lets httpapi's fast router take GET
	// /eureka/apps/delta for the application named "delta", unlike the mux
	// (httpapi router.match).
	FastRouteDeltaAsApp Switch = "fast-route-delta-as-app"
	// SPNoRecovery removes self-preservation's recovery release: an
	// engagement ends only when the renewals pass the threshold of the
	// whole expectation (which the clients that registered and died
	// silently during it keep out of reach under churn) or by the release
	// rule one recount interval later, as before (actors
	// selfPreservation.recovered).
	SPNoRecovery Switch = "sp-no-recovery"
	// SilentDrainedByCancels lets every deletion after a
	// self-preservation release, cancels too, come out of the leases the
	// release gave up on, as before: under churn the cancels use that
	// count up at once, and the silent leases, still listed, are expected
	// again (actors selfPreservation.onCounts).
	SilentDrainedByCancels Switch = "silent-drained-by-cancels"
	// SPNoWarmUp lets a node of a cluster judge self-preservation from its
	// first window close after it starts, on a partial count and before its
	// peers' reports came: a restarted node engages on a "collapse" (actors
	// selfPreservation.warming).
	SPNoWarmUp Switch = "sp-no-warm-up"
	// ProtocolRangeNotAdvertised makes a node advertise only its highest
	// wire protocol in its node meta, as before nodes spoke a range: the
	// previous release refuses it, and a rolling upgrade splits the
	// cluster (cluster hooks.NodeMeta).
	ProtocolRangeNotAdvertised Switch = "protocol-range-not-advertised"
	// NoFailedMembersInState leaves the failed members out of the
	// membership's push/pull state, as before the BUG-4 fix (cluster
	// hooks.LocalState).
	NoFailedMembersInState Switch = "no-failed-members-in-state"
	// ViewStaleAppInstalled lets the view install an application, or a
	// pruned delta group, rebuilt outside its lock from a state another
	// writer has replaced since, losing that writer's change (actors/view
	// fold, installPruned).
	ViewStaleAppInstalled Switch = "view-stale-app-installed"
	// ViewDeltaHoldsStates makes every delta window entry hold its
	// change's instance state, unpacked, until it is pruned, so churn
	// retains one whole state per change instead of one packed state per
	// changed instance (actors/view prepare and fold).
	ViewDeltaHoldsStates Switch = "view-delta-holds-states"
	// ViewDeltaUnpacked makes the delta keep a deleted state as a whole
	// Instance instead of packed (actors/view prepare, packed.go).
	ViewDeltaUnpacked Switch = "view-delta-unpacked"
	// ViewDeltaUnbounded makes pruning ignore the delta's memory bound,
	// DeltaMaxBytes (actors/view boundCutoff).
	ViewDeltaUnbounded Switch = "view-delta-unbounded"
	// CopyAgedByReceiverClock reads a copy's last renewal and version time
	// on the receiver's wall clock, ignoring the sender's (BUG-17; actors
	// applyRecord, cluster's Records.SentAt).
	CopyAgedByReceiverClock Switch = "copy-aged-by-receiver-clock"
	// DirectJSONLeadingZeros lets the direct register decoder take an
	// integer with leading zeros, which JSON forbids (eureka
	// directScanner.integer).
	DirectJSONLeadingZeros Switch = "direct-json-leading-zeros"
	// ViewLeafKeepsReplacedKey makes a B+tree leaf whose first item is
	// replaced keep the replaced item's key as its first key, which keeps
	// the replaced instance state's strings alive (actors/view btree set).
	ViewLeafKeepsReplacedKey Switch = "view-leaf-keeps-replaced-key"
	// EurekaPeerEcho sends the changes a Eureka peer made (replicated
	// writes) back to the Eureka peers, as if a client had made them
	// (eurekapeer Observe).
	EurekaPeerEcho Switch = "eurekapeer-echo"
	// LeaveWaitsUnbounded passes memberlist the leave's remaining time even
	// when it has run out, which memberlist takes as "wait without limit",
	// as before the BUG-8 fix (cluster leaveLocked).
	LeaveWaitsUnbounded Switch = "leave-waits-unbounded"
	// RejoinBelowLeftIncarnation lets a fresh process announce itself at
	// memberlist's first incarnation, below the one its predecessor left
	// with, as before the BUG-9 fix (cluster Membership.Start).
	RejoinBelowLeftIncarnation Switch = "rejoin-below-left-incarnation"
	// SyncAnswerDialled sends digests that ask for a reply and sync
	// requests the old way, so that the answers travel on streams the
	// answering node dials, as before the BUG-7 fix (cluster pull).
	SyncAnswerDialled Switch = "sync-answer-dialled"
	// LeaseAgesWallClock measures lease ages (expiry, the takeover grace
	// and the "renewed here within a lease" test that overrules an
	// eviction) on the wall clock, which a node's clock setting moves, as
	// before the BUG-10 fix (actors leaseClock).
	LeaseAgesWallClock Switch = "lease-ages-wall-clock"
	// ForwardedRenewalsDropped drops the renewals a failed forward could
	// not deliver, sends none with the answer to the owner's pull, and
	// makes no node pull from a peer whose reports stopped, as before the
	// fix of what remained of BUG-7 (cluster holdRenewals, answerExchange,
	// antiEntropyLoop).
	ForwardedRenewalsDropped Switch = "forwarded-renewals-dropped"
	// DialPerMessage sends every peer message on a stream of its own,
	// dialled for it (memberlist's SendReliable), instead of on the peer's
	// long-lived multiplexed connection, and serves a link's message
	// classes one after another from one goroutine, and dials a stream
	// for every anti-entropy pull (cluster SendStream, peerLink.run,
	// Membership.exchange).
	DialPerMessage Switch = "dial-per-message"
	// StreamBackoffSurvivesRejoin keeps a peer stream's redial backoff
	// (up to 2 s, grown while the peer was unreachable) after memberlist
	// sees the peer alive again, so its reports, records and forwarded
	// renewals wait out the backoff after a heal (cluster streamPeers.rejoined).
	StreamBackoffSurvivesRejoin Switch = "stream-backoff-survives-rejoin"
	// ProtectedByExpectation makes an engagement protect the expected
	// clients, not the fleet that renewed in the window before it, so the
	// leases of dead clients waiting for eviction raise the recovery
	// threshold above what the live fleet sends (actors engage).
	ProtectedByExpectation Switch = "protected-by-expectation"
	// MeasuredLeasesCountedTwice counts every copied new lease in the
	// expectation, also those a recovery release measured already (actors
	// measuredLease).
	MeasuredLeasesCountedTwice Switch = "measured-leases-counted-twice"
	// RecoveryWhileMembersUnheard lets self-preservation recover while
	// alive members' reports do not reach this node (actors recovered).
	RecoveryWhileMembersUnheard Switch = "recovery-while-members-unheard"
	// StaleRenewalsForwarded forwards a held renewal however long ago it
	// came in, as when the hold's age restarted on every failed retry
	// (long-partition seeds 1 and 5: a renewal held through the partition
	// reached the owner after the heal and revived a cancelled instance).
	StaleRenewalsForwarded Switch = "stale-renewals-forwarded"
	// FastJSONUnvalidated skips the strict validation of a register body
	// that fastjson's lenient parser accepted (eureka
	// decodeInstanceJSONFast): bodies JSON forbids are then registered.
	FastJSONUnvalidated Switch = "fast-json-unvalidated"
	// NoGraceAfterMemberGap restarts the eviction grace only when every
	// member had gone quiet, not when one member's reports resume, and
	// ignores reports from nodes this node thinks are not alive
	// (asymmetric-partition: the owner evicted, right after the block
	// lifted, a client whose renewals the blocked member had forwarded to
	// the owner of its narrower view).
	NoGraceAfterMemberGap Switch = "no-grace-after-member-gap"
	// SyncReasksWhileProgressing makes a joining node ask again for every
	// pending application a retry time after asking, however fast the
	// initial sync is progressing, and drop an application whose ask was
	// released from what the initial sync waits for (join-loaded at 1M:
	// the joiner was declared ready by the timeout holding 24%).
	SyncReasksWhileProgressing Switch = "sync-reasks-while-progressing"
	// ShutdownLeavesStreamHandOver stops reading the wrapped transport's
	// streams before its Shutdown, so a stream accepted at that moment
	// blocks the listener and Shutdown forever (make test hung 15 minutes
	// in a node's Stop).
	ShutdownLeavesStreamHandOver Switch = "shutdown-leaves-stream-handover"
	// SPCountsAddedFirst takes the self-preservation actor's coalesced
	// counts additions first, so a registration and its cancel counted
	// between the two takes floor Expected at 0 and leave it one too high.
	SPCountsAddedFirst Switch = "sp-counts-added-first"
	// SweepSkipsChangedApps leaves an application's sweep due time as its
	// last sweep set it when a command adds or shortens a lease, so a
	// sweep skips an application that now holds an expired lease.
	SweepSkipsChangedApps Switch = "sweep-skips-changed-apps"
	// MembersAppliedOutOfOrder lets concurrent MembersChanged calls run at
	// once, so a call that read an older member list can apply it after a
	// newer one (a joining node stayed unready with no peer links).
	MembersAppliedOutOfOrder Switch = "members-applied-out-of-order"
	// TombstonePrefixCollected collects only the oldest run of expired
	// tombstone packs, so a pack stamped in the future keeps every later
	// one (actors tombstoneSet.collect).
	TombstonePrefixCollected Switch = "tombstone-prefix-collected"
	// TombstoneAgedFromFuture ages a received tombstone by its HLC time
	// even when that is ahead of its receipt by more than the HLC
	// tolerance (actors putTombstone).
	TombstoneAgedFromFuture Switch = "tombstone-aged-from-future"
	// StaleJudgedByOperatorWrites lets an operator's write (a status
	// change, an override's removal, a metadata update) count as a
	// client's renewal, as before the fix: a stale copy touched by an
	// operator is installed after its tombstone expired (actors touch and
	// applyRecord).
	StaleJudgedByOperatorWrites Switch = "stale-judged-by-operator-writes"
	// TombstoneOutlivedByLease keeps tombstones for the TTL alone, however
	// long the leases they delete (actors tombstoneTTLFor).
	TombstoneOutlivedByLease Switch = "tombstone-outlived-by-lease"
	// SkewedNodeWrites lets a node whose clock is off its peers' by more
	// than the HLC tolerance take writes (httpapi writes, actors
	// ClockSkew).
	SkewedNodeWrites Switch = "skewed-node-writes"
	// EmptyRecordApplied applies a peer's live record that carries no
	// instance, which panics the application's actor mid-batch (actors
	// applyRecord, cluster applyRecords).
	EmptyRecordApplied Switch = "empty-record-applied"
	// LeaseDurationUnbounded accepts any durationInSecs, which overflows
	// time.Duration above about 9.2e9 s (httpapi validateRegistration,
	// actors ValidateRecord).
	LeaseDurationUnbounded Switch = "lease-duration-unbounded"
	// ReadyDespiteRefusal lets the ready timeout make a node ready while
	// its seeds refuse it (another protocol, another gossip key), so it
	// serves its own empty registry (cluster Replicator.readyLoop).
	ReadyDespiteRefusal Switch = "ready-despite-refusal"
	// NoRedialLeft never re-dials a member that left gracefully, so a
	// restarted seed started without --join stays a cluster of its own
	// (cluster Membership.reconnect).
	NoRedialLeft Switch = "no-redial-left"
	// SilentMemberHoldsForever lets an alive member whose load reports
	// stopped hold every owner's eviction for as long as it stays silent,
	// and keeps it an owner, as before the silent-member bound (cluster
	// evictionGraceFrom, Replicator.silentMembers).
	SilentMemberHoldsForever Switch = "silent-member-holds-forever"
	// ViewsDisagreeHoldsForever holds eviction for as long as a node not
	// alive in this node's view reports, as before the views-disagree
	// hold was bounded: a node cut off one way evicts nothing until
	// membership agrees (cluster disagreeHoldLocked, checkDisagreement).
	ViewsDisagreeHoldsForever Switch = "views-disagree-holds-forever"
	// ViewsDisagreeUnionRing evicts, once the views-disagree hold ran out,
	// what this node owns on one ring of its members and the strangers, as
	// before the reports carried each member's view: a node cut off one way
	// evicted the clients that renew through members that do not count it
	// (cluster checkDisagreement).
	ViewsDisagreeUnionRing Switch = "views-disagree-union-ring"
	// RenewNotFoundBeforeReady answers a renewal of an instance this node
	// does not know yet with 404 at once, even while its initial sync is
	// running: a restarted node sent clients to register again for nothing
	// (httpapi waitReady).
	RenewNotFoundBeforeReady Switch = "renew-not-found-before-ready"
	// LeftReportDropped drops a member's load report the moment it leaves
	// gracefully, as before leaves kept it for the window it covers: each
	// stop of a rolling restart dips the cluster's renewal count by the
	// member's share (cluster forgetLoad).
	LeftReportDropped Switch = "left-report-dropped"
	// FailedReportDropped drops a member's load report the moment it is
	// declared dead, however fresh, as before a failed member's report
	// counted until stale: a false death spread at the end of a one-way
	// block dips the count and engages self-preservation (cluster
	// forgetLoad).
	FailedReportDropped Switch = "failed-report-dropped"
	// PushETagNodeLocal mixes the node-local snapshot version into every
	// push ETag, so that two nodes holding the same content give different
	// tags and a client that moves between them refetches (httpapi
	// watchETag).
	PushETagNodeLocal Switch = "push-etag-node-local"
	// StreamCoalesceTrailing makes every change of the change stream wait
	// the whole StreamCoalesce before it goes out, as before a lone change
	// was published at once (httpapi hub.run).
	StreamCoalesceTrailing Switch = "stream-coalesce-trailing"
	// NoOwnershipHandoff drops the lease ages an application's previous
	// owner hands to the next, as before handoffs: every ownership move
	// grants the new owner's leases a whole lease of grace, and a client
	// that died during a rolling restart is evicted up to a lease late
	// (actors AdoptLeaseAges).
	NoOwnershipHandoff Switch = "no-ownership-handoff"
	// RenewalsToGoneOwnerDropped drops the renewals coalesced or held for
	// a member that left or failed, as before handoffs, instead of sending
	// them to the applications' new owners (cluster reroute).
	RenewalsToGoneOwnerDropped Switch = "renewals-to-gone-owner-dropped"
	// StrangerReportIgnored leaves out of the renewal count the fresh
	// reports of members that are not alive in this node's view, as before:
	// when a false death spreads, the member's next report (it never
	// stopped) took its renewals out of the count until the refutation
	// (cluster PeerRenewals).
	StrangerReportIgnored Switch = "stranger-report-ignored"
	// RegionEchoOverwritesLocal lets a remote region's instance replace a
	// local instance with the same application and id in ?regions= reads,
	// as Eureka's Application.addInstance does: a stale echo overwrites the
	// fresh local record (federation fullDocument).
	RegionEchoOverwritesLocal Switch = "region-echo-overwrites-local"
	// RegionPullGetsRemote answers another region's pull like any read:
	// with transparent fallback on it carries the remote regions, which a
	// ring of regions echoes back (httpapi isRegionPull).
	RegionPullGetsRemote Switch = "region-pull-gets-remote"
	// RemoteEchoOverwritesLocal puts the echo of remote regions back
	// whole: a pull does not identify as a region's server (and asks a
	// Java remote for every region), so a remote with transparent fallback
	// re-exports what it pulled; a pulled instance that carries a region
	// marker is served anyway; and a remote copy replaces the local
	// instance with its id, as Eureka's Application.addInstance does
	// (federation puller.get, regionState.serve, fullDocument). The
	// datacenters simulation catches it.
	RemoteEchoOverwritesLocal Switch = "remote-echo-overwrites-local"
	// RelayedCopyRefused refuses a region's copy relayed by a local member
	// that holds its WAN link as an echo (its instances carry the region's
	// marker), as before relays: the nodes that follow a relay serve none
	// of the region (federation puller.fromRelay).
	RelayedCopyRefused Switch = "relayed-copy-refused"
	// RelayUnsigned sends relay requests without their signature (made
	// with the gossip key), as before: with basic auth on every relay
	// answers 401 and every node follows the WAN (federation
	// streamReader.connect).
	RelayUnsigned Switch = "relay-unsigned"
	// EveryNodeOnWAN makes every node of a cluster hold each region's WAN
	// link, as before links: no node follows a relay (federation
	// puller.pick).
	EveryNodeOnWAN Switch = "every-node-on-wan"
	// RelayStreamCutOnDrop makes a relayed node whose region drops cut
	// its relay's stream to reconnect for a snapshot, as a node on the
	// WAN must, as before: in the datacenter runs the reconnection failed
	// and set the relay aside (federation puller.judge).
	RelayStreamCutOnDrop Switch = "relay-stream-cut-on-drop"
	// RelayHealNotRevived keeps a relayed node whose copy was dropped
	// waiting for a snapshot after its relay's deltas rebuilt it, as
	// before: the relay's keep-alives never freshen it again, and a quiet
	// region goes stale and drops again after the heal (federation
	// puller.onRelay).
	RelayHealNotRevived Switch = "relay-heal-not-revived"
	// RelayFollowerDropsAhead lets a relayed node drop its copy on its own
	// tick once its relay's age passes the drop bound, before the relay
	// says it dropped, as before: a heal in between brings the relay back
	// to ok with the copy it kept and leaves the node empty until the next
	// remote change (federation puller.relayHoldsCopy).
	RelayFollowerDropsAhead Switch = "relay-follower-drops-ahead"
	// DeltaForgottenByFullFetch makes a federated region's poll forget
	// what a delta changed when its apps__hashcode mismatches and a full
	// fetch follows, as before: the full fetch finds nothing more, the
	// change is not published, and ?regions= reads and the relay's
	// followers keep the region as it was until its next change
	// (federation puller.pull).
	DeltaForgottenByFullFetch Switch = "delta-forgotten-by-full-fetch"
	// StreamUncompressed makes the federation's stream reader ask for the
	// plain change stream and relay, as the previous release did: every
	// WAN byte as JSON (federation streamReader.connect).
	StreamUncompressed Switch = "stream-uncompressed"
	// RepairIgnoresRemovedApps makes a federated region's follower keep
	// the applications a repair names as removed (the remote has none of
	// them any more), so their cancelled instances stay in its copy
	// (federation regionState.repair).
	RepairIgnoresRemovedApps Switch = "repair-ignores-removed-apps"
	// RepairBySnapshot makes a federated region's follower repair its
	// copy by a whole snapshot, as before the digest exchange: it sends
	// no digest (federation puller.digestBody).
	RepairBySnapshot Switch = "repair-by-snapshot"
	// ParkedIdleNotSwept makes the parker's poller sweep nothing, so an
	// answered parked connection whose client asks nothing more outlives
	// the server's idle timeout (httpapi parker.sweepIdle).
	ParkedIdleNotSwept Switch = "parked-idle-not-swept"
	// StreamClosedByClientBytes makes a stream whose client sends bytes
	// take them for its leaving and close (httpapi streamConn.drain).
	StreamClosedByClientBytes Switch = "stream-closed-by-client-bytes"
)

// All lists every switch, in the order `make sabotage` tries them.
var All = []Switch{
	ReplicaOverrulesEviction, TombstoneReceiptAge, TombstonesDropped, CopiedLeaseFresh,
	StaleRecordsAccepted, EvictWithoutOwnership, NoTakeoverGrace, NoAntiEntropy,
	SelfPreservationPerOwner, TombstoneOutlivedByLease, SilentMemberHoldsForever, RemoteEchoOverwritesLocal,
	RelayedCopyRefused, EveryNodeOnWAN,
}

// UnitOnly lists the switches that only unit tests built with the sabotage
// tag catch: the in-process simulations cannot show their bug (their
// network never holds a request back, so no registration arrives late).
// `make sabotage` does not try them; Set accepts them as it accepts All.
//
// ReleaseWithoutHysteresis is here because the scale-down simulation shows
// its bug in about one run in twenty only: too rare for `make sabotage`.
//
// NoFailedMembersInState is here for the same reason: long-partition shows
// BUG-4 in about one run in five.
//
// LeaveWaitsUnbounded, RejoinBelowLeftIncarnation and SyncAnswerDialled
// (BUG-8, BUG-9, BUG-7) are unit-only too: their cluster tests show each directly, while the
// simulations show BUG-9 in about one run in three and BUG-8 only at 50
// nodes.
//
// LeftReportDropped is unit-only while the scenario that would show it
// (rolling-restart-quiet) still fails now and then on what remains of an
// open bug of its own (BUG-22): a verdict a known bug explains cannot tell
// the switch's failure apart. Its cluster test shows it directly.
//
// StrangerReportIgnored is unit-only for the same reason as
// FailedReportDropped; its cluster test counts a stranger's report directly.
//
// FailedReportDropped is unit-only: the false deaths a one-way block
// spreads at its end (silent-member) come in some runs only; its cluster
// test declares a member dead with a fresh report directly.
//
// LeaseAgesWallClock (BUG-10) is unit-only: its actors tests set the wall
// clock back and forward directly, while clock-skew showed it in two runs
// of six.
//
// ForwardedRenewalsDropped (the rest of BUG-7) is unit-only: its cluster
// test shows it directly, while asymmetric-partition -short showed it in
// one run of five.
//
// CopyAgedByReceiverClock (BUG-17) is unit-only: its actors and cluster
// tests skew the clocks directly, while clock-skew showed it in two CI
// runs under load.
//
// ReleaseOnCollapse and ReleaseEvictionsLowerExpectation are unit-only:
// their actors tests run a total renewal
// outage longer than the recount interval on the plain core with
// production timers and on a registry; no simulation scenario has one.
//
// NoOwnershipHandoff and RenewalsToGoneOwnerDropped are unit-only: their
// actors and cluster tests show each directly, while rolling-restart-quiet,
// the scenario that shows the first, still fails now and then on the
// engagement that remains of BUG-22.
//
// PushETagNodeLocal is unit-only: the simulations do not read with ETags;
// httpapi's two-node ETag test shows it directly. StreamCoalesceTrailing
// likewise: the simulations do not watch the stream; httpapi's hub test
// shows it.
//
// MembersAppliedOutOfOrder is unit-only: its cluster test holds one call
// back to show the interleaving directly, which CI met once in hundreds
// of runs of the node's join test.
//
// StreamBackoffSurvivesRejoin is unit-only: partition-churn fails on it
// only when a report dropped in the backoff is the one that counted (one
// seed in twenty before the fix); its cluster test shows the delay
// directly.
//
// ProtectedByExpectation, MeasuredLeasesCountedTwice and
// RecoveryWhileMembersUnheard are unit-only:
// partition-churn fails on each in about one seed of ten (sp-after-heal,
// a second or two engaged after the heal); their actors tests show each
// directly.
//
// SilentDrainedByCancels is unit-only: asymmetric-partition-long shows
// it in about one run of a few on seed 6 (a small churning fleet engaged
// again and again after the heal); its actors test shows it directly.
//
// RelayUnsigned is unit-only: the simulations run without basic auth;
// node's auth relay test shows it directly.
//
// RelayStreamCutOnDrop, RelayHealNotRevived and RelayFollowerDropsAhead
// are unit-only until a datacenters run is seen to catch them: the last
// two need a heal within a pull interval of the drop, or a remote region
// that stays quiet for the stale bound after the heal; federation's relay
// drop tests show each directly. StreamUncompressed likewise: no
// simulation counts the bytes on the WAN; federation's compression test
// does.
//
// RepairIgnoresRemovedApps and RepairBySnapshot are unit-only: no
// simulation breaks a region's stream past its remote's window; node's
// repair tests show each directly.
//
// DeltaForgottenByFullFetch is unit-only: a mismatching delta whose
// full fetch finds nothing more needs a remote that serves a delta and a
// full registry of different moments (the reference server's response
// cache does); federation's poll test serves one directly.
//
// ParkedIdleNotSwept and StreamClosedByClientBytes are unit-only: the
// simulations hold no idle parked connection and send nothing on a
// stream; httpapi's poller tests show each directly.
//
// SPNoRecovery is unit-only: partition-churn at its full duration catches
// it in two or three seeds of four (sp-after-heal, eviction-after-heal), but not
// seed 1 at the short duration the sabotage run uses (registrations count
// as renewals, and a split that leaves fewer dead lets the live share
// recover by itself); its actors test shows it directly.
var UnitOnly = []Switch{RegionEchoOverwritesLocal, RegionPullGetsRemote, ReadyDespiteRefusal, NoRedialLeft, LateRegistrationOutranksCancel, ReleaseWithoutHysteresis, FastRenewNotApplied, FastRouteDeltaAsApp,
	NoFailedMembersInState, ViewStaleAppInstalled, ViewDeltaHoldsStates, EurekaPeerEcho,
	LeaveWaitsUnbounded, RejoinBelowLeftIncarnation, SyncAnswerDialled, LeaseAgesWallClock, ForwardedRenewalsDropped,
	StaleRenewalsForwarded, DialPerMessage, FastJSONUnvalidated, NoGraceAfterMemberGap, SyncReasksWhileProgressing,
	ShutdownLeavesStreamHandOver, SPCountsAddedFirst, SweepSkipsChangedApps, MembersAppliedOutOfOrder, PushETagNodeLocal, StreamCoalesceTrailing,
	NoOwnershipHandoff, RenewalsToGoneOwnerDropped, StrangerReportIgnored, ViewsDisagreeHoldsForever, ViewsDisagreeUnionRing, RenewNotFoundBeforeReady,
	ViewLeafKeepsReplacedKey, ViewDeltaUnpacked, ViewDeltaUnbounded, CopyAgedByReceiverClock, DirectJSONLeadingZeros,
	TombstonePrefixCollected, TombstoneAgedFromFuture, StaleJudgedByOperatorWrites,
	SkewedNodeWrites, EmptyRecordApplied, LeaseDurationUnbounded,
	ReleaseOnCollapse, ReleaseEvictionsLowerExpectation, SPNoRecovery, SilentDrainedByCancels, ProtocolRangeNotAdvertised, SPNoWarmUp, LeftReportDropped, FailedReportDropped,
	StreamBackoffSurvivesRejoin, ProtectedByExpectation, MeasuredLeasesCountedTwice, RecoveryWhileMembersUnheard,
	RelayUnsigned, RelayStreamCutOnDrop, RelayHealNotRevived, RelayFollowerDropsAhead, StreamUncompressed,
	RepairIgnoresRemovedApps, RepairBySnapshot, ParkedIdleNotSwept, StreamClosedByClientBytes, DeltaForgottenByFullFetch}
