package simulations

// Property 2, per restart: after every restart the nodes agree again
// (restart-convergence).

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// CheckRestartConvergence (property 2, per restart): after every restart
// on the timeline, a probe finds every node up and ready, holding the same
// registry and seeing every other, within Thresholds.Convergence of the
// restart. Its key figure is the slowest agreement.
func CheckRestartConvergence(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvRestartConvergence, Property: 2,
		Threshold: fmt.Sprintf("after every restart, all nodes ready, agreeing and fully connected within %v", th.Convergence)}
	var worst time.Duration
	restarts, failed := 0, 0
	for _, ev := range o.Timeline {
		if ev.Kind != "restart" {
			continue
		}
		restarts++
		at := o.Start.Add(ev.At)
		took := time.Duration(-1)
		var last *Probe // the last disagreeing probe
		for i := range o.Probes {
			p := &o.Probes[i]
			if p.At.Before(at) {
				continue
			}
			if len(p.Up) == len(o.Nodes) && p.Converged() && p.MembersComplete() {
				took = p.At.Sub(at)
				break
			}
			last = p
		}
		switch {
		case took < 0:
			failed++
			v.Details = append(v.Details, fmt.Sprintf("restart at %s (%s): never agreed again%s", o.offset(at), ev.Detail, disagreement(o, last)))
			worst = max(worst, o.End.Sub(at))
		case took > th.Convergence:
			failed++
			v.Details = append(v.Details, fmt.Sprintf("restart at %s (%s): agreed only %s later%s", o.offset(at), ev.Detail, secs(took), disagreement(o, last)))
			worst = max(worst, took)
		default:
			worst = max(worst, took)
		}
	}
	if len(v.Details) > maxDetails {
		v.Details = v.Details[:maxDetails]
	}
	v.Pass = restarts > 0 && failed == 0
	v.Measured = fmt.Sprintf("%d restarts, slowest agreement %s, %d over the bound", restarts, secs(worst), failed)
	if restarts == 0 {
		v.Measured = "no restart on the timeline"
	}
	v.Key = KeyFigure{Name: "slowest agreement after a restart", Unit: "s", Value: worst.Seconds()}
	return v
}

// disagreement says what p (the last probe before the nodes agreed) found
// wrong: nodes down or not ready, members a node does not see, registries
// that differ from the majority's.
func disagreement(o *Observations, p *Probe) string {
	if p == nil {
		return ""
	}
	var why []string
	for _, n := range o.Nodes {
		if !slices.Contains(p.Up, n) {
			why = append(why, n+" down")
		}
	}
	count := map[string]int{}
	for _, n := range p.Up {
		count[p.Fingerprint[n]]++
	}
	major := ""
	for fp, c := range count {
		if c > count[major] {
			major = fp
		}
	}
	for _, n := range p.Up {
		if !p.Ready[n] {
			why = append(why, n+" not ready")
		}
		if p.Fingerprint[n] != major {
			why = append(why, n+"'s registry differs")
		}
		var missing []string
		for _, m := range p.Up {
			if !slices.Contains(p.Live[n], m) {
				missing = append(missing, m)
			}
		}
		if len(missing) > 0 {
			why = append(why, fmt.Sprintf("%s does not see %s", n, strings.Join(missing, ",")))
		}
	}
	return fmt.Sprintf("; at %s: %s", o.offset(p.At), strings.Join(why, "; "))
}
