package simulations

// The holds on eviction: a member whose outbound traffic is blocked for
// long (silent-member); its hold on every owner's eviction must be
// bounded and shown.

import (
	"strings"
	"time"

	"github.com/heureka/heureka/cluster"
)

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
	// would hold eviction for a reason of its own, stays off. Four per node
	// (16 at 5 nodes): the expectation counts the one client assumed at
	// start on top of the registered ones until the first recount (Eureka's
	// rule, kept), so with 12 one silent death already crossed the 85%
	// line (11 of 13 expected).
	var steady []*Client
	for i := range 4 * len(others) {
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
	// One client of sixteen or more: not enough to engage self-preservation.
	s.KillClients([]*Client{steady[s.IntN(len(steady))]})
	// The hold must show on every other node while it lasts: from a
	// little after x's reports go stale until a little before the bound.
	// The hold ends the bound after the last report that arrived, which
	// may be up to two intervals before the block: the last report sent
	// is up to one interval old, and the one in flight when the block
	// began is lost (a CI run saw a hold end 3.42 s into a 4 s bound).
	from, to := blocked.Add(3*t.LoadInterval+t.LoadInterval), blocked.Add(bound-2*t.LoadInterval)
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
