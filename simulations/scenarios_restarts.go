package simulations

// Scenarios of nodes that stop and come back as fresh processes: an owner
// crash (owner-crash), a restart just before an eviction
// (restart-during-eviction), and every node in turn (rolling-restart,
// rolling-restart-quiet).

import (
	"context"
	"fmt"
	"time"
)

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

// driveRollingRestart: every node in turn stops gracefully and comes back
// as a fresh process, under steady clients; a new client registers while
// each node is down.
func driveRollingRestart(s *Sim) error {
	return rollingRestart(s, 3, func(_ []*Client, _ int, n string, names []string) {
		var others []string
		for _, o := range names {
			if o != n {
				others = append(others, o)
			}
		}
		nc := s.NewClient(Apps[s.IntN(len(Apps))], others[s.IntN(len(others))])
		s.Event("register", "%s registers next to %s while %s is down", nc.ID, nc.Location, n)
	})
}

// rollingRestart registers clients steady clients, then stops every node
// in turn gracefully and brings it back as a fresh process; whileDown runs
// while the i-th node, n, is down. After each restart it waits until the
// cluster agrees again (or the convergence bound passed) before the next,
// and it runs for the scenario's duration.
func rollingRestart(s *Sim, clients int, whileDown func(steady []*Client, i int, n string, names []string)) error {
	steady, err := s.steadyClients(clients)
	if err != nil {
		return err
	}
	begin := time.Now()
	if err := s.Sleep(s.Between(time.Second, 2*time.Second)); err != nil {
		return err
	}
	names := s.Cluster().Names()
	for i, n := range s.Shuffled(names) {
		if err := s.StopNode(n, "(rolling restart)"); err != nil {
			return err
		}
		whileDown(steady, i, n, names)
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
		if p := s.rec.LastProbe(); p != nil && p.At.After(since) && p.Converged() && p.MembersComplete() &&
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

// driveRollingRestartQuiet: driveRollingRestart with one client killed
// after the first stop; five clients per node, so that the one killed is
// well within self-preservation's 15%.
func driveRollingRestartQuiet(s *Sim) error {
	return rollingRestart(s, 5, func(steady []*Client, i int, _ string, _ []string) {
		if i == 1 {
			victim := steady[s.IntN(len(steady))]
			s.KillClients([]*Client{victim})
		}
	})
}
