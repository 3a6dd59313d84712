package simulations

// A node's wall clock set minutes off (clock-skew).

import (
	"time"
)

// clockSkew is how far clock-skew sets a node's wall clock off: minutes,
// beyond the HLC's one-minute tolerance for readings from the future.
const clockSkew = 3 * time.Minute

// driveClockSkew: one node's wall clock runs minutes ahead for a third of
// the phase, then minutes behind for a third, then right again, under
// churn.
func driveClockSkew(s *Sim) error {
	if _, err := s.steadyClients(3); err != nil {
		return err
	}
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
