package simulations

import (
	"time"

	"github.com/heureka/heureka/actors"
)

// history builds Observations by hand: one node list, a start time, and
// helpers to add lives, samples and probes at offsets.
type history struct {
	o *Observations
}

func newHistory(nodes ...string) *history {
	start := time.Unix(1_700_000_000, 0)
	return &history{o: &Observations{
		Start: start, Nodes: nodes, SampleInterval: 200 * time.Millisecond,
		Instances: map[string]*InstanceLog{}, QuietEnd: start.Add(60 * time.Second), End: start.Add(61 * time.Second),
	}}
}

func (h *history) at(sec float64) time.Time {
	return h.o.Start.Add(time.Duration(sec * float64(time.Second)))
}

// life adds a life of id from start to end seconds (end < 0: still running).
func (h *history) life(app, id, loc string, start, end float64, deregistered bool) {
	l := h.o.Instances[id]
	if l == nil {
		l = &InstanceLog{App: app, ID: id, Location: loc}
		h.o.Instances[id] = l
	}
	lf := Life{Start: h.at(start), Acked: h.at(start + 0.01), Deregistered: deregistered}
	if end >= 0 {
		lf.End = h.at(end)
	}
	l.Lives = append(l.Lives, lf)
}

// samples adds samples of app on node every 200ms in [from, to) seconds;
// present says whether id is listed at a time.
func (h *history) samples(node, app string, from, to float64, topo *Topology, ids func(sec float64) []string) {
	for i := 0; from+float64(i)*0.2 < to; i++ {
		sec := from + float64(i)*0.2
		set := map[string]bool{}
		for _, id := range ids(sec) {
			set[id] = true
		}
		h.o.Samples = append(h.o.Samples, Sample{At: h.at(sec), Node: node, App: app, Incarnation: 1, Ready: true, Topo: topo, IDs: set})
	}
}

// probes adds probes every 100ms in [from, to) seconds built by fn.
func (h *history) probes(from, to float64, fn func(sec float64, p *Probe)) {
	for i := 0; from+float64(i)*0.1 < to; i++ {
		sec := from + float64(i)*0.1
		p := Probe{At: h.at(sec), Ready: map[string]bool{}, Fingerprint: map[string]string{},
			Live: map[string][]string{}, SP: map[string]actors.SelfPreservationStatus{}}
		for _, n := range h.o.Nodes {
			p.Up = append(p.Up, n)
			p.Ready[n] = true
			p.Fingerprint[n] = "UP_1_|APP/a@1.n0"
			p.Live[n] = h.o.Nodes
		}
		fn(sec, &p)
		h.o.Probes = append(h.o.Probes, p)
	}
}

func always(ids ...string) func(float64) []string { return func(float64) []string { return ids } }
