package simulations

// Property 5: clients that die without cancelling are evicted promptly
// everywhere (eviction-latency).

import (
	"fmt"
	"time"
)

// CheckEvictionLatency checks that a client that dies without cancelling is
// expired promptly everywhere (property 5: self-preservation must not
// stick): over every (silently dead instance, node) pair, the 99th
// percentile of the time from the client's last successful renewal until
// the node's first ready sample without the instance is at most
// Thresholds.EvictionLatency. A node still listing it when observation ends
// counts with the time until then, if that is already over the bound (else
// it is left out: too close to the end to judge). A node that served
// nothing between its last sample listing the instance and its first
// without it (it was stopped for a restart) is judged at the sample after
// the last one listing it: a stopped node serves no stale instance. Lives
// followed by a restart under the same id are left out.
func CheckEvictionLatency(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvEvictionLatency, Property: 5,
		Threshold: fmt.Sprintf("p99 of last renewal → first sample of each node without a silently dead client's instance ≤ %s", secs(th.EvictionLatency)),
		Key:       noKey("p99 eviction latency", "s")}
	idx := o.sampleIndex()
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	var cases []latencyCase
	dead := 0
	for _, l := range o.sortedInstances() {
		for i := range l.Lives {
			lf := &l.Lives[i]
			if lf.Deregistered || lf.End.IsZero() || lf.Acked.IsZero() || i+1 < len(l.Lives) || !lf.End.Before(end) {
				continue
			}
			dead++
			last := lastRenewal(lf)
			for _, n := range o.Nodes {
				var absent, listed time.Time
				observed := false
				for _, smp := range idx[[2]string{n, l.App}] {
					if smp.At.Before(lf.End) || smp.IDs == nil || !smp.Ready {
						continue
					}
					if smp.At.After(end) {
						break
					}
					observed = true
					if !smp.IDs[l.ID] {
						absent = smp.At
						break
					}
					listed = smp.At
				}
				from := listed
				if from.IsZero() {
					from = lf.End
				}
				if gap := 2 * o.SampleInterval; !absent.IsZero() && gap > 0 && absent.Sub(from) > gap {
					// The node served nothing in between (it was stopped
					// for a restart): it last served the instance at
					// from, and a sample later it would have been judged.
					absent = from.Add(o.SampleInterval)
					if absent.Before(last) {
						absent = last
					}
				}
				switch {
				case !absent.IsZero():
					cases = append(cases, latencyCase{id: l.ID, node: n, from: last, d: absent.Sub(last)})
				case observed && end.Sub(last) > th.EvictionLatency:
					cases = append(cases, latencyCase{id: l.ID, node: n, from: last, d: end.Sub(last), censored: true})
				}
			}
		}
	}
	if len(cases) == 0 {
		v.Measured = fmt.Sprintf("nothing to judge: %d silently dead clients, none observed afterwards", dead)
		return v
	}
	ds := sortCases(cases)
	p50, p99, worst := percentile(ds, 0.5), percentile(ds, 0.99), ds[len(ds)-1]
	over, stuck := 0, 0
	for _, c := range cases {
		if c.d > th.EvictionLatency {
			over++
		}
		if c.censored {
			stuck++
		}
	}
	v.Pass = p99 <= th.EvictionLatency
	v.Key = keySecs("p99 eviction latency", p99)
	v.Measured = fmt.Sprintf("p50 %s, p99 %s, max %s over %d (instance, node) pairs of %d silently dead clients; %d over the bound, %d still listed at the end",
		secs(p50), secs(p99), secs(worst), len(cases), dead, over, stuck)
	for i, c := range cases {
		if i == maxDetails || c.d <= th.EvictionLatency/2 {
			break
		}
		how := "until its first sample without it"
		if c.censored {
			how = "and still listed when observation ended"
		}
		v.Details = append(v.Details, fmt.Sprintf("%s on %s: last renewal at %s, %s %s", c.id, c.node, o.offset(c.from), secs(c.d), how))
	}
	return v
}
