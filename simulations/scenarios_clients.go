package simulations

// Scenarios whose only faults are the clients': churn and nothing else
// (steady-churn), most clients dying at once and coming back
// (mass-client-failure), and part of the fleet leaving for good
// (scale-down).

import (
	"math"
	"time"
)

// driveSteadyChurn: steady clients and churn, no faults.
func driveSteadyChurn(s *Sim) error {
	if _, err := s.steadyClients(6); err != nil {
		return err
	}
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
		p := s.rec.LastProbe()
		if p == nil {
			continue
		}
		for _, n := range p.Up {
			engaged = engaged || spEngaged(p.SP[n])
		}
		// Done once self-preservation engaged and let go everywhere and the
		// dead are gone (or it never engaged and the dead are gone).
		if (engaged || time.Since(start) > th.SPEngage) && s.allReleased() && !p.HoldsAny(instanceKeys(dead)) {
			break
		}
	}
	// The main phase lasts at least Duration.
	return s.Sleep(max(time.Second, time.Until(begin.Add(s.Duration()))))
}
