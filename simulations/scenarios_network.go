package simulations

// Scenarios of a degraded network: loss and delay (lossy-network), loss of
// one node's outgoing packets (one-way-loss), and a node that stops reading
// its streams (slow-peer).

import (
	"time"
)

// driveLossy: loss and delay while clients churn.
func driveLossy(s *Sim) error {
	if _, err := s.steadyClients(4); err != nil {
		return err
	}
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

// driveOneWayLoss: 40% of the packets one node sends to the others are
// lost (its incoming packets and every stream are not), under churn.
func driveOneWayLoss(s *Sim) error {
	if _, err := s.steadyClients(3); err != nil {
		return err
	}
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

// driveSlowPeer: one node stops reading its streams (memnet.Network.Stall)
// while clients churn; it keeps gossiping, so the others keep it as a live
// member and keep sending to it.
func driveSlowPeer(s *Sim) error {
	if _, err := s.steadyClients(3); err != nil {
		return err
	}
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
