package netns

import (
	"bufio"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/heureka/heureka/simulations"
)

// A finding of these runs that the in-process simulations cannot show:
// their network never holds a request back.
//
// FindingLateRegistration: a node frozen by SIGSTOP still completes TCP
// handshakes and queues what clients send (the kernel does it). A client
// whose registration there times out fails over, registers on another node
// and later cancels (or dies and is evicted). When the frozen node wakes
// it serves the queued registration: it makes a new version of the
// instance, newer than the cancel's tombstone, which replicates and brings
// the instance back on every node until its lease runs out. The checker
// rightly calls that a resurrection (FAIL); the harness recognises it from
// the nodes' logs (a "registered" line for the instance after its client
// had stopped) so that the run reports it as this finding instead of
// failing make chaos-netns. Only no-resurrection verdicts whose every
// instance has such a late registration are explained.
const FindingLateRegistration = "late registration: a registration queued in the kernel of a frozen node " +
	"was served when the node woke, after its client had stopped, and outranked the cancel or eviction"

// logRegistration is a "registered" line of a node's log.
type logRegistration struct {
	Node, App, ID string
	At            time.Time
}

// parseRegistrations reads the "msg=registered" lines of a heureka text log.
func parseRegistrations(text string) []logRegistration {
	var out []logRegistration
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, " msg=registered ") {
			continue
		}
		var r logRegistration
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			switch k {
			case "time":
				r.At, _ = time.Parse(time.RFC3339Nano, v)
			case "node":
				r.Node = v
			case "app":
				r.App = v
			case "id":
				r.ID = v
			}
		}
		if !r.At.IsZero() && r.ID != "" {
			out = append(out, r)
		}
	}
	return out
}

// lateRegistrations finds, per instance id, the registrations a node logged
// while no client ran for the instance (after a life ended, before the
// next began), with evidence.
func lateRegistrations(o *simulations.Observations, regs []logRegistration) map[string]string {
	out := map[string]string{}
	sort.Slice(regs, func(i, j int) bool { return regs[i].At.Before(regs[j].At) })
	for _, r := range regs {
		l := o.Instances[r.ID]
		if l == nil || out[r.ID] != "" {
			continue
		}
		for i, lf := range l.Lives {
			if lf.End.IsZero() || !r.At.After(lf.End) {
				continue
			}
			if i+1 < len(l.Lives) && !r.At.Before(l.Lives[i+1].Start) {
				continue
			}
			out[r.ID] = fmt.Sprintf("%s registered on %s at +%.1fs, %.1fs after its client stopped (cancelled=%v)",
				r.ID, r.Node, r.At.Sub(o.Start).Seconds(), r.At.Sub(lf.End).Seconds(), lf.Deregistered)
		}
	}
	return out
}

// explainResurrections reports whether every instance a failed
// no-resurrection verdict names was registered late, and the evidence.
func explainResurrections(v simulations.Verdict, late map[string]string) ([]string, bool) {
	if v.Pass || v.Invariant != simulations.InvNoResurrection {
		return nil, false
	}
	var ids []string
	counted := 0
	for _, d := range v.Details {
		if strings.HasPrefix(d, "not counted:") {
			continue
		}
		counted++
		id, _, ok := strings.Cut(d, " ")
		if !ok {
			return nil, false
		}
		if late[id] == "" {
			return nil, false
		}
		if len(ids) == 0 || ids[len(ids)-1] != id {
			ids = append(ids, id)
		}
	}
	// The evidence is capped: every case the verdict counted must be in it.
	if len(ids) == 0 || float64(counted) < v.Key.Value {
		return nil, false
	}
	var ev []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			ev = append(ev, late[id])
		}
	}
	return ev, true
}
