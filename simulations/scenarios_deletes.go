package simulations

// Deletes that nothing brings back: scenarios whose story a client or the
// cluster's timers could once use to undo a cancel (long-lease).

import (
	"slices"
	"strings"
	"time"
)

// longLeaseApp is the application of long-lease's long-lease clients.
const longLeaseApp = "LEDGER"

// driveLongLease: long-lease clients (a lease of twice the split) next to
// every node, steady ones too; a split longer than the TTL; the long-lease
// clients of the majority side cancel a second into it. Their tombstones
// must outlive the minority's copies, whose leases still run at the heal.
func driveLongLease(s *Sim) error {
	t := s.Timers()
	d := s.Duration()
	split := max(fraction(d, 0.7, 0), t.TombstoneTTL+2*t.RenewalWindow+3*time.Second)
	leaseSecs := int(2 * split / time.Second)
	steady := s.NewClients(2, Apps)
	var long []*Client
	for _, n := range s.Cluster().Names() {
		long = append(long, s.newClientWithLease(longLeaseApp, n, leaseSecs))
	}
	if err := s.WaitRegistered(append(slices.Clone(steady), long...), registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients and %d with a %ds lease registered (tombstone TTL %s)",
		len(steady), len(long), leaseSecs, t.TombstoneTTL)
	if err := s.Sleep(2*t.RenewalWindow + s.Between(0, 500*time.Millisecond)); err != nil {
		return err
	}
	minority, majority := s.split()
	s.Partition(minority, majority)
	healAt := time.Now().Add(split)
	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	var cancel []*Client
	for _, cl := range long {
		if slices.Contains(majority, cl.Location) {
			cancel = append(cancel, cl)
		}
	}
	s.StopClients(cancel, true)
	s.Event("deletes", "on the {%s} side %s cancelled", strings.Join(majority, ","), clientIDs(cancel))
	if err := s.Sleep(time.Until(healAt)); err != nil {
		return err
	}
	s.Heal()
	return s.Sleep(max(5*time.Second, d-split))
}
