package simulations

// Property 2: once the faults are over, every running node holds the same
// registry (convergence).

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// CheckConvergence checks property 2: within Thresholds.Convergence of the
// end of the faults (of the churn, when there were none), every running
// node is ready and holds the same registry (apps hashcode and every
// instance's version), and the nodes still agree at the end of the quiet
// phase (some probe of its last two seconds converged).
func CheckConvergence(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvConvergence, Property: 2,
		Threshold: fmt.Sprintf("all running nodes hold the same registry within %s of the end of the faults, and still at the end", secs(th.Convergence))}
	from := o.settled()
	var first *Probe
	stillAtEnd := false
	var last *Probe
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(from) || (!o.QuietEnd.IsZero() && p.At.After(o.QuietEnd)) {
			continue
		}
		last = p
		if p.Converged() {
			if first == nil {
				first = p
			}
			if !o.QuietEnd.IsZero() && o.QuietEnd.Sub(p.At) <= 2*time.Second {
				stillAtEnd = true
			}
		}
	}
	v.Key = noKey("convergence time", "s")
	if first == nil {
		v.Measured = "never converged"
		v.Details = append(v.Details, describeDivergence(last)...)
		return v
	}
	d := first.At.Sub(from)
	v.Key = keySecs("convergence time", d)
	v.Pass = d <= th.Convergence && stillAtEnd
	v.Measured = fmt.Sprintf("converged %s after the faults (at %s), %d instances", secs(d), o.offset(first.At),
		strings.Count(first.Fingerprint[first.Up[0]], "|"))
	if !stillAtEnd {
		v.Measured += "; diverged again before the end"
		v.Details = append(v.Details, describeDivergence(last)...)
	}
	return v
}

// describeDivergence groups the nodes of p by the registry they hold.
func describeDivergence(p *Probe) []string {
	if p == nil {
		return []string{"no probe after the faults"}
	}
	groups := map[string][]string{}
	for _, n := range p.Up {
		fp := p.Fingerprint[n]
		if !p.Ready[n] {
			fp = "(not ready) " + fp
		}
		groups[fp] = append(groups[fp], n)
	}
	var out []string
	for fp, nodes := range groups {
		hash := fp
		if i := strings.IndexByte(hash, '|'); i >= 0 {
			hash = hash[:i]
		}
		out = append(out, fmt.Sprintf("%s hold %d instances, hashcode %q", strings.Join(nodes, ","), strings.Count(fp, "|"), hash))
	}
	sort.Strings(out)
	return out
}
