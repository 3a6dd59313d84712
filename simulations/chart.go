package simulations

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// FaultWindow is a stretch of a run during which one fault held: from the
// timeline event that injected it to the one that lifted it.
type FaultWindow struct {
	// Kind is the injecting event's kind ("partition", "crash", "loss", …)
	// and Detail its detail.
	Kind, Detail string
	// From and To are times since the scenario started.
	From, To time.Duration
	// Open reports that nothing lifted the fault before the run ended (To
	// is then the end of the run).
	Open bool
}

// faultKinds are the timeline events that inject a fault, for both
// harnesses (this package's Sim and simulations/netns); true marks a fault
// per node or group, named by the detail's first word.
var faultKinds = map[string]bool{
	"partition": false, "loss": false, "delay": false, "clients-crash": false, "clients-die": false,
	"crash": true, "stall": true, "stop": true, "block-one-way": true, "one-way-loss": true, "clock-skew": true,
	"kill": true, "pause": true, "link-down": true, // simulations/netns
}

// liftKinds are the events that lift a fault, with the kinds they lift.
var liftKinds = map[string][]string{
	"heal":            {"partition"},
	"restart":         {"crash", "stop", "kill"},
	"unstall":         {"stall"},
	"unblock":         {"block-one-way"},
	"clients-recover": {"clients-crash"},
	"resume":          {"pause"},
	"link-up":         {"link-down"},
	"loss-end":        {"loss"},
}

// settingSuffix is, for the faults set by a level (a new event of the
// kind replaces the one before), how the detail of the event that sets
// the level back to zero ends.
var settingSuffix = map[string]string{
	"loss":         " 0%",
	"delay":        " 0s–0s",
	"one-way-loss": " 0% of the packets lost",
	"clock-skew":   " set 0s off",
}

// FaultWindows pairs the timeline's fault events into windows, in the
// order they started: partition … heal, crash or stop … restart, stall …
// unstall, one-way block … unblock, clients crash … recover; loss, delay,
// one-way loss and clock skew from a non-zero setting to the next setting;
// and netns's kill … restart, pause … resume, link-down … link-up, loss …
// loss-end. A fault still held at the end runs to end (time since the
// start) and is Open.
func FaultWindows(timeline []Event, end time.Duration) []FaultWindow {
	var out []FaultWindow
	open := map[string]int{} // kind or kind/node → index in out
	closeAt := func(key string, at time.Duration) {
		if i, ok := open[key]; ok {
			out[i].To, out[i].Open = at, false
			delete(open, key)
		}
	}
	for _, ev := range timeline {
		var node string // the node (or group) a per-node event names first
		if f := strings.Fields(ev.Detail); len(f) > 0 {
			node = strings.TrimSuffix(f[0], "'s")
		}
		if kinds, ok := liftKinds[ev.Kind]; ok {
			for _, k := range kinds {
				closeAt(k, ev.At)
				closeAt(k+"/"+node, ev.At)
			}
			continue
		}
		keyed, ok := faultKinds[ev.Kind]
		if !ok {
			continue
		}
		key := ev.Kind
		if keyed {
			key += "/" + node
		}
		closeAt(key, ev.At)
		if suffix, ok := settingSuffix[ev.Kind]; ok && strings.HasSuffix(ev.Detail, suffix) {
			continue
		}
		open[key] = len(out)
		out = append(out, FaultWindow{Kind: ev.Kind, Detail: ev.Detail, From: ev.At, To: end, Open: true})
	}
	return out
}

// chartData is what the charts plot, computed from Observations; the
// tests assert on it rather than on pixels. Times are seconds since the
// scenario started.
type chartData struct {
	Nodes  []string
	End    float64
	Faults []FaultWindow
	// Size is, per node, the instances it served in each sampling round
	// (summed over the applications; a round with a failed or refused read
	// is a gap, NaN).
	Size map[string]plotter.XYs
	// Live is, per node, how many live members it saw in each probe.
	Live map[string]plotter.XYs
	// SP is, per node, 1 while self-preservation was engaged (expiration
	// disabled), 0 otherwise; empty where the probes carry no readings
	// (simulations/netns).
	SP map[string]plotter.XYs
	// Lag has one point per acknowledged registration: when it was
	// acknowledged, and how long until every node sampled in the meantime
	// listed it. LagNever counts the registrations some node had not
	// listed by the time their client stopped (or the run ended).
	Lag      plotter.XYs
	LagNever int
	// Agree is, per probe, the share of running nodes that are ready and
	// hold the registry most of them hold (1: converged).
	Agree plotter.XYs
}

// chartSeries computes the charts' data from o.
func chartSeries(o *Observations) *chartData {
	d := &chartData{
		Nodes: slices.Clone(o.Nodes),
		Size:  map[string]plotter.XYs{},
		Live:  map[string]plotter.XYs{},
		SP:    map[string]plotter.XYs{},
	}
	end := o.End
	if end.IsZero() {
		end = o.QuietEnd
	}
	if !end.IsZero() {
		d.End = end.Sub(o.Start).Seconds()
	}
	d.Faults = FaultWindows(o.Timeline, time.Duration(d.End*float64(time.Second)))
	at := func(t time.Time) float64 { return t.Sub(o.Start).Seconds() }

	// Registry size: a node's samples of one round are consecutive and
	// name each application once.
	byNode := map[string][]Sample{}
	for _, s := range o.Samples {
		byNode[s.Node] = append(byNode[s.Node], s)
	}
	for node, ss := range byNode {
		if !slices.Contains(d.Nodes, node) {
			d.Nodes = append(d.Nodes, node)
		}
		var pts plotter.XYs
		seen := map[string]bool{}
		var first time.Time
		total, ok := 0, true
		flush := func() {
			if len(seen) == 0 {
				return
			}
			y := float64(total)
			if !ok {
				y = math.NaN()
			}
			pts = append(pts, plotter.XY{X: at(first), Y: y})
			clear(seen)
			total, ok = 0, true
		}
		for _, s := range ss {
			if seen[s.App] {
				flush()
			}
			if len(seen) == 0 {
				first = s.At
			}
			seen[s.App] = true
			if s.IDs == nil || !s.Ready {
				ok = false
			}
			total += len(s.IDs)
		}
		flush()
		d.Size[node] = pts
	}

	// Membership, self-preservation and agreement from the probes.
	for _, p := range o.Probes {
		x := at(p.At)
		counts := map[string]int{}
		for _, n := range p.Up {
			d.Live[n] = append(d.Live[n], plotter.XY{X: x, Y: float64(len(p.Live[n]))})
			if sp, ok := p.SP[n]; ok && sp.Enabled {
				y := 0.0
				if !sp.ExpirationEnabled {
					y = 1
				}
				d.SP[n] = append(d.SP[n], plotter.XY{X: x, Y: y})
			}
			if p.Ready[n] {
				counts[p.Fingerprint[n]]++
			}
		}
		if len(p.Up) > 0 {
			best := 0
			for _, c := range counts {
				best = max(best, c)
			}
			d.Agree = append(d.Agree, plotter.XY{X: x, Y: float64(best) / float64(len(p.Up))})
		}
	}
	for _, n := range d.Nodes {
		if len(d.SP[n]) == 0 {
			delete(d.SP, n)
		}
	}
	// A node that was down (crashed, stopped, paused: not read) has no
	// points for a while: break its lines there rather than bridge it.
	gap := max(time.Second, 5*o.SampleInterval).Seconds()
	for _, m := range []map[string]plotter.XYs{d.Size, d.Live, d.SP} {
		for n, pts := range m {
			m[n] = breakGaps(pts, gap)
		}
	}

	// Replication lag: from each acknowledgement until every node sampled
	// before the client stopped lists the instance.
	type key struct{ node, app string }
	idx := map[key][]Sample{}
	for _, s := range o.Samples {
		k := key{s.Node, s.App}
		idx[k] = append(idx[k], s)
	}
	ids := make([]string, 0, len(o.Instances))
	for id := range o.Instances {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		l := o.Instances[id]
		for _, lf := range l.Lives {
			stop := lf.End
			if stop.IsZero() {
				stop = end
			}
			for _, reg := range lf.Registrations {
				lag, never, sampledAny := 0.0, false, false
				for _, n := range d.Nodes {
					ss := idx[key{n, l.App}]
					i, _ := slices.BinarySearchFunc(ss, reg.To, func(s Sample, t time.Time) int { return s.At.Compare(t) })
					sampled, seen := false, false
					for ; i < len(ss) && ss[i].At.Before(stop); i++ {
						if ss[i].IDs == nil {
							continue
						}
						sampled = true
						if ss[i].IDs[id] {
							lag = max(lag, ss[i].At.Sub(reg.To).Seconds())
							seen = true
							break
						}
					}
					if sampled {
						sampledAny = true
						never = never || !seen
					}
				}
				switch {
				case !sampledAny: // no node read it in time
				case never:
					d.LagNever++
				default:
					d.Lag = append(d.Lag, plotter.XY{X: at(reg.To), Y: lag})
				}
			}
		}
	}
	slices.SortFunc(d.Lag, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	slices.Sort(d.Nodes)
	return d
}

// breakGaps inserts a NaN point (a break in the line) between two points
// more than gap apart.
func breakGaps(pts plotter.XYs, gap float64) plotter.XYs {
	var out plotter.XYs
	for i, pt := range pts {
		if i > 0 && pt.X-pts[i-1].X > gap {
			out = append(out, plotter.XY{X: (pt.X + pts[i-1].X) / 2, Y: math.NaN()})
		}
		out = append(out, pt)
	}
	return out
}

// Chart is one chart file written by WriteCharts.
type Chart struct {
	// Name is the chart's kind ("registry", "members", …), Title its
	// caption and File its file name (relative to the directory).
	Name, Title, File string
}

// Chart dimensions.
const (
	chartWidth  = 9 * vg.Inch
	chartHeight = 3 * vg.Inch
)

// chartExt is the charts' format, by the file extension gonum/plot knows
// (.svg, .png, .pdf, …).
var chartExt = ".svg"

// faultShade is the fill of the fault windows, the same in every chart:
// opaque (the bands are drawn first, under the grid and the data) so that
// the SVG names exactly this colour.
var faultShade = color.RGBA{R: 0xff, G: 0xe4, B: 0xb5, A: 0xff}

// WriteCharts draws o as SVG charts into dir, their file names starting
// with prefix: the registry size, the live members and (where the probes
// read it) the self-preservation state per node, the replication lag of
// every acknowledged registration, and the share of nodes agreeing on one
// registry, each over the run's time with the fault windows shaded.
func WriteCharts(dir, prefix string, o *Observations) ([]Chart, error) {
	return writeCharts(dir, prefix, chartSeries(o))
}

func writeCharts(dir, prefix string, d *chartData) ([]Chart, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	type spec struct {
		name, title, ylabel string
		draw                func(p *plot.Plot) error
	}
	specs := []spec{
		{"registry", "Registry size per node (instances served over HTTP)", "instances",
			func(p *plot.Plot) error { return addNodeLines(p, d.Nodes, d.Size, plotter.NoStep) }},
		{"members", "Live members per node", "live members",
			func(p *plot.Plot) error {
				p.Y.Min = 0
				return addNodeLines(p, d.Nodes, d.Live, plotter.PostStep)
			}},
	}
	if len(d.SP) > 0 {
		specs = append(specs, spec{"self-preservation", "Self-preservation per node (raised: engaged, evictions off; a node starts engaged until it has counted a window)", "",
			func(p *plot.Plot) error { return addSPStrips(p, d.Nodes, d.SP) }})
	}
	specs = append(specs,
		spec{"lag", fmt.Sprintf("Replication lag: acknowledgement → listed on every node (%d registrations; %d never on all before their client stopped)",
			len(d.Lag), d.LagNever), "seconds",
			func(p *plot.Plot) error {
				p.Y.Min = 0
				if len(d.Lag) == 0 {
					return nil
				}
				s, err := plotter.NewScatter(d.Lag)
				if err != nil {
					return err
				}
				s.GlyphStyle.Color = plotutil.Color(0)
				s.GlyphStyle.Radius = vg.Points(2)
				p.Add(s)
				return nil
			}},
		spec{"convergence", "Convergence: share of running nodes ready and holding the most common registry", "share",
			func(p *plot.Plot) error {
				p.Y.Min, p.Y.Max = 0, 1.05
				return addLine(p, "", d.Agree, plotutil.Color(1), plotter.PostStep)
			}},
	)
	var out []Chart
	for _, s := range specs {
		p := plot.New()
		p.Title.Text = s.title
		p.X.Label.Text = "seconds since the scenario started"
		p.Y.Label.Text = s.ylabel
		// A tenth more on the right: room for the legend.
		p.X.Min, p.X.Max = 0, math.Max(d.End, 1)*1.1
		p.Add(&faultShades{windows: d.Faults}, plotter.NewGrid())
		if err := s.draw(p); err != nil {
			return nil, fmt.Errorf("chart %s: %w", s.name, err)
		}
		p.Legend.Top = true
		p.Legend.Left = false
		p.Legend.Padding = vg.Points(2)
		file := prefix + s.name + chartExt
		if err := p.Save(chartWidth, chartHeight, filepath.Join(dir, file)); err != nil {
			return nil, fmt.Errorf("chart %s: %w", s.name, err)
		}
		out = append(out, Chart{Name: s.name, Title: s.title, File: file})
	}
	return out, nil
}

// addNodeLines draws one line per node, broken where a point is NaN.
func addNodeLines(p *plot.Plot, nodes []string, series map[string]plotter.XYs, step plotter.StepKind) error {
	for i, n := range nodes {
		if err := addLine(p, n, series[n], plotutil.Color(i), step); err != nil {
			return err
		}
	}
	return nil
}

// addLine draws pts as one line (with a legend entry named name, unless
// empty), broken into segments at NaN values.
func addLine(p *plot.Plot, name string, pts plotter.XYs, c color.Color, step plotter.StepKind) error {
	legend := name != ""
	var seg plotter.XYs
	flush := func() error {
		if len(seg) == 0 {
			return nil
		}
		l, err := plotter.NewLine(seg)
		if err != nil {
			return err
		}
		l.Color, l.Width, l.StepStyle = c, vg.Points(1.2), step
		p.Add(l)
		if legend {
			p.Legend.Add(name, l)
			legend = false
		}
		seg = nil
		return nil
	}
	for _, pt := range pts {
		if math.IsNaN(pt.Y) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		seg = append(seg, pt)
	}
	return flush()
}

// addSPStrips draws each node's self-preservation state as a step line in
// a band of its own: node i at i when off, i+0.7 when engaged.
func addSPStrips(p *plot.Plot, nodes []string, sp map[string]plotter.XYs) error {
	var ticks []plot.Tick
	for i, n := range nodes {
		pts := make(plotter.XYs, len(sp[n]))
		for j, pt := range sp[n] {
			pts[j] = plotter.XY{X: pt.X, Y: float64(i) + 0.7*pt.Y}
		}
		if err := addLine(p, "", pts, plotutil.Color(i), plotter.PostStep); err != nil {
			return err
		}
		ticks = append(ticks, plot.Tick{Value: float64(i) + 0.35, Label: n})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.2, float64(len(nodes))
	return nil
}

// faultShades shades the fault windows over the whole height of the data
// area and names each at its top.
type faultShades struct{ windows []FaultWindow }

// Plot implements plot.Plotter.
func (f *faultShades) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	sty := plt.Legend.TextStyle
	sty.Font.Size = vg.Points(7)
	for i, w := range f.windows {
		x0 := max(trX(w.From.Seconds()), c.Min.X)
		x1 := min(trX(w.To.Seconds()), c.Max.X)
		if x1 <= x0 {
			x1 = min(x0+vg.Points(1), c.Max.X)
		}
		c.FillPolygon(faultShade, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		// Stagger the names so that neighbouring windows stay legible.
		y := c.Max.Y - sty.Font.Size*vg.Length(1+i%3)
		c.FillText(sty, vg.Point{X: x0 + vg.Points(2), Y: y}, w.Kind)
	}
}
