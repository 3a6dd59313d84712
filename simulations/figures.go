package simulations

// Figures a run reports beside its verdicts (Result.Silent, Result.SP):
// measured, not judged.

import (
	"time"
)

// SilentFigures describe the eviction of the instances whose clients died
// without cancelling and never came back.
type SilentFigures struct {
	// Died counts those instances (clients that died before the teardown).
	Died int
	// Evicted counts those gone from every node's last sample before the
	// teardown.
	Evicted int
	// MaxLatency is the longest time from a client's death until the first
	// sample of a node without its instance, over the evicted ones.
	MaxLatency time.Duration
}

// silentFigures computes SilentFigures from the samples. It is a figure,
// not an invariant: the lease duration plus the eviction interval is the
// expected latency, but self-preservation may rightly stretch it.
func silentFigures(o *Observations) SilentFigures {
	var f SilentFigures
	idx := o.sampleIndex()
	for _, l := range o.sortedInstances() {
		if len(l.Lives) == 0 {
			continue
		}
		lf := l.Lives[len(l.Lives)-1]
		if lf.Deregistered || lf.End.IsZero() || lf.Acked.IsZero() || (!o.QuietEnd.IsZero() && !lf.End.Before(o.QuietEnd)) {
			continue
		}
		f.Died++
		gone, seen := true, false
		var latency time.Duration
		for _, n := range o.Nodes {
			var last *Sample
			var firstAbsent time.Time
			for _, s := range idx[[2]string{n, l.App}] {
				if s.At.Before(lf.End) || s.IDs == nil || !s.Ready || (!o.QuietEnd.IsZero() && s.At.After(o.QuietEnd)) {
					continue
				}
				last = s
				if s.IDs[l.ID] {
					firstAbsent = time.Time{}
				} else if firstAbsent.IsZero() {
					firstAbsent = s.At
				}
			}
			if last == nil {
				continue
			}
			seen = true
			if last.IDs[l.ID] {
				gone = false
			} else {
				latency = max(latency, firstAbsent.Sub(lf.End))
			}
		}
		if seen && gone {
			f.Evicted++
			f.MaxLatency = max(f.MaxLatency, latency)
		}
	}
	return f
}

// SPFigures describe self-preservation over a run, on the nodes that
// expected renewals, from their first counted renewal window until the
// teardown.
type SPFigures struct {
	// EngagedShare is the share of such node-probes with self-preservation
	// engaged (leases may not expire).
	EngagedShare float64
	// Transitions counts engage and release switches.
	Transitions int
}

// spFigures computes SPFigures from the probes.
func spFigures(o *Observations) SPFigures {
	var f SPFigures
	counted := map[string]bool{}
	last := map[string]bool{}
	engaged, total := 0, 0
	for i := range o.Probes {
		p := &o.Probes[i]
		if !o.QuietEnd.IsZero() && p.At.After(o.QuietEnd) {
			break
		}
		for _, n := range p.Up {
			sp, ok := p.SP[n]
			if !ok || !sp.Enabled {
				continue
			}
			if sp.RenewsLastWindow > 0 {
				counted[n] = true
			}
			if !counted[n] || sp.Expected == 0 {
				continue
			}
			total++
			if !sp.ExpirationEnabled {
				engaged++
			}
			if prev, seen := last[n]; seen && prev != sp.ExpirationEnabled {
				f.Transitions++
			}
			last[n] = sp.ExpirationEnabled
		}
	}
	if total > 0 {
		f.EngagedShare = float64(engaged) / float64(total)
	}
	return f
}
