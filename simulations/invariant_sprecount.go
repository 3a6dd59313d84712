package simulations

// Property 5 after a scale-down: self-preservation releases by itself within
// a recount interval, and the dead are then evicted (sp-recount-release).

import (
	"fmt"
	"time"

	"github.com/heureka/heureka/actors"
)

// CheckSPRecountRelease checks property 5 after a scale-down: once part of
// the fleet died silently for good (Observations.ClientsCrashed, with no
// recovery), every node that expected renewals engages self-preservation
// within Thresholds.SPEngage, releases it by itself within one
// RecountInterval plus Thresholds.SPRecountSlack of engaging (the measured
// rate becomes the expectation), does not engage again, and the dead
// instances are gone from every node within Thresholds.EvictAfterRelease of
// the last release.
func CheckSPRecountRelease(o *Observations, th Thresholds) Verdict {
	recount := o.Timers.RecountInterval
	bound := recount + th.SPRecountSlack
	v := Verdict{Invariant: InvSPRecount, Property: 5,
		Threshold: fmt.Sprintf("after silent deaths for good: engages within %s, releases by itself within %s of engaging (recount interval %s + %s), "+
			"never engages again, and the dead are gone from every node within %s of the last release",
			secs(th.SPEngage), secs(bound), secs(recount), secs(th.SPRecountSlack), secs(th.EvictAfterRelease)),
		Key: noKey("release after engaging", "s")}
	crash := o.ClientsCrashed
	if crash.IsZero() || len(o.CrashedIDs) == 0 {
		v.Measured = "no clients died for good in this run"
		return v
	}
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	pre, affected := spAffected(o, crash)
	if pre == nil {
		v.Measured = "no probe before the deaths"
		return v
	}
	if len(affected) == 0 {
		v.Measured = "no node expected renewals before the deaths"
		return v
	}
	ok := true
	var worstEngage, worstRelease time.Duration
	var lastRelease time.Time
	var figures []string
	for _, n := range affected {
		var engagedAt, releasedAt, againAt time.Time
		var atEngage, atRelease actors.SelfPreservationStatus
		for i := range o.Probes {
			p := &o.Probes[i]
			sp, present := p.SP[n]
			if !present || p.At.Before(crash) || p.At.After(end) {
				continue
			}
			switch e := spEngaged(sp); {
			case engagedAt.IsZero():
				if e {
					engagedAt, atEngage = p.At, sp
				}
			case releasedAt.IsZero():
				if !e {
					releasedAt, atRelease = p.At, sp
				}
			case againAt.IsZero() && e:
				againAt = p.At
				v.Details = append(v.Details, fmt.Sprintf("%s engaged again at %s, %s after it released: %s",
					n, o.offset(p.At), secs(p.At.Sub(releasedAt)), spReading(sp)))
			}
		}
		fig := n + ": "
		if engagedAt.IsZero() {
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s never engaged self-preservation after %d of its expected clients died", n, len(o.CrashedIDs)))
			figures = append(figures, fig+"never engaged")
			continue
		}
		d := engagedAt.Sub(crash)
		worstEngage = max(worstEngage, d)
		fig += fmt.Sprintf("engaged %s after the deaths (%s)", secs(d), spReading(atEngage))
		if d > th.SPEngage {
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s engaged only %s after the deaths", n, secs(d)))
		}
		if releasedAt.IsZero() {
			ok = false
			held := end.Sub(engagedAt)
			worstRelease = max(worstRelease, held)
			v.Details = append(v.Details, fmt.Sprintf("%s still engaged at the end, %s after engaging at %s (bound %s)",
				n, secs(held), o.offset(engagedAt), secs(bound)))
			figures = append(figures, fig+", never released")
			continue
		}
		r := releasedAt.Sub(engagedAt)
		worstRelease = max(worstRelease, r)
		if releasedAt.After(lastRelease) {
			lastRelease = releasedAt
		}
		fig += fmt.Sprintf(", released %s later (%s)", secs(r), spReading(atRelease))
		if r > bound {
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s released only %s after engaging at %s (bound %s)", n, secs(r), o.offset(engagedAt), secs(bound)))
		}
		if !againAt.IsZero() {
			ok = false
		}
		figures = append(figures, fig)
	}
	// The dead: when each was gone for good from every node (the start of
	// the trailing run of ready samples without it), or still there.
	idx := o.sampleIndex()
	var worstGone time.Duration
	gone, left := 0, 0
	for _, id := range o.CrashedIDs {
		l := o.Instances[id]
		if l == nil {
			continue
		}
		var goneAt time.Time
		still := ""
		for _, n := range o.Nodes {
			var firstAbsent time.Time
			var last *Sample
			for _, smp := range idx[[2]string{n, l.App}] {
				if smp.At.Before(crash) || smp.At.After(end) || smp.IDs == nil || !smp.Ready {
					continue
				}
				last = smp
				if smp.IDs[id] {
					firstAbsent = time.Time{}
				} else if firstAbsent.IsZero() {
					firstAbsent = smp.At
				}
			}
			if last == nil {
				continue
			}
			if last.IDs[id] {
				still = n
				break
			}
			if firstAbsent.After(goneAt) {
				goneAt = firstAbsent
			}
		}
		if still != "" {
			left++
			ok = false
			v.Details = append(v.Details, fmt.Sprintf("%s (died silently at %s) still on %s at the end", id, o.offset(crash), still))
			continue
		}
		gone++
		if !lastRelease.IsZero() {
			d := goneAt.Sub(lastRelease)
			worstGone = max(worstGone, d)
			if d > th.EvictAfterRelease {
				ok = false
				v.Details = append(v.Details, fmt.Sprintf("%s gone from every node only at %s, %s after the last release at %s",
					id, o.offset(goneAt), secs(d), o.offset(lastRelease)))
			}
		}
	}
	v.Pass = ok
	v.Key = keySecs("release after engaging", worstRelease)
	v.Measured = fmt.Sprintf("engaged within %s of the deaths, released within %s of engaging (worst node); "+
		"%d of %d dead gone from every node, at worst %s after the last release; %d left",
		secs(worstEngage), secs(worstRelease), gone, len(o.CrashedIDs), secs(worstGone), left)
	v.Details = append(v.Details, figures...)
	return v
}
