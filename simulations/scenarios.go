package simulations

// The scenario table: every scenario, the invariants it is judged by and
// how long it runs.

import (
	"time"
)

// Apps are the applications of the simulated clients.
var Apps = []string{"ORDERS", "PAYMENTS", "USERS", "CATALOG", "SEARCH", "CART"}

// allInvariants are the invariants every fault scenario is judged by.
var allInvariants = []string{InvNoMissingRenewer, InvConvergence, InvNoResurrection, InvMembership, InvTombstoneGC}

// unpartitioned are the invariants of the scenarios without a partition:
// there no node is ever cut off from a client, so none may evict a
// renewing client even for a moment (renewer-kept).
var unpartitioned = append([]string{InvRenewerKept}, allInvariants...)

// with returns the invariants base plus more, in a new slice.
func with(base []string, more ...string) []string {
	return append(append([]string(nil), base...), more...)
}

// registerWithin bounds how long a scenario's first clients may take to
// register.
const registerWithin = 10 * time.Second

// Scenarios lists every scenario, in the order "all" runs them. Each one's
// Drive lives in the file of its family, scenarios_<family>.go: clients,
// partitions, restarts, network, clock, holds, deletes.
var Scenarios = []Scenario{
	{
		Name: "steady-churn",
		Summary: "No faults: steady clients renew while short-lived clients come and go, a quarter of them dying without cancelling; " +
			"self-preservation must stay off and the silently dead must go within a lease.",
		Invariants:      with(unpartitioned, InvSPQuiet, InvEvictionLatency),
		DefaultDuration: 20 * time.Second,
		ShortDuration:   10 * time.Second,
		Drive:           driveSteadyChurn,
	},
	{
		Name:            "partition-heal",
		Summary:         "The cluster splits 2|3 (in proportion for other sizes); both sides take registrations and cancels, then the partition heals.",
		Invariants:      append([]string{InvSPPartition}, allInvariants...),
		DefaultDuration: 20 * time.Second,
		ShortDuration:   11 * time.Second,
		Drive:           drivePartitionHeal,
	},
	{
		Name: "partition-churn",
		Summary: "The cluster splits 2|3 for 19 s under heavy churn (a client every 300 ms, a quarter dying silently), then heals: " +
			"self-preservation, engaged on both sides, must let go within a window of the heal though the clients that registered " +
			"and died in the split keep the live share under its threshold, and the dead must then go as fast as in a healthy cluster.",
		Invariants:      append([]string{InvSPAfterHeal, InvEvictionAfterHeal}, allInvariants...),
		DefaultDuration: 32 * time.Second,
		ShortDuration:   26 * time.Second,
		Drive:           drivePartitionChurn,
	},
	{
		Name:            "owner-crash",
		Summary:         "The node owning the busiest application crashes (power loss, registry gone) and comes back later as a fresh process.",
		Invariants:      unpartitioned,
		DefaultDuration: 20 * time.Second,
		ShortDuration:   10 * time.Second,
		Drive:           driveOwnerCrash,
	},
	{
		Name:            "lossy-network",
		Summary:         "10% of the node-to-node packets are lost and every packet is delayed 5–50ms while clients churn.",
		Invariants:      unpartitioned,
		DefaultDuration: 20 * time.Second,
		ShortDuration:   6 * time.Second,
		Drive:           driveLossy,
	},
	{
		Name:            "mass-client-failure",
		Summary:         "70% of every application's clients die silently at once; self-preservation must hold their leases until they come back.",
		Invariants:      with([]string{InvSelfPreservation}, unpartitioned...),
		DefaultDuration: 20 * time.Second,
		ShortDuration:   12 * time.Second,
		Drive:           driveMassClientFailure,
	},
	{
		Name: "restart-during-eviction",
		Summary: "A node restarts as a fresh process just before the owner evicts an instance whose client died silently: " +
			"the restarted node's freshly synced copy must not bring the evicted instance back (reproduces BUG-1).",
		Invariants:      unpartitioned,
		DefaultDuration: 12 * time.Second,
		ShortDuration:   9 * time.Second,
		Drive:           driveRestartDuringEviction,
	},
	{
		Name: "long-partition",
		Summary: "The cluster splits 2|3 for longer than the tombstone TTL; early in the split clients cancel and die silently on both sides " +
			"while self-preservation keeps each side's copies of the other's instances; after the heal nothing deleted may come back.",
		// Not sp-partition: the silent deaths held on both sides during the
		// long split keep self-preservation engaged after the heal, as they
		// should, until the release rule lets go (one recount interval).
		Invariants:      allInvariants,
		DefaultDuration: 36 * time.Second,
		ShortDuration:   20 * time.Second,
		ShortTimers:     longPartitionShortTimers,
		Drive:           driveLongPartition,
	},
	{
		Name: "long-partition-lone",
		Summary: "long-partition, but at the heal the minority side is one node that restarted shortly before it (its side-mate " +
			"crashed after the restart and comes back after the heal): the other side learns the old copies of the instances it " +
			"cancelled from that node alone, and must judge them by their last renewal, not by when they were copied.",
		Invariants:      allInvariants,
		DefaultDuration: 36 * time.Second,
		ShortDuration:   20 * time.Second,
		ShortTimers:     longPartitionShortTimers,
		Drive:           driveLongPartitionLone,
	},
	{
		Name: "scale-down",
		Summary: "Half of the steady clients cancel, then 30% of the rest die silently for good: self-preservation engages, " +
			"must release by itself within one recount interval, and the dead must then be evicted everywhere.",
		Invariants:      with([]string{InvSPRecount}, unpartitioned...),
		DefaultDuration: 24 * time.Second,
		ShortDuration:   20 * time.Second,
		Timers:          scaleDownTimers,
		Drive:           driveScaleDown,
	},
	{
		Name: "slow-peer",
		Summary: "One node stops reading its streams for several seconds (it still gossips and serves HTTP) while clients churn: " +
			"replication among the other nodes must not wait for it.",
		Invariants:      with([]string{InvVisibility}, unpartitioned...),
		DefaultDuration: 20 * time.Second,
		ShortDuration:   12 * time.Second,
		Drive:           driveSlowPeer,
	},
	{
		Name: "rolling-restart",
		Summary: "Every node in turn stops gracefully and comes back as a fresh process while steady clients renew and a new one registers " +
			"during each restart: no renewing client may go missing, and the cluster must agree again after each restart.",
		Invariants:      with(unpartitioned, InvRestartConvergence),
		DefaultDuration: 20 * time.Second,
		ShortDuration:   10 * time.Second,
		Drive:           driveRollingRestart,
	},
	{
		Name: "flapping-node",
		Summary: "One node's links go down and up every few seconds (its process runs on; while it is cut off, only the clients next to it reach it) " +
			"while clients churn.",
		Invariants:      allInvariants,
		DefaultDuration: 20 * time.Second,
		ShortDuration:   12 * time.Second,
		Drive:           driveFlapping,
	},
	{
		Name: "asymmetric-partition",
		Summary: "2 of 5 nodes can no longer send to the other 3 (packets dropped, dials refused) while the 3 still reach them, " +
			"under churn; clients reach every node.",
		Invariants:      unpartitioned,
		DefaultDuration: 20 * time.Second,
		ShortDuration:   12 * time.Second,
		Drive:           driveAsymmetricFor(8 * time.Second),
	},
	{
		Name: "asymmetric-partition-long",
		Summary: "As asymmetric-partition, but the block outlasts the views-disagree bound by several leases: the cut-off minority " +
			"still hears the majority's reports, and once its hold runs out it must evict none of the clients that renew through " +
			"the majority.",
		Invariants:      with(unpartitioned, InvEvictionAfterHeal),
		DefaultDuration: 40 * time.Second,
		ShortDuration:   24 * time.Second,
		Drive:           driveAsymmetricLong,
	},
	{
		Name:            "one-way-loss",
		Summary:         "40% of the packets one node sends to the others are lost (what it receives and every stream are not) while clients churn.",
		Invariants:      unpartitioned,
		DefaultDuration: 20 * time.Second,
		ShortDuration:   8 * time.Second,
		Drive:           driveOneWayLoss,
	},
	{
		Name: "clock-skew",
		Summary: "One node's wall clock runs 3 minutes ahead, then 3 minutes behind, then right again (beyond the HLC's one-minute tolerance) " +
			"while clients churn.",
		Invariants:      unpartitioned,
		DefaultDuration: 20 * time.Second,
		ShortDuration:   12 * time.Second,
		Drive:           driveClockSkew,
	},
	{
		Name: "long-lease",
		Summary: "Some clients ask for a lease far longer than the tombstone TTL; the cluster splits 2|3 for longer than the TTL " +
			"but shorter than those leases, and the long-lease clients on the majority side cancel early in the split: at the " +
			"heal the minority's copies, their leases still running, must not come back.",
		// Not tombstone-ttl: a tombstone is kept for its application's
		// longest lease plus a window and an eviction run, here longer
		// than the TTL on purpose.
		Invariants:      []string{InvNoMissingRenewer, InvConvergence, InvNoResurrection, InvMembership},
		DefaultDuration: 36 * time.Second,
		ShortDuration:   20 * time.Second,
		ShortTimers:     longPartitionShortTimers,
		Drive:           driveLongLease,
	},
	{
		Name: "silent-member",
		Summary: "One node's outbound traffic is blocked for long (its packets dropped, its dials refused; the others still dial it) " +
			"while clients die: its silence may hold every owner's eviction only for the silent-member bound, and the hold must show on every node's status meanwhile.",
		Invariants:      []string{InvSPQuiet, InvSilentMemberBound, InvConvergence, InvNoResurrection, InvMembership, InvTombstoneGC},
		DefaultDuration: 24 * time.Second,
		ShortDuration:   12 * time.Second,
		Drive:           driveSilentMember,
	},
	{
		Name: "rolling-restart-quiet",
		Summary: "rolling-restart judged for self-preservation: every node in turn stops gracefully and comes back while steady clients renew; " +
			"one client is killed during the roll. Self-preservation must stay off, and the dead client must go within a lease.",
		Invariants:      with(unpartitioned, InvRestartConvergence, InvSPQuiet, InvEvictionLatency),
		DefaultDuration: 20 * time.Second,
		ShortDuration:   12 * time.Second,
		Drive:           driveRollingRestartQuiet,
	},
	{
		Name: "datacenters",
		Summary: "Two regions of three nodes, each its own gossip cluster, federated through remote regions (each follows the other's " +
			"nodes through a WAN proxy) while clients register, renew and cancel in both; the WAN is cut for longer than the remote " +
			"drop time and the tombstone TTL, with cancels on both sides, then healed; then cut for half the stale time, with changes on both " +
			"sides, and healed. The harness's own cluster stays idle.",
		Invariants: []string{InvRegionVisibility, InvRegionCancel, InvRegionNoEcho, InvRegionStaleDrop, InvRegionConvergence,
			InvRegionResurrection},
		DefaultDuration: 32 * time.Second,
		ShortDuration:   18 * time.Second,
		ShortTimers:     datacentersShortTimers,
		Drive:           driveDatacenters,
	},
	{
		Name: "datacenters-ring",
		Summary: "datacenters with three regions in a ring, each following the next (dc1 → dc2 → dc3 → dc1), where a re-exported " +
			"instance would travel on: the WAN is cut past the drop time and the tombstone TTL, with cancels in every region, then healed, " +
			"then cut briefly again.",
		Invariants: []string{InvRegionVisibility, InvRegionCancel, InvRegionNoEcho, InvRegionStaleDrop, InvRegionConvergence,
			InvRegionResurrection},
		DefaultDuration: 32 * time.Second,
		ShortDuration:   18 * time.Second,
		ShortTimers:     datacentersShortTimers,
		Drive:           driveDatacentersRing,
	},
	{
		Name: "datacenters-lossy-wan",
		Summary: "datacenters over a WAN that is slow and lossy rather than cut: every link delays each chunk 10–40 ms, holds one in ten " +
			"100–600 ms more and resets the connection at one in thirty-three chunks, for a third of the run with churn and changes on both sides, " +
			"then for the stale time with changes only. A lossy WAN promises no propagation bound: its windows (until the last held chunk) " +
			"do not count as WAN up time; judged are no echo, no resurrection, the stale rule (never stale while the last success is " +
			"younger than the stale time, ok outside the windows) and convergence within the clean bound.",
		Invariants: []string{InvRegionVisibility, InvRegionCancel, InvRegionNoEcho, InvRegionStaleRule, InvRegionConvergence,
			InvRegionResurrection},
		DefaultDuration: 32 * time.Second,
		ShortDuration:   18 * time.Second,
		ShortTimers:     datacentersShortTimers,
		Drive:           driveDatacentersLossyWAN,
	},
	{
		Name: "datacenters-one-link",
		Summary: "datacenters-ring with one link cut only (the one in front of dc2, which dc1 follows), past the drop time and the " +
			"tombstone TTL with changes in every region, then briefly again: dc1's view of dc2 is judged as a cut, the two other links " +
			"as never cut (their visibility, cancel and resurrection bounds run on, and they are never stale).",
		Invariants: []string{InvRegionOneLinkVisibility, InvRegionOneLinkCancel, InvRegionNoEcho, InvRegionOneLinkStaleDrop,
			InvRegionConvergence, InvRegionOneLinkResurrection},
		DefaultDuration: 32 * time.Second,
		ShortDuration:   18 * time.Second,
		ShortTimers:     datacentersShortTimers,
		Drive:           driveDatacentersOneLink,
	},
	{
		Name: "datacenters-restart",
		Summary: "datacenters where, during a WAN cut past the drop time and the tombstone TTL (with changes on both sides), dc1's nodes " +
			"restart one by one as fresh processes, each synced before the next; the WAN then heals and the restarted nodes, which " +
			"could never load dc2, must serve it within the convergence bound, with no echo and no cancel back.",
		Invariants: []string{InvRegionVisibility, InvRegionCancel, InvRegionNoEcho, InvRegionStaleDrop, InvRegionConvergence,
			InvRegionResurrection, InvRegionLoading},
		DefaultDuration: 36 * time.Second,
		ShortDuration:   18 * time.Second,
		ShortTimers:     datacentersShortTimers,
		Drive:           driveDatacentersRestart,
	},
	{
		Name: "datacenters-restart-early",
		Summary: "datacenters where nodes restart as fresh processes in a WAN cut before the other region turns stale on them, " +
			"while their peers still serve their copy (dc1's stream follower and a polling node of dc2; a polling node of dc1 " +
			"once stale), the cut lasting past the drop time and the tombstone TTL; then one more restart (dc2's stream follower) " +
			"in a cut of half the stale time. Each fresh process must answer ?regions= 403 and show the region loading, never " +
			"ok, stale or dropped, until the heal, then load it within the convergence bound, with no echo and no cancel back.",
		Invariants: []string{InvRegionVisibility, InvRegionCancel, InvRegionNoEcho, InvRegionStaleDrop, InvRegionConvergence,
			InvRegionResurrection, InvRegionLoading},
		DefaultDuration: 36 * time.Second,
		ShortDuration:   18 * time.Second,
		ShortTimers:     datacentersShortTimers,
		Drive:           driveDatacentersRestartEarly,
	},
}

// ScenarioByName returns the scenario called name.
func ScenarioByName(name string) (Scenario, bool) {
	for _, sc := range Scenarios {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}
