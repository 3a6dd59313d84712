//go:build linux

package netns

import (
	"fmt"
	"slices"
	"time"
)

// What Drive uses besides clients and faults: the node names, the
// timeline, cancellable sleeps and the run's seeded randomness, and a few
// read-only views of the lab (addresses, pids, TCP counters, ping).

// Nodes are the node names.
func (r *Run) Nodes() []string { return slices.Clone(r.lab.Nodes) }

// Event puts an entry on the timeline.
func (r *Run) Event(kind, format string, args ...any) {
	r.rec.Event(kind, fmt.Sprintf(format, args...))
	if r.cfg.PanicAt != "" && kind == r.cfg.PanicAt {
		panic(fmt.Sprintf("netns: forced panic at %s in %s (PanicAt)", kind, r.sc.Name))
	}
}

// Sleep waits d, or returns an error when the run is cancelled.
func (r *Run) Sleep(d time.Duration) error {
	if !sleepCtx(r.ctx, d) {
		return r.ctx.Err()
	}
	return nil
}

// IntN draws from the run's seeded source.
func (r *Run) IntN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.IntN(n)
}

// Between draws a duration in [lo, hi).
func (r *Run) Between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.IntN(int(hi-lo)+1))
}

// Shuffled returns names in a seeded random order.
func (r *Run) Shuffled(names []string) []string {
	out := slices.Clone(names)
	r.mu.Lock()
	r.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	r.mu.Unlock()
	return out
}

// Ping pings ip count times from the namespace of part ("c", "n0", …).
func (r *Run) Ping(part, ip string, count int, interval time.Duration) (sent, received int, err error) {
	return r.lab.Ping(r.ctx, part, ip, count, interval)
}

// Pids are the heureka processes started so far.
func (r *Run) Pids() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pids)
}

// NodeTCPCounters sums the TCP counters of every node's namespace (see
// Lab.TCPCounters).
func (r *Run) NodeTCPCounters() (map[string]int64, error) {
	sum := map[string]int64{}
	for _, n := range r.lab.Nodes {
		m, err := r.lab.TCPCounters(r.ctx, n)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			sum[k] += v
		}
	}
	return sum, nil
}

// IP is node's address.
func (r *Run) IP(node string) string { return r.lab.IP(node) }
