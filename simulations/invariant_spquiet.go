package simulations

// Property 5 in a healthy cluster: self-preservation stays off (sp-quiet).

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/heureka/heureka/actors"
)

// CheckSPQuiet checks property 5 in a cluster without faults:
// self-preservation is engaged in at most Thresholds.SPMaxEngagedShare of
// the probes of nodes that expect renewals, counted from two renewal
// windows after the warm-up (Observations.SteadyAt: the first full window
// after the first clients registered) until the teardown.
func CheckSPQuiet(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvSPQuiet, Property: 5,
		Threshold: fmt.Sprintf("self-preservation engaged in at most %.1f%% of the probes of nodes that expect renewals, from two renewal windows after the warm-up until the teardown",
			th.SPMaxEngagedShare*100),
		Key: noKey("engaged share", "%")}
	from := o.SteadyAt
	if from.IsZero() {
		from = o.Start
	}
	return engagedShare(o, th, v, from.Add(2*o.Timers.RenewalWindow))
}

// engagedShare judges v on the share of probes, from from until the
// teardown, in which self-preservation was engaged on nodes that expect
// renewals: at most Thresholds.SPMaxEngagedShare (sp-quiet, sp-after-heal).
func engagedShare(o *Observations, th Thresholds, v Verdict, from time.Time) Verdict {
	end := o.QuietEnd
	if end.IsZero() {
		end = o.End
	}
	type run struct {
		node      string
		from, to  time.Time
		reading   actors.SelfPreservationStatus
		held, ran int // instances the node held, clients running
	}
	var runs []run
	open := map[string]*run{}
	closeRun := func(n string, at time.Time) {
		if r := open[n]; r != nil {
			r.to = at
			runs = append(runs, *r)
			delete(open, n)
		}
	}
	total, engaged := 0, 0
	var last time.Time
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(from) || p.At.After(end) {
			continue
		}
		last = p.At
		for _, n := range o.Nodes {
			sp, ok := p.SP[n]
			if !ok || !sp.Enabled || sp.Expected == 0 {
				closeRun(n, p.At)
				continue
			}
			total++
			if !spEngaged(sp) {
				closeRun(n, p.At)
				continue
			}
			engaged++
			if open[n] == nil {
				open[n] = &run{node: n, from: p.At, reading: sp, held: strings.Count(p.Fingerprint[n], "|"), ran: o.runningAt(p.At)}
			}
		}
	}
	for _, n := range o.Nodes {
		closeRun(n, last)
	}
	if total == 0 {
		v.Measured = "no probe of a node expecting renewals after the warm-up"
		return v
	}
	share := float64(engaged) / float64(total)
	sort.Slice(runs, func(i, j int) bool { return runs[i].to.Sub(runs[i].from) > runs[j].to.Sub(runs[j].from) })
	var longest time.Duration
	if len(runs) > 0 {
		longest = runs[0].to.Sub(runs[0].from)
	}
	v.Pass = share <= th.SPMaxEngagedShare
	v.Key = KeyFigure{Name: "engaged share", Value: share * 100, Unit: "%"}
	v.Measured = fmt.Sprintf("engaged in %.2f%% of %d node-probes from %s: %d engagements, longest %s",
		share*100, total, o.offset(from), len(runs), secs(longest))
	for i, r := range runs {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, fmt.Sprintf("%s engaged from %s for %s, holding %d instances while %d clients ran: %s",
			r.node, o.offset(r.from), secs(r.to.Sub(r.from)), r.held, r.ran, spReading(r.reading)))
	}
	return v
}

// runningAt counts the clients registered and running at t.
func (o *Observations) runningAt(t time.Time) int {
	n := 0
	for _, l := range o.Instances {
		for _, lf := range l.Lives {
			if !lf.Acked.IsZero() && !lf.Acked.After(t) && (lf.End.IsZero() || lf.End.After(t)) {
				n++
			}
		}
	}
	return n
}
