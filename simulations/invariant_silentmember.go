package simulations

// Property 5: a member whose outbound traffic is blocked holds every
// owner's eviction for the silent-member bound at most, and the hold shows
// on every other node meanwhile (silent-member-bound).

import (
	"fmt"
	"time"

	"github.com/heureka/heureka/cluster"
)

// silentBound is the nodes' SilentMemberBound under t (the default: a
// number of LoadIntervals).
func silentBound(t Timers) time.Duration { return cluster.DefaultSilentMemberFactor * t.LoadInterval }

// CheckSilentMemberBound checks the silent-member scenario: every client
// killed during the block is gone from every node within
// Thresholds.EvictionLatency plus the silent-member bound of its last
// renewal, and every other node showed the hold while it had to be on.
func CheckSilentMemberBound(o *Observations, th Thresholds) Verdict {
	bound := th.EvictionLatency + silentBound(o.Timers)
	v := Verdict{Invariant: InvSilentMemberBound, Property: 5,
		Threshold: fmt.Sprintf("each client killed during the block gone from every node within %s (lease + eviction interval + 1s + the silent-member bound) of its last renewal; "+
			"the hold shown on every other node while it lasts", secs(bound)),
		Key: noKey("worst eviction", "s")}
	seen, unseen := 0, 0
	for _, ev := range o.Timeline {
		switch ev.Kind {
		case "hold-seen":
			seen++
		case "hold-unseen":
			unseen++
			v.Details = append(v.Details, ev.Detail)
		}
	}
	if len(o.CrashedIDs) == 0 {
		v.Measured = "no client was killed"
		return v
	}
	idx := o.sampleIndex()
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	var worst time.Duration
	over := 0
	for _, id := range o.CrashedIDs {
		var lf *Life
		var app string
		for _, l := range o.Instances {
			if l.ID == id && len(l.Lives) > 0 {
				lf, app = &l.Lives[len(l.Lives)-1], l.App
			}
		}
		if lf == nil {
			continue
		}
		last := lastRenewal(lf)
		for _, n := range o.Nodes {
			gone := time.Time{}
			for _, smp := range idx[[2]string{n, app}] {
				if smp.At.Before(lf.End) || smp.IDs == nil || !smp.Ready {
					continue
				}
				if smp.At.After(end) {
					break
				}
				if !smp.IDs[id] {
					gone = smp.At
					break
				}
			}
			d := end.Sub(last)
			if !gone.IsZero() {
				d = gone.Sub(last)
			}
			worst = max(worst, d)
			if d > bound {
				over++
				if len(v.Details) < maxDetails {
					v.Details = append(v.Details, fmt.Sprintf("%s on %s: last renewal at %s, listed %s after it", id, n, o.offset(last), secs(d)))
				}
			}
		}
	}
	v.Pass = over == 0 && unseen == 0 && seen > 0
	v.Key = keySecs("worst eviction", worst)
	v.Measured = fmt.Sprintf("%d killed clients, worst %s from last renewal to gone on a node, %d (instance, node) pairs over the bound; hold seen in %d readings, missing on %d nodes",
		len(o.CrashedIDs), secs(worst), over, seen, unseen)
	return v
}
