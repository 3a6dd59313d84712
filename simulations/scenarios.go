package simulations

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
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

// Scenarios lists every scenario, in the order "all" runs them.
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
		Drive:           driveAsymmetric,
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

// fraction returns d·f, but at least lo.
func fraction(d time.Duration, f float64, lo time.Duration) time.Duration {
	return max(lo, time.Duration(float64(d)*f))
}

// standardChurn is the churn of the fault scenarios.
func standardChurn(every time.Duration) ChurnSpec {
	return ChurnSpec{Every: every, MinLife: 2 * time.Second, MaxLife: 5 * time.Second, Silent: 0.25, Apps: Apps}
}

// driveSteadyChurn: steady clients and churn, no faults.
func driveSteadyChurn(s *Sim) error {
	steady := s.NewClients(6, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	s.StartChurn(standardChurn(400 * time.Millisecond))
	if err := s.Sleep(s.Duration()); err != nil {
		return err
	}
	// Stop the churn and wait out the eviction bound, so that a client that
	// died silently in the last seconds is judged by eviction-latency (with
	// the one-second settle tail of the short runs it was not, and a run
	// whose silent deaths all fell there had nothing to judge).
	s.FaultsOver()
	return s.Sleep(s.cfg.Thresholds.EvictionLatency + time.Second)
}

// drivePartitionHeal: a minority and a majority side both take writes for
// long enough to declare each other dead, then heal.
func drivePartitionHeal(s *Sim) error {
	steady := s.NewClients(4, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	s.StartChurn(standardChurn(500 * time.Millisecond))
	d := s.Duration()
	lead := fraction(d, 0.1, time.Second) + s.Between(0, 500*time.Millisecond)
	split := fraction(d, 0.55, 7*time.Second)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	minority, majority := s.split()
	s.Partition(minority, majority)
	if err := s.Sleep(2 * time.Second); err != nil {
		return err
	}
	// Writes on both sides: on each side one client registered before the
	// partition cancels (its stale copy lives on across the cut) and a new
	// one registers.
	for _, side := range [][]string{minority, majority} {
		for _, cl := range steady {
			if cl.running() && slices.Contains(side, cl.Location) {
				s.StopClients([]*Client{cl}, true)
				s.Event("cancel", "%s cancelled on the {%s} side", cl.ID, side[0]+"…")
				break
			}
		}
		nc := s.NewClient(Apps[s.IntN(len(Apps))], side[s.IntN(len(side))])
		s.Event("register", "%s registers next to %s", nc.ID, nc.Location)
	}
	if err := s.Sleep(split - 2*time.Second); err != nil {
		return err
	}
	s.Heal()
	healed := time.Now()
	if err := s.Sleep(max(0, d-lead-split)); err != nil {
		return err
	}
	// sp-partition wants every node released within SPRelease of the heal:
	// stay until they are (an engaged node lets go only after two windows
	// above the threshold), or the bound passed.
	for limit := healed.Add(s.cfg.Thresholds.SPRelease + time.Second); time.Now().Before(limit) && !s.allReleased(); {
		if err := s.Sleep(s.cfg.Timers.ProbeInterval); err != nil {
			return err
		}
	}
	return nil
}

// driveOwnerCrash: crash the owner of the busiest application, restart it
// after ownership moved and the takeover grace passed.
func driveOwnerCrash(s *Sim) error {
	steady := s.NewClients(3, Apps)
	busyApp := Apps[s.IntN(len(Apps))]
	for _, loc := range s.Cluster().Names() {
		steady = append(steady, s.NewClient(busyApp, loc), s.NewClient(busyApp, loc))
	}
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered, %d of them for the busy app %s", len(steady), 2*len(s.Cluster().Names()), busyApp)
	s.StartChurn(standardChurn(500 * time.Millisecond))
	d := s.Duration()
	lead := fraction(d, 0.1, time.Second) + s.Between(0, 500*time.Millisecond)
	down := fraction(d, 0.45, 7*time.Second)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	first := s.Cluster().Node(s.Cluster().Names()[0])
	if first == nil {
		return fmt.Errorf("simulations: %s not running", s.Cluster().Names()[0])
	}
	owner := first.Replicator().OwnerOf(busyApp)
	if err := s.Crash(owner, "crashed: it owns the busy app "+busyApp); err != nil {
		return err
	}
	if err := s.Sleep(down); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if err := s.Restart(ctx, owner); err != nil {
		return err
	}
	return s.Sleep(max(0, d-lead-down))
}

// driveLossy: loss and delay while clients churn.
func driveLossy(s *Sim) error {
	steady := s.NewClients(4, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	s.StartChurn(standardChurn(400 * time.Millisecond))
	d := s.Duration()
	lead := fraction(d, 0.1, time.Second)
	bad := fraction(d, 0.7, 5*time.Second)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	s.SetLoss(0.10)
	s.SetDelay(5*time.Millisecond, 50*time.Millisecond)
	if err := s.Sleep(bad); err != nil {
		return err
	}
	s.SetLoss(0)
	s.SetDelay(0, 0)
	return s.Sleep(max(0, d-lead-bad))
}

// driveMassClientFailure: most clients die silently, stay dead longer than
// their leases, and come back.
func driveMassClientFailure(s *Sim) error {
	t := s.Timers()
	apps := Apps[:5]
	clients := s.NewClients(6, apps)
	if err := s.WaitRegistered(clients, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d clients registered", len(clients))
	d := s.Duration()
	// Two full renewal windows, so that every owner's count reflects them.
	lead := 2*t.RenewalWindow + s.Between(0, t.RenewInterval)
	// Dead for longer than a lease plus a window: without
	// self-preservation their leases would be evicted.
	dead := fraction(d, 0.3, t.LeaseDuration+t.RenewalWindow+time.Second)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	byApp := map[string][]*Client{}
	for _, cl := range clients {
		byApp[cl.App] = append(byApp[cl.App], cl)
	}
	var victims []*Client
	for _, app := range apps {
		cs := s.shuffledClients(byApp[app])
		n := int(math.Ceil(0.7 * float64(len(cs))))
		victims = append(victims, cs[:n]...)
	}
	s.CrashClients(victims)
	if err := s.Sleep(dead); err != nil {
		return err
	}
	s.RecoverClients(victims)
	// Stay until every node that owns instances has released
	// self-preservation (or the release bound passed), then a little more.
	rest := time.Now().Add(max(d-lead-dead, time.Second))
	limit := time.Now().Add(s.cfg.Thresholds.SPRelease + time.Second)
	for time.Now().Before(limit) && !s.allReleased() {
		if err := s.Sleep(s.cfg.Timers.ProbeInterval); err != nil {
			return err
		}
	}
	return s.Sleep(max(time.Second, time.Until(rest)))
}

// allReleased reports whether, in the latest probe, every node that
// expects renewals lets leases expire.
func (s *Sim) allReleased() bool {
	p := s.rec.lastProbe()
	if p == nil {
		return false
	}
	for _, n := range p.Up {
		if sp, ok := p.SP[n]; ok && sp.Enabled && sp.Expected > 0 && !sp.ExpirationEnabled {
			return false
		}
	}
	return true
}

// driveRestartDuringEviction: one client of a well-populated application
// dies silently (its owner's renewals stay above the self-preservation
// threshold, so the owner evicts it one lease later); half a second after
// the death another node, crashed shortly before, restarts and syncs
// the registry, the dead client's lease included.
func driveRestartDuringEviction(s *Sim) error {
	names := s.Cluster().Names()
	app := Apps[s.IntN(len(Apps))]
	var busy []*Client
	for len(busy) < 12 {
		busy = append(busy, s.NewClient(app, names[len(busy)%len(names)]))
	}
	others := s.NewClients(2, Apps)
	if err := s.WaitRegistered(append(append([]*Client(nil), busy...), others...), registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d clients registered, %d of them for %s", len(busy)+len(others), len(busy), app)
	d := s.Duration()
	// Two renewal windows, so that the owner counts every renewal.
	lead := 2*s.Timers().RenewalWindow + s.Between(0, 500*time.Millisecond)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	first := s.Cluster().Node(names[0])
	if first == nil {
		return fmt.Errorf("simulations: %s not running", names[0])
	}
	owner := first.Replicator().OwnerOf(app)
	var restarted string
	for _, n := range s.Shuffled(names) {
		if n != owner {
			restarted = n
			break
		}
	}
	if err := s.Crash(restarted, "crashed (it does not own "+app+", owned by "+owner+")"); err != nil {
		return err
	}
	if err := s.Sleep(1500 * time.Millisecond); err != nil {
		return err
	}
	var victim *Client
	for _, cl := range s.shuffledClients(busy) {
		if cl.Location != restarted && cl.Location != owner {
			victim = cl
			break
		}
	}
	s.StopClients([]*Client{victim}, false)
	s.Event("client-dies", "%s died silently; %s should evict it about one lease later", victim.ID, owner)
	if err := s.Sleep(500 * time.Millisecond); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if err := s.Restart(ctx, restarted); err != nil {
		return err
	}
	// The owner evicts about a lease after the death; stay a lease more.
	return s.Sleep(max(s.Timers().LeaseDuration+time.Second, d-lead-2*time.Second))
}

// split draws the two sides of a partition: max(1, 2N/5) nodes on the
// minority side (2|3 at five nodes), seeded.
func (s *Sim) split() (minority, majority []string) {
	names := s.Shuffled(s.Cluster().Names())
	k := max(1, len(names)*2/5)
	minority, majority = append([]string(nil), names[:k]...), append([]string(nil), names[k:]...)
	sort.Strings(minority)
	sort.Strings(majority)
	return minority, majority
}

// driveLongPartition: a partition that outlasts the tombstone TTL, with
// cancels and silent deaths on both sides early in the split. Each side
// keeps the other side's instances (self-preservation is engaged on both:
// each sees only its share of the renewals), so when the tombstones of the
// early cancels have been collected, the other side still holds live
// copies of those instances, older than the TTL. After the heal those
// copies must not come back, nor the silently dead ones once evicted.
func driveLongPartition(s *Sim) error { return longPartition(s, false) }

// driveLongPartitionLone is long-partition where the restarted minority
// node is its side's only node at the heal: its side-mate crashes once the
// restart has copied the side's registry, and comes back after the heal.
// So the majority side learns the minority's old copies of the instances
// it cancelled from the restarted node alone, with no other holder of the
// true, old renewals to race it there (the race that let copied-lease-fresh
// slip through long-partition).
func driveLongPartitionLone(s *Sim) error { return longPartition(s, true) }

// longPartition drives long-partition; lone makes it long-partition-lone.
func longPartition(s *Sim, lone bool) error {
	t := s.Timers()
	steady := s.NewClients(4, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	s.StartChurn(standardChurn(700 * time.Millisecond))
	d := s.Duration()
	// Two renewal windows, so that self-preservation has counted every
	// client before the split.
	lead := 2*t.RenewalWindow + s.Between(0, 500*time.Millisecond)
	// Longer than the TTL by two windows (engaging) and three seconds
	// (collection by the eviction timer, and margin): every tombstone of
	// the early deletes is gone before the heal.
	split := max(fraction(d, 0.7, 0), t.TombstoneTTL+2*t.RenewalWindow+3*time.Second)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	minority, majority := s.split()
	s.Partition(minority, majority)
	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	for _, side := range [][]string{minority, majority} {
		var cancel, die []*Client
		for _, cl := range s.shuffledClients(steady) {
			if !cl.running() || !slices.Contains(side, cl.Location) {
				continue
			}
			switch {
			case len(cancel) < 2:
				cancel = append(cancel, cl)
			case len(die) < 2:
				die = append(die, cl)
			}
		}
		s.StopClients(cancel, true)
		s.StopClients(die, false)
		s.Event("deletes", "on the {%s} side %s cancelled and %s died silently", strings.Join(side, ","), clientIDs(cancel), clientIDs(die))
		nc := s.NewClient(Apps[s.IntN(len(Apps))], side[s.IntN(len(side))])
		s.Event("register", "%s registers next to %s", nc.ID, nc.Location)
	}
	// Shortly before the heal one node on each side restarts as a fresh
	// process: its initial sync copies its side's registry, the other
	// side's old copies included, and its tombstones. At the heal those
	// copies must be judged by their last renewal, not by when they were
	// copied, and the tombstones by their deletion, not by their receipt.
	healAt := time.Now().Add(split - time.Second)
	if err := s.Sleep(time.Until(healAt.Add(-restartBeforeHeal))); err != nil {
		return err
	}
	var down []string // the minority nodes crashed after the restart (lone)
	for _, side := range [][]string{minority, majority} {
		n := side[s.IntN(len(side))]
		if err := s.Crash(n, "crashed shortly before the heal"); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		err := s.Restart(ctx, n)
		cancel()
		if err != nil {
			return err
		}
		if lone && len(down) == 0 {
			for _, m := range side {
				if m == n {
					continue
				}
				if err := s.Crash(m, "crashed: "+n+", restarted, is to be its side's only node at the heal"); err != nil {
					return err
				}
				down = append(down, m)
			}
		}
	}
	if err := s.Sleep(time.Until(healAt)); err != nil {
		return err
	}
	s.Heal()
	rest := max(5*time.Second, d-lead-split)
	if len(down) == 0 {
		return s.Sleep(rest)
	}
	// Long enough for the heal's copies to have been judged, short of the
	// convergence the rest of the run must show with the nodes back.
	back := min(2*time.Second, rest/3)
	if err := s.Sleep(back); err != nil {
		return err
	}
	for _, m := range down {
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		err := s.Restart(ctx, m)
		cancel()
		if err != nil {
			return err
		}
	}
	return s.Sleep(rest - back)
}

// longPartitionShortTimers are the short runs' timers of long-partition and
// long-partition-lone, which must stay the same: a TTL of 8 s, so that the
// split (TTL + two windows + 3 s) fits the short duration.
func longPartitionShortTimers(t *Timers) { t.TombstoneTTL = 8 * time.Second }

// restartBeforeHeal is how long before the heal long-partition restarts a
// node on each side: less than a lease, so that a copy made at the restart
// would still look alive at the heal if copies were born fresh.
const restartBeforeHeal = 2500 * time.Millisecond

// clientIDs lists the ids of cs.
func clientIDs(cs []*Client) string {
	ids := make([]string, 0, len(cs))
	for _, cl := range cs {
		ids = append(ids, cl.ID)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// scaleDownTimers shortens the recount interval to 8s, so that the
// self-release fits in the run, and lengthens the lease to four renewal
// windows (8s): self-preservation sees a drop only when a whole window
// without the dead has been counted and reported by every member (two to
// three windows after the deaths), and with a 3s lease the owners evict
// the dead before that, the expectation falls with each eviction, and
// self-preservation never engages (seen on 5149916: the dead gone 2.95s
// after the deaths, four of five nodes never engaged). The checkers' bounds
// stay those of the 3s lease, which only makes them stricter.
func scaleDownTimers(t *Timers) {
	t.RecountInterval = 8 * time.Second
	t.LeaseDuration = 4 * t.RenewalWindow
}

// driveScaleDown: half of the steady clients cancel (the expectation
// follows at once, self-preservation stays off), then 30% of the rest die
// silently for good. That is more than the 15% self-preservation
// tolerates, so it engages; after one recount interval the measured rate
// becomes the expectation, self-preservation releases and the dead are
// evicted. The scenario runs until every node released and the dead are
// gone everywhere, or the bounds of sp-recount-release passed.
func driveScaleDown(s *Sim) error {
	t := s.Timers()
	th := s.cfg.Thresholds
	begin := time.Now()
	clients := s.NewClients(4, Apps)
	if err := s.WaitRegistered(clients, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d clients registered", len(clients))
	if err := s.Sleep(2*t.RenewalWindow + s.Between(0, t.RenewInterval)); err != nil {
		return err
	}
	order := s.shuffledClients(clients)
	half := len(order) / 2
	s.StopClients(order[:half], true)
	s.Event("scale-down", "%d of %d clients cancelled", half, len(order))
	if err := s.Sleep(2 * t.RenewalWindow); err != nil {
		return err
	}
	rest := order[half:]
	dead := rest[:int(math.Ceil(0.3*float64(len(rest))))]
	s.KillClients(dead)
	start := time.Now()
	limit := start.Add(th.SPEngage + t.RecountInterval + th.SPRecountSlack + th.EvictAfterRelease + time.Second)
	engaged := false
	for time.Now().Before(limit) {
		if err := s.Sleep(t.ProbeInterval); err != nil {
			return err
		}
		p := s.rec.lastProbe()
		if p == nil {
			continue
		}
		for _, n := range p.Up {
			engaged = engaged || spEngaged(p.SP[n])
		}
		// Done once self-preservation engaged and let go everywhere and the
		// dead are gone (or it never engaged and the dead are gone).
		if (engaged || time.Since(start) > th.SPEngage) && s.allReleased() && !p.holdsAny(dead) {
			break
		}
	}
	// The main phase lasts at least Duration.
	return s.Sleep(max(time.Second, time.Until(begin.Add(s.Duration()))))
}

// driveSlowPeer: one node stops reading its streams (MemNetwork.Stall)
// while clients churn; it keeps gossiping, so the others keep it as a live
// member and keep sending to it.
func driveSlowPeer(s *Sim) error {
	steady := s.NewClients(3, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	s.StartChurn(standardChurn(400 * time.Millisecond))
	d := s.Duration()
	lead := fraction(d, 0.15, 2*time.Second) + s.Between(0, 500*time.Millisecond)
	stall := fraction(d, 0.5, 6*time.Second)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	victim := s.Shuffled(s.Cluster().Names())[0]
	if err := s.Stall(victim); err != nil {
		return err
	}
	if err := s.Sleep(stall); err != nil {
		return err
	}
	if err := s.Unstall(victim); err != nil {
		return err
	}
	return s.Sleep(max(3*time.Second, d-lead-stall))
}

// shuffledClients returns a seeded permutation of cs.
func (s *Sim) shuffledClients(cs []*Client) []*Client {
	out := append([]*Client(nil), cs...)
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	s.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
