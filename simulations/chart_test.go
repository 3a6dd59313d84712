package simulations

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/plotter"

	"github.com/heureka/heureka/actors"
)

func TestFaultWindows(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	timeline := []Event{
		{At: s(0), Kind: "start", Detail: "5 nodes"},
		{At: s(1), Kind: "partition", Detail: "{n0,n1} | {n2,n3,n4}"},
		{At: s(2), Kind: "crash", Detail: "n3 (owner of APP-1)"},
		{At: s(3), Kind: "loss", Detail: "packet loss 20%"},
		{At: s(4), Kind: "loss", Detail: "packet loss 0%"},
		{At: s(5), Kind: "heal", Detail: "all links restored"},
		{At: s(6), Kind: "restart", Detail: "n3 restarted (fresh process, same address)"},
		{At: s(7), Kind: "delay", Detail: "packet delay 10ms–50ms"},
		{At: s(8), Kind: "delay", Detail: "packet delay 0s–0s"},
		// netns's words
		{At: s(9), Kind: "link-down", Detail: "n3's bridge port down"},
		{At: s(10), Kind: "pause", Detail: "n2 (pid 7) SIGSTOPped"},
		{At: s(11), Kind: "link-up", Detail: "n3's bridge port up"},
		{At: s(12), Kind: "kill", Detail: "n0 (pid 5) SIGKILLed"},
		{At: s(13), Kind: "resume", Detail: "n2 SIGCONTed"},
		{At: s(14), Kind: "stall", Detail: "n4 stalls"}, // never lifted
		{At: s(15), Kind: "stop", Detail: "n1 stopped gracefully (rolling restart)"},
		{At: s(15), Kind: "block-one-way", Detail: "{n0,n1} → {n2} blocked; {n2} → {n0,n1} still flows"},
		{At: s(15), Kind: "clock-skew", Detail: "n2's wall clock set +5s off"},
		{At: s(16), Kind: "restart", Detail: "n1 restarted (fresh process, same address)"},
		{At: s(16), Kind: "unblock", Detail: "{n0,n1} → {n2} restored"},
		{At: s(16), Kind: "one-way-loss", Detail: "n3 → {n0,n1}: 30% of the packets lost"},
		{At: s(17), Kind: "clock-skew", Detail: "n2's wall clock set -2s off"}, // a new setting
		{At: s(17), Kind: "one-way-loss", Detail: "n3 → {n0,n1}: 0% of the packets lost"},
		{At: s(18), Kind: "clock-skew", Detail: "n2's wall clock set 0s off"},
	}
	got := FaultWindows(timeline, s(20))
	type w struct {
		kind     string
		from, to float64
		open     bool
	}
	var short []w
	for _, f := range got {
		short = append(short, w{f.Kind, f.From.Seconds(), f.To.Seconds(), f.Open})
	}
	assert.Equal(t, []w{
		{"partition", 1, 5, false},
		{"crash", 2, 6, false},
		{"loss", 3, 4, false},
		{"delay", 7, 8, false},
		{"link-down", 9, 11, false},
		{"pause", 10, 13, false},
		{"kill", 12, 20, true},
		{"stall", 14, 20, true},
		{"stop", 15, 16, false},
		{"block-one-way", 15, 16, false},
		{"clock-skew", 15, 17, false},
		{"one-way-loss", 16, 17, false},
		{"clock-skew", 17, 18, false},
	}, short)
}

// syntheticObs builds a three-node run with one partition from 2 s to 4 s
// during which n2 loses its registry; recovered says whether n2 gets it
// back after the heal.
func syntheticObs(recovered bool) *Observations {
	start := time.Unix(1000, 0)
	at := func(x float64) time.Time { return start.Add(time.Duration(x * float64(time.Second))) }
	nodes := []string{"n0", "n1", "n2"}
	o := &Observations{Start: start, End: at(8), Nodes: nodes, Instances: map[string]*InstanceLog{}}
	o.Timeline = []Event{
		{At: 2 * time.Second, Kind: "partition", Detail: "{n0,n1} | {n2}"},
		{At: 4 * time.Second, Kind: "heal", Detail: "all links restored"},
	}
	full := map[string]bool{"a": true, "b": true}
	// a registers at 0.5 s on n0, seen everywhere at 0.8 s; b registers
	// at 2.5 s on n0 during the partition.
	o.Instances["a"] = &InstanceLog{App: "APP", ID: "a", Lives: []Life{{Start: at(0.4), Acked: at(0.5),
		Registrations: []Span{{From: at(0.4), To: at(0.5)}}}}}
	o.Instances["b"] = &InstanceLog{App: "APP", ID: "b", Lives: []Life{{Start: at(2.4), Acked: at(2.5),
		Registrations: []Span{{From: at(2.4), To: at(2.5)}}}}}
	for i := range 40 {
		x := float64(i) / 5
		for _, n := range nodes {
			ids := map[string]bool{}
			switch {
			case x < 0.7:
			case x < 2.6:
				ids["a"] = true
			case n != "n2" || (recovered && x >= 4.5):
				ids = full
			}
			o.Samples = append(o.Samples, Sample{At: at(x), Node: n, App: "APP", Ready: true, IDs: ids})
		}
		p := Probe{At: at(x), Up: nodes, Ready: map[string]bool{}, Fingerprint: map[string]string{},
			Live: map[string][]string{}, SP: map[string]actors.SelfPreservationStatus{}}
		for _, n := range nodes {
			p.Ready[n] = true
			var ids []string
			for _, s := range o.Samples[len(o.Samples)-3:] {
				if s.Node == n {
					for id := range s.IDs {
						ids = append(ids, id)
					}
				}
			}
			p.Fingerprint[n] = fmt.Sprint(len(ids))
			p.Live[n] = nodes
			engaged := x >= 2.5 && x < 4.5
			if x >= 2 && x < 4 {
				p.Live[n] = nodes[:2]
				if n == "n2" {
					p.Live[n] = nodes[2:]
				}
			}
			p.SP[n] = actors.SelfPreservationStatus{Enabled: true, ExpirationEnabled: !engaged}
		}
		o.Probes = append(o.Probes, p)
	}
	return o
}

func last(pts plotter.XYs) float64 { return pts[len(pts)-1].Y }

func TestChartSeriesRecoveredOrNot(t *testing.T) {
	good, bad := chartSeries(syntheticObs(true)), chartSeries(syntheticObs(false))
	for _, d := range []*chartData{good, bad} {
		assert.Equal(t, []string{"n0", "n1", "n2"}, d.Nodes)
		assert.InDelta(t, 8, d.End, 1e-9)
		require.Len(t, d.Faults, 1)
		assert.Equal(t, "partition", d.Faults[0].Kind)
		assert.Equal(t, 2.0, last(d.Size["n0"]))
		// Membership dips to two during the partition and comes back.
		assert.Equal(t, 2.0, d.Live["n0"][15].Y) // 3.0 s
		assert.Equal(t, 3.0, last(d.Live["n0"]))
		// Self-preservation engaged between 2.5 and 4.5 s.
		assert.Equal(t, 1.0, d.SP["n1"][15].Y)
		assert.Equal(t, 0.0, last(d.SP["n1"]))
		// a: acknowledged at 0.5 s, listed everywhere at 0.8 s.
		require.NotEmpty(t, d.Lag)
		assert.InDelta(t, 0.5, d.Lag[0].X, 1e-9)
		assert.InDelta(t, 0.3, d.Lag[0].Y, 1e-6)
	}
	// The recovered run: n2 serves both instances again, every node
	// agrees, and b's lag spans the partition.
	assert.Equal(t, 2.0, last(good.Size["n2"]))
	assert.Equal(t, 1.0, last(good.Agree))
	require.Len(t, good.Lag, 2)
	assert.InDelta(t, 2.1, good.Lag[1].Y, 1e-6) // listed by n2 at 4.6 s
	assert.Zero(t, good.LagNever)
	// The one that never recovers: n2 stays empty, a third of the nodes
	// disagree to the end, and b never reaches every node.
	assert.Equal(t, 0.0, last(bad.Size["n2"]))
	assert.InDelta(t, 2.0/3, last(bad.Agree), 1e-9)
	assert.Len(t, bad.Lag, 1)
	assert.Equal(t, 1, bad.LagNever)
}

func TestChartSeriesGaps(t *testing.T) {
	o := syntheticObs(true)
	// n1 refuses one round (not ready): a gap, not an empty registry.
	for i := range o.Samples {
		if o.Samples[i].Node == "n1" && o.Samples[i].At.Equal(o.Start.Add(time.Second)) {
			o.Samples[i].Ready, o.Samples[i].IDs = false, nil
		}
	}
	d := chartSeries(o)
	assert.True(t, math.IsNaN(d.Size["n1"][5].Y))
	assert.Equal(t, 1.0, d.Size["n1"][4].Y)
	// n2 is down (no samples, no probes) from 5 s to 6.6 s: its lines
	// break there instead of bridging the gap.
	var keep []Sample
	for _, smp := range o.Samples {
		if x := smp.At.Sub(o.Start).Seconds(); smp.Node != "n2" || x < 5 || x > 6.5 {
			keep = append(keep, smp)
		}
	}
	o.Samples = keep
	for i := range o.Probes {
		if x := o.Probes[i].At.Sub(o.Start).Seconds(); x >= 5 && x <= 6.5 {
			o.Probes[i].Up = []string{"n0", "n1"}
		}
	}
	d = chartSeries(o)
	breaks := func(pts plotter.XYs) (n int) {
		for _, pt := range pts {
			if math.IsNaN(pt.Y) {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 1, breaks(d.Size["n2"]))
	assert.Equal(t, 1, breaks(d.Live["n2"]))
	assert.Equal(t, 1, breaks(d.SP["n2"]))
	assert.Zero(t, breaks(d.Live["n0"]))
	// No self-preservation readings (as in netns): no such series.
	for i := range o.Probes {
		o.Probes[i].SP = nil
	}
	assert.Empty(t, chartSeries(o).SP)
}

// svgDoc is what the tests read from a chart file.
type svgDoc struct {
	paths []map[string]string // every path's attributes
	texts []string
}

func parseSVG(t *testing.T, file string) svgDoc {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	dec := xml.NewDecoder(f)
	var doc svgDoc
	inText := false
	sawRoot := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "%s is not well-formed XML", file)
		switch el := tok.(type) {
		case xml.StartElement:
			if !sawRoot {
				require.Equal(t, "svg", el.Name.Local, file)
				sawRoot = true
			}
			if el.Name.Local == "path" {
				attrs := map[string]string{}
				for _, a := range el.Attr {
					attrs[a.Name.Local] = a.Value
				}
				doc.paths = append(doc.paths, attrs)
			}
			inText = el.Name.Local == "text"
		case xml.CharData:
			if inText {
				doc.texts = append(doc.texts, strings.TrimSpace(string(el)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	require.True(t, sawRoot, file)
	return doc
}

// shaded counts the fault-window fills in a chart.
func (d svgDoc) shaded() int {
	n := 0
	for _, p := range d.paths {
		if strings.Contains(strings.ToLower(p["style"]), "fill:#ffe4b5") {
			n++
		}
	}
	return n
}

func TestWriteChartsSynthetic(t *testing.T) {
	dir := t.TempDir()
	charts, err := WriteCharts(dir, "x-", syntheticObs(false))
	require.NoError(t, err)
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
		doc := parseSVG(t, filepath.Join(dir, c.File))
		assert.Equal(t, 1, doc.shaded(), c.Name)
		assert.Contains(t, doc.texts, "partition", c.Name)
	}
	assert.Equal(t, []string{"registry", "members", "self-preservation", "lag", "convergence"}, names)
	doc := parseSVG(t, filepath.Join(dir, "x-registry.svg"))
	for _, n := range []string{"n0", "n1", "n2"} {
		assert.Contains(t, doc.texts, n, "legend")
	}
}

// TestWriteReportDir runs partition-heal (short) and writes its report
// directory: report.md, report.html and well-formed SVG charts with one
// shaded band per fault window.
func TestWriteReportDir(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario")
	}
	sc, ok := ScenarioByName("partition-heal")
	require.True(t, ok)
	res, err := Run(context.Background(), sc, ShortConfig(sc, 1))
	require.NoError(t, err)
	o := res.Observations
	windows := FaultWindows(o.Timeline, o.End.Sub(o.Start))
	require.NotEmpty(t, windows)

	dir := t.TempDir()
	require.NoError(t, WriteReportDir(dir, ReportHeader{Command: "test"}, []*Result{res}))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| scenario | seed | nodes |")
	assert.Contains(t, string(page), "<table>")
	assert.Contains(t, string(page), "<th>invariant</th>")
	assert.Equal(t, strings.Count(string(md), "\n| "), strings.Count(string(page), "<tr>"),
		"every Markdown table row is an HTML row")

	d := chartSeries(o)
	for _, name := range []string{"registry", "members", "self-preservation", "lag", "convergence"} {
		file := "partition-heal-seed1-" + name + ".svg"
		assert.Contains(t, string(md), "]("+file+")")
		assert.Contains(t, string(page), `src="`+file+`"`)
		doc := parseSVG(t, filepath.Join(dir, file))
		assert.Equal(t, len(windows), doc.shaded(), name)
	}
	// The run converged and every node saw all five at the end.
	assert.Equal(t, 1.0, last(d.Agree))
	for _, n := range o.Nodes {
		assert.Equal(t, 5.0, last(d.Live[n]), n)
	}
	assert.NotEmpty(t, d.Lag)
}
