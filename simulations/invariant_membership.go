package simulations

// Property 4: once the faults are over, every running node sees exactly the
// running nodes (membership).

import (
	"fmt"
	"slices"
	"strings"
)

// CheckMembership checks property 4: within Thresholds.Membership of the
// end of the faults, every running node sees exactly the running nodes as
// live members (alive or suspect).
func CheckMembership(o *Observations, th Thresholds) Verdict {
	v := Verdict{Invariant: InvMembership, Property: 4,
		Threshold: fmt.Sprintf("every running node sees every other as live within %s of the end of the faults", secs(th.Membership))}
	from := o.settled()
	var last *Probe
	v.Key = noKey("membership time", "s")
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.At.Before(from) {
			continue
		}
		if p.MembersComplete() {
			d := p.At.Sub(from)
			v.Key = keySecs("membership time", d)
			v.Pass = d <= th.Membership
			v.Measured = fmt.Sprintf("complete %s after the faults (at %s), %d nodes", secs(d), o.offset(p.At), len(p.Up))
			if !v.Pass && last != nil {
				v.Details = append(v.Details, fmt.Sprintf("last incomplete probe at %s", o.offset(last.At)))
				v.Details = append(v.Details, membershipGaps(last)...)
			}
			return v
		}
		last = p
	}
	v.Measured = "never complete"
	if last != nil {
		v.Details = append(v.Details, membershipGaps(last)...)
	}
	return v
}

// membershipGaps says, for every running node of p that does not see
// exactly the running nodes, what it sees.
func membershipGaps(p *Probe) []string {
	var out []string
	for _, n := range p.Up {
		if !slices.Equal(p.Live[n], p.Up) {
			out = append(out, fmt.Sprintf("%s sees %s", n, strings.Join(p.Live[n], ",")))
		}
	}
	return out
}
