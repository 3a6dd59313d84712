package simulations

// Scenarios of the holds on eviction: a member whose outbound traffic is
// blocked for long (its hold on every owner's eviction must be bounded and
// shown), and a rolling restart judged for self-preservation (a graceful
// stop must not engage it) and for the eviction of a client killed during
// the roll.

import (
	"context"
	"strings"
	"time"

	"github.com/heureka/heureka/cluster"
)

func init() {
	Scenarios = append(Scenarios,
		Scenario{
			Name: "silent-member",
			Summary: "One node's outbound traffic is blocked for long (its packets dropped, its dials refused; the others still dial it) " +
				"while clients die: its silence may hold every owner's eviction only for the silent-member bound, and the hold must show on every node's status meanwhile.",
			Invariants:      []string{InvSPQuiet, InvSilentMemberBound, InvConvergence, InvNoResurrection, InvMembership, InvTombstoneGC},
			DefaultDuration: 24 * time.Second,
			ShortDuration:   12 * time.Second,
			Drive:           driveSilentMember,
		},
		Scenario{
			Name: "rolling-restart-quiet",
			Summary: "rolling-restart judged for self-preservation: every node in turn stops gracefully and comes back while steady clients renew; " +
				"one client is killed during the roll. Self-preservation must stay off, and the dead client must go within a lease.",
			Invariants:      with(unpartitioned, InvRestartConvergence, InvSPQuiet, InvEvictionLatency),
			DefaultDuration: 20 * time.Second,
			ShortDuration:   12 * time.Second,
			Drive:           driveRollingRestartQuiet,
		})
}

// driveSilentMember: steady clients on every node; one node's outbound
// traffic is blocked for most of the run; a client next to another node
// dies silently once x's reports are stale, so that its owner's eviction
// of it is held by the silence. Meanwhile every other
// node's EvictionHolds is read while the hold must be on.
func driveSilentMember(s *Sim) error {
	names := s.Cluster().Names()
	x := names[s.IntN(len(names))]
	var others []string
	for _, n := range names {
		if n != x {
			others = append(others, n)
		}
	}
	// The clients live next to the other nodes: x's silence then takes no
	// renewals out of the cluster's count, and self-preservation, which
	// would hold eviction for a reason of its own, stays off.
	var steady []*Client
	for i := range 3 * len(others) {
		steady = append(steady, s.NewClient(Apps[i%len(Apps)], others[i%len(others)]))
	}
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered next to %s", len(steady), strings.Join(others, ","))
	if err := s.Sleep(s.Between(time.Second, 2*time.Second)); err != nil {
		return err
	}
	t := s.Timers()
	bound := silentBound(t)
	blockFor := max(s.Duration()-3*time.Second, bound+t.LeaseDuration+3*time.Second)
	s.BlockOneWay([]string{x}, others)
	blocked := time.Now()
	// Kill a third of the clients next to the other nodes once x's reports
	// are stale everywhere: their owners' eviction is then held by x.
	if err := s.Sleep(4 * t.LoadInterval); err != nil {
		return err
	}
	// One client of twelve or more: not enough to engage self-preservation.
	s.KillClients([]*Client{steady[s.IntN(len(steady))]})
	// The hold must show on every other node while it lasts: from a
	// little after x's reports go stale until a little before the bound.
	from, to := blocked.Add(3*t.LoadInterval+t.LoadInterval), blocked.Add(bound-t.LoadInterval)
	unseen := map[string]bool{}
	seen := 0
	for time.Now().Before(to) {
		if time.Now().After(from) {
			for _, n := range others {
				if unseen[n] {
					continue
				}
				nd := s.Cluster().Node(n)
				if nd == nil || nd.Replicator() == nil {
					continue
				}
				if h, ok := holdOn(nd.Replicator().EvictionHolds(), x); ok {
					seen++
					if seen == 1 {
						s.Event("hold-seen", "%s shows the hold: %s", n, h.Detail)
					}
				} else {
					unseen[n] = true
					s.Event("hold-unseen", "%s shows no hold on eviction %v into %s's silence", n, time.Since(blocked).Round(time.Millisecond), x)
				}
			}
		}
		if err := s.Sleep(t.ProbeInterval); err != nil {
			return err
		}
	}
	if err := s.Sleep(max(0, time.Until(blocked.Add(blockFor)))); err != nil {
		return err
	}
	s.UnblockOneWay([]string{x}, others)
	return s.Sleep(2 * time.Second)
}

// holdOn returns the hold of hs about member x.
func holdOn(hs []cluster.EvictionHold, x string) (cluster.EvictionHold, bool) {
	for _, h := range hs {
		if h.Reason != cluster.HoldSilentMember && h.Reason != cluster.HoldDeaf {
			continue
		}
		for _, m := range h.Members {
			if m == x {
				return h, true
			}
		}
	}
	return cluster.EvictionHold{}, false
}

// driveRollingRestartQuiet: driveRollingRestart with one client killed
// after the first stop; five clients per node, so that the one killed is
// well within self-preservation's 15%.
func driveRollingRestartQuiet(s *Sim) error {
	steady := s.NewClients(5, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	begin := time.Now()
	if err := s.Sleep(s.Between(time.Second, 2*time.Second)); err != nil {
		return err
	}
	names := s.Cluster().Names()
	for i, n := range s.Shuffled(names) {
		if err := s.StopNode(n, "(rolling restart)"); err != nil {
			return err
		}
		if i == 1 {
			victim := steady[s.IntN(len(steady))]
			s.KillClients([]*Client{victim})
		}
		if err := s.Sleep(s.Between(500*time.Millisecond, 1500*time.Millisecond)); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		err := s.Restart(ctx, n)
		cancel()
		if err != nil {
			return err
		}
		if err := s.waitAgreed(time.Now(), s.cfg.Thresholds.Convergence); err != nil {
			return err
		}
		if err := s.Sleep(s.Between(500*time.Millisecond, time.Second)); err != nil {
			return err
		}
	}
	return s.Sleep(max(time.Second, time.Until(begin.Add(s.Duration()))))
}
