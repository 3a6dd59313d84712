//go:build linux

package netns

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heureka/heureka/simulations"
)

// Fault injection: each method acts on the lab (lab.go) or on a process,
// updates the topology the checkers and clients read, and puts the fault
// on the timeline. fault and lifted mark the faults' window; FaultsOver
// closes it after Drive.

// Topology is the current reachability.
func (r *Run) Topology() *simulations.Topology { return r.topo.Load() }

func (r *Run) editTopo(edit func(t *simulations.Topology)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.topo.Load()
	t := &simulations.Topology{Down: copySet(old.Down), Stalled: copySet(old.Stalled)}
	for _, g := range old.Groups {
		t.Groups = append(t.Groups, slices.Clone(g))
	}
	edit(t)
	r.topo.Store(t)
}

func (r *Run) fault() { r.phases.Fault() }

func (r *Run) lifted() { r.phases.Lifted() }

// FaultsOver stops the churn and marks the end of the faults (the last
// lift) for the checkers. The harness calls it after Drive.
func (r *Run) FaultsOver() {
	mark := r.phases.FaultsOver()
	if mark == nil {
		return
	}
	r.rec.Mark(mark)
	r.Event("faults-end", "faults lifted and churn stopped; waiting for the cluster to settle")
}

// Figure records a measurement of a fault for the report.
func (r *Run) Figure(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.figures = append(r.figures, s)
	r.mu.Unlock()
	r.Event("figure", "%s", s)
}

// Partition cuts the nodes into groups (BPF filters on the bridge ports).
func (r *Run) Partition(groups ...[]string) error {
	r.fault()
	if err := r.lab.Partition(r.ctx, groups...); err != nil {
		return err
	}
	r.editTopo(func(t *simulations.Topology) { t.Groups = groups })
	var parts []string
	for _, g := range groups {
		parts = append(parts, strings.Join(g, ","))
	}
	r.Event("partition", "%s", strings.Join(parts, " | "))
	return nil
}

// Heal removes the partition.
func (r *Run) Heal() error {
	if err := r.lab.Heal(r.ctx); err != nil {
		return err
	}
	r.editTopo(func(t *simulations.Topology) { t.Groups = nil })
	r.lifted()
	r.Event("heal", "partition filters removed")
	return nil
}

// Kill SIGKILLs node's process.
func (r *Run) Kill(node string) error {
	r.fault()
	r.mu.Lock()
	p := r.procs[node]
	r.mu.Unlock()
	r.editTopo(func(t *simulations.Topology) { t.Down[node] = true })
	at := time.Now()
	if err := p.Kill(); err != nil {
		return err
	}
	r.rec.Crashed(node, at)
	r.Event("kill", "%s (pid %d) SIGKILLed", node, p.Pid())
	return nil
}

// Restart starts node's process again (same name and addresses, empty
// registry).
func (r *Run) Restart(node string) error {
	if err := r.startProc(node); err != nil {
		return err
	}
	r.editTopo(func(t *simulations.Topology) { delete(t.Down, node) })
	r.lifted()
	r.mu.Lock()
	p := r.procs[node]
	r.mu.Unlock()
	r.Event("restart", "%s started again (pid %d, incarnation %d)", node, p.Pid(), p.Incarnation)
	return nil
}

// Pause SIGSTOPs node's process.
func (r *Run) Pause(node string) error {
	r.fault()
	r.mu.Lock()
	p := r.procs[node]
	r.mu.Unlock()
	r.cutOff(node)
	if err := p.Pause(); err != nil {
		return err
	}
	r.Event("pause", "%s (pid %d) SIGSTOPped", node, p.Pid())
	return nil
}

// Resume SIGCONTs node's process.
func (r *Run) Resume(node string) error {
	r.mu.Lock()
	p := r.procs[node]
	r.mu.Unlock()
	if err := p.Resume(); err != nil {
		return err
	}
	r.reconnect(node)
	r.Event("resume", "%s SIGCONTed", node)
	return nil
}

// LinkDown takes node's link down: no one reaches it, it reaches no one.
func (r *Run) LinkDown(node string) error {
	r.fault()
	r.cutOff(node)
	if err := r.lab.LinkDown(r.ctx, node); err != nil {
		return err
	}
	r.Event("link-down", "%s's bridge port down", node)
	return nil
}

// LinkUp brings node's link back.
func (r *Run) LinkUp(node string) error {
	if err := r.lab.LinkUp(r.ctx, node); err != nil {
		return err
	}
	r.reconnect(node)
	r.Event("link-up", "%s's bridge port up", node)
	return nil
}

// cutOff marks node unreachable (paused or its link down): the observer
// stops asking it and the topology counts it down.
func (r *Run) cutOff(node string) {
	r.mu.Lock()
	r.unreached[node] = true
	r.mu.Unlock()
	r.editTopo(func(t *simulations.Topology) { t.Down[node] = true })
}

// reconnect undoes cutOff and marks the lift.
func (r *Run) reconnect(node string) {
	r.mu.Lock()
	delete(r.unreached, node)
	r.mu.Unlock()
	r.editTopo(func(t *simulations.Topology) { delete(t.Down, node) })
	r.lifted()
}

// SetLoss drops pct percent of the packets on every path between two
// hosts (nodes and the clients' namespace), each way (0 lifts it).
func (r *Run) SetLoss(pct int) error {
	if pct > 0 {
		r.fault()
	}
	for _, part := range append([]string{"c"}, r.lab.Nodes...) {
		if err := r.lab.SetLoss(r.ctx, part, pct); err != nil {
			return err
		}
	}
	if pct == 0 {
		r.lifted()
		r.Event("loss-end", "loss filters removed")
	} else {
		r.Event("loss", "%d%% of the packets dropped on every path, each way (every bridge port's egress)", pct)
	}
	return nil
}
