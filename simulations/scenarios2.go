package simulations

// The second round of scenarios: rolling restarts, a flapping node, an
// asymmetric partition, one-way loss and clock skew (see
// simulations/README.md).

import (
	"context"
	"time"
)

// driveRollingRestart: every node in turn stops gracefully and comes back
// as a fresh process, under steady clients; a new client registers while
// each node is down. After each restart the harness waits until the
// cluster agrees again (or the convergence bound passed) before the next.
func driveRollingRestart(s *Sim) error {
	steady := s.NewClients(3, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	begin := time.Now()
	if err := s.Sleep(s.Between(time.Second, 2*time.Second)); err != nil {
		return err
	}
	names := s.Cluster().Names()
	for _, n := range s.Shuffled(names) {
		if err := s.StopNode(n, "(rolling restart)"); err != nil {
			return err
		}
		var others []string
		for _, o := range names {
			if o != n {
				others = append(others, o)
			}
		}
		nc := s.NewClient(Apps[s.IntN(len(Apps))], others[s.IntN(len(others))])
		s.Event("register", "%s registers next to %s while %s is down", nc.ID, nc.Location, n)
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

// waitAgreed waits until a probe taken after since finds every node up,
// ready, holding the same registry and seeing every other, or until within
// passed; it notes which on the timeline. Not agreeing is for the checkers
// to judge, not an error.
func (s *Sim) waitAgreed(since time.Time, within time.Duration) error {
	limit := since.Add(within)
	for time.Now().Before(limit) {
		if p := s.rec.lastProbe(); p != nil && p.At.After(since) && p.converged() && p.membersComplete() &&
			len(p.Up) == len(s.c.Names()) {
			s.Event("agreed", "every node ready, same registry, full membership %v after the restart", p.At.Sub(since).Round(time.Millisecond))
			return nil
		}
		if err := s.Sleep(s.cfg.Timers.ProbeInterval); err != nil {
			return err
		}
	}
	s.Event("not-agreed", "the nodes did not agree within %v of the restart", within)
	return nil
}

// driveFlapping: one node's links go down and up every few seconds (its
// process runs on; while cut off only the clients next to it reach it),
// under churn.
func driveFlapping(s *Sim) error {
	steady := s.NewClients(3, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
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

// driveAsymmetric: a minority can no longer send to the majority (packets
// dropped, dials refused) while the majority still reaches it, under
// churn; clients reach every node.
func driveAsymmetric(s *Sim) error {
	steady := s.NewClients(3, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	s.StartChurn(standardChurn(500 * time.Millisecond))
	d := s.Duration()
	lead := fraction(d, 0.1, time.Second) + s.Between(0, 500*time.Millisecond)
	block := fraction(d, 0.5, 8*time.Second)
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

// driveOneWayLoss: 40% of the packets one node sends to the others are
// lost (its incoming packets and every stream are not), under churn.
func driveOneWayLoss(s *Sim) error {
	steady := s.NewClients(3, Apps)
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
	names := s.Shuffled(s.Cluster().Names())
	victim, rest := names[0], sortedCopy(names[1:])
	s.SetOneWayLoss(victim, rest, 0.4)
	if err := s.Sleep(bad); err != nil {
		return err
	}
	s.SetOneWayLoss(victim, rest, 0)
	return s.Sleep(max(3*time.Second, d-lead-bad))
}

// clockSkew is how far clock-skew sets a node's wall clock off: minutes,
// beyond the HLC's one-minute tolerance for readings from the future.
const clockSkew = 3 * time.Minute

// driveClockSkew: one node's wall clock runs minutes ahead for a third of
// the phase, then minutes behind for a third, then right again, under
// churn.
func driveClockSkew(s *Sim) error {
	steady := s.NewClients(3, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	s.StartChurn(standardChurn(500 * time.Millisecond))
	d := s.Duration()
	lead := fraction(d, 0.1, time.Second)
	third := fraction(d, 0.3, 4*time.Second)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	victim := s.Shuffled(s.Cluster().Names())[0]
	for _, off := range []time.Duration{clockSkew, -clockSkew} {
		if err := s.SkewClock(victim, off); err != nil {
			return err
		}
		if err := s.Sleep(third); err != nil {
			return err
		}
	}
	if err := s.SkewClock(victim, 0); err != nil {
		return err
	}
	return s.Sleep(max(3*time.Second, d-lead-2*third))
}

// sortedCopy returns a sorted copy of names.
func sortedCopy(names []string) []string {
	out := append([]string(nil), names...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
