package simulations

// Scenarios that cut the cluster: a partition that heals (partition-heal,
// and partition-churn under heavier churn),
// one that outlasts the tombstone TTL (long-partition, long-partition-lone),
// a node whose links go down and up (flapping-node), and a side that can
// no longer send to the other (asymmetric-partition, and
// asymmetric-partition-long past the views-disagree bound).

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"
)

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

// drivePartitionHeal: a minority and a majority side both take writes for
// long enough to declare each other dead, then heal.
func drivePartitionHeal(s *Sim) error {
	steady, err := s.steadyClients(4)
	if err != nil {
		return err
	}
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

// drivePartitionChurn: a 2|3 partition under steady churn (a client every
// 300 ms, a quarter of them dying silently), then a heal with the churn
// going on for longer than a window and a lease. Six steady clients per
// node, as in steady-churn: with fewer, the dead waiting for eviction in
// the healthy cluster put the live share at the 85% line, and
// self-preservation engages now and then rightly, by Eureka's arithmetic.
// The split lasts 60% of the phase (at least 16 s): long enough that the
// clients that register and die in it (about sixteen) hold the live share
// under the line after the heal, which only recovery lets go of, even
// though registrations count as renewals (a client every 300 ms adds about
// three clients' worth to every window). While the sides are cut
// off each engages self-preservation and keeps the clients that die; after
// the heal it must let go and evict them, though those that registered and
// died in the split keep the live share under the threshold.
func drivePartitionChurn(s *Sim) error {
	if _, err := s.steadyClients(6); err != nil {
		return err
	}
	s.StartChurn(standardChurn(300 * time.Millisecond))
	d := s.Duration()
	lead := fraction(d, 0.1, time.Second) + s.Between(0, 500*time.Millisecond)
	split := fraction(d, 0.6, 16*time.Second)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	minority, majority := s.split()
	s.Partition(minority, majority)
	if err := s.Sleep(split); err != nil {
		return err
	}
	s.Heal()
	t := s.cfg.Timers
	return s.Sleep(max(d-lead-split, t.RenewalWindow+t.LeaseDuration+4*time.Second))
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
	steady, err := s.steadyClients(4)
	if err != nil {
		return err
	}
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

// driveFlapping: one node's links go down and up every few seconds (its
// process runs on; while cut off only the clients next to it reach it),
// under churn.
func driveFlapping(s *Sim) error {
	if _, err := s.steadyClients(3); err != nil {
		return err
	}
	s.StartChurn(standardChurn(500 * time.Millisecond))
	d := s.Duration()
	begin := time.Now()
	if err := s.Sleep(fraction(d, 0.1, time.Second)); err != nil {
		return err
	}
	names := s.Shuffled(s.Cluster().Names())
	victim, rest := names[0], names[1:]
	end := begin.Add(fraction(d, 0.85, 8*time.Second))
	for flaps := 0; flaps == 0 || time.Now().Before(end); flaps++ {
		s.Partition([]string{victim}, sortedCopy(rest))
		if err := s.Sleep(s.Between(1500*time.Millisecond, 3*time.Second)); err != nil {
			return err
		}
		s.Heal()
		if err := s.Sleep(s.Between(1500*time.Millisecond, 3500*time.Millisecond)); err != nil {
			return err
		}
	}
	return s.Sleep(max(time.Second, time.Until(begin.Add(d))))
}

// driveAsymmetricFor: a minority can no longer send to the majority
// (packets dropped, dials refused) while the majority still reaches it, for
// half the phase and at least minBlock, under churn; clients reach every
// node.
func driveAsymmetricFor(minBlock time.Duration) func(*Sim) error {
	return func(s *Sim) error { return driveAsymmetric(s, minBlock) }
}

// driveAsymmetricLong is asymmetric-partition-long: the block lasts at
// least asymmetricLongBlock of the run's timers.
func driveAsymmetricLong(s *Sim) error {
	return driveAsymmetric(s, asymmetricLongBlock(s.cfg.Timers))
}

// memberlistDetection is about how long the majority of an asymmetric
// partition takes to declare the minority dead: memberlist's probes and
// suspicion, which the simulations do not scale with the Eureka timers
// (seen: 5–7 s).
const memberlistDetection = 6 * time.Second

// asymmetricLongBlock is asymmetric-partition-long's shortest block: the
// majority's failure detection, the views-disagree hold the minority then
// runs out (the silent-member bound), and two leases past it in which a
// narrow view would evict the majority's renewing clients (16 s under the
// default timers).
func asymmetricLongBlock(t Timers) time.Duration {
	return memberlistDetection + silentBound(t) + 2*t.LeaseDuration
}

func driveAsymmetric(s *Sim, minBlock time.Duration) error {
	if _, err := s.steadyClients(3); err != nil {
		return err
	}
	s.StartChurn(standardChurn(500 * time.Millisecond))
	d := s.Duration()
	lead := fraction(d, 0.1, time.Second) + s.Between(0, 500*time.Millisecond)
	block := fraction(d, 0.5, minBlock)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	minority, majority := s.split()
	s.BlockOneWay(minority, majority)
	if err := s.Sleep(block); err != nil {
		return err
	}
	s.UnblockOneWay(minority, majority)
	return s.Sleep(max(3*time.Second, d-lead-block))
}
