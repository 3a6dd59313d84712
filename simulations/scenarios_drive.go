package simulations

// What the scenarios' Drive functions share: the churn of the fault
// scenarios, phase lengths, seeded choices of clients, and waiting for
// self-preservation to let go.

import (
	"strings"
	"time"
)

// fraction returns d·f, but at least lo.
func fraction(d time.Duration, f float64, lo time.Duration) time.Duration {
	return max(lo, time.Duration(float64(d)*f))
}

// standardChurn is the churn of the fault scenarios.
func standardChurn(every time.Duration) ChurnSpec {
	return ChurnSpec{Every: every, MinLife: 2 * time.Second, MaxLife: 5 * time.Second, Silent: 0.25, Apps: Apps}
}

// steadyClients starts perNode clients next to each node (NewClients), waits
// until they have registered and notes it on the timeline.
func (s *Sim) steadyClients(perNode int) ([]*Client, error) {
	steady := s.NewClients(perNode, Apps)
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return nil, err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	return steady, nil
}

// shuffledClients returns a seeded permutation of cs.
func (s *Sim) shuffledClients(cs []*Client) []*Client {
	out := append([]*Client(nil), cs...)
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	s.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

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

// allReleased reports whether, in the latest probe, every node that
// expects renewals lets leases expire.
func (s *Sim) allReleased() bool {
	p := s.rec.LastProbe()
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
