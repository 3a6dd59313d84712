package simulations

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// WriteResults renders many runs (typically every scenario over seeds
// 1..N) as Markdown: per scenario and invariant, how many runs passed and
// the p50, p99 and maximum of the invariant's key figure; then every
// failing run with what failed and the command that replays it (replay
// returns it for a result).
func WriteResults(w io.Writer, h ReportHeader, results []*Result, replay func(*Result) string) error {
	var b strings.Builder
	b.WriteString("# Heureka simulation results over many seeds\n\n")
	if h.Command != "" {
		fmt.Fprintf(&b, "Produced by `%s`", h.Command)
		if h.Revision != "" {
			fmt.Fprintf(&b, " at revision %s", h.Revision)
		}
		if !h.Generated.IsZero() {
			fmt.Fprintf(&b, " on %s", h.Generated.UTC().Format("2006-01-02 15:04 MST"))
		}
		if h.GoVersion != "" {
			fmt.Fprintf(&b, " with %s", h.GoVersion)
		}
		b.WriteString(".\n")
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(la))
		if len(f) >= 3 {
			fmt.Fprintf(&b, "Load average when the runs ended (1, 5, 15 min): %s %s %s on %d CPUs; the timing bounds feel it.\n", f[0], f[1], f[2], runtime.NumCPU())
		}
	}
	b.WriteString("Each run is one scenario with one seed (see simulations/README.md); the fault timeline follows from " +
		"the seed, the figures vary a little between runs of the same seed. Percentiles are nearest-rank over the runs " +
		"that produced the figure.\n\n")

	var order []string
	byScenario := map[string][]*Result{}
	for _, r := range results {
		if byScenario[r.Scenario] == nil {
			order = append(order, r.Scenario)
		}
		byScenario[r.Scenario] = append(byScenario[r.Scenario], r)
	}
	b.WriteString("| scenario | runs | passed | wall p50 | wall max |\n|---|---|---|---|---|\n")
	totalRuns, totalPass := 0, 0
	for _, name := range order {
		rs := byScenario[name]
		pass := 0
		var walls []float64
		for _, r := range rs {
			if r.Pass {
				pass++
			}
			walls = append(walls, r.Wall.Seconds())
		}
		totalRuns += len(rs)
		totalPass += pass
		fmt.Fprintf(&b, "| [%s](#%s) | %d | %d | %s | %s |\n", name, name, len(rs), pass,
			fmtFigure(quantile(walls, 0.5), "s"), fmtFigure(quantile(walls, 1), "s"))
	}
	fmt.Fprintf(&b, "\n**%d of %d runs passed.**\n", totalPass, totalRuns)

	for _, name := range order {
		rs := byScenario[name]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Seed < rs[j].Seed })
		fmt.Fprintf(&b, "\n## %s\n\n", name)
		if rs[0].Summary != "" {
			fmt.Fprintf(&b, "%s\n\n", rs[0].Summary)
		}
		fmt.Fprintf(&b, "Seeds %s, %d nodes, main phase %v.\n\n", seedList(rs), rs[0].Nodes, rs[0].Duration)
		b.WriteString("| invariant | passed | key figure | p50 | p99 | max |\n|---|---|---|---|---|---|\n")
		var invs []string
		seen := map[string]bool{}
		for _, r := range rs {
			for _, v := range r.Verdicts {
				if !seen[v.Invariant] {
					seen[v.Invariant] = true
					invs = append(invs, v.Invariant)
				}
			}
		}
		for _, inv := range invs {
			pass, runs := 0, 0
			var vals []float64
			var key KeyFigure
			for _, r := range rs {
				for _, v := range r.Verdicts {
					if v.Invariant != inv {
						continue
					}
					runs++
					if v.Pass {
						pass++
					}
					if v.Key.Name != "" {
						key = v.Key
						if !math.IsNaN(v.Key.Value) {
							vals = append(vals, v.Key.Value)
						}
					}
				}
			}
			name := key.Name
			if len(vals) < runs {
				name += fmt.Sprintf(" (%d runs without a value)", runs-len(vals))
			}
			fmt.Fprintf(&b, "| %s | %d/%d | %s | %s | %s | %s |\n", inv, pass, runs, name,
				fmtFigure(quantile(vals, 0.5), key.Unit), fmtFigure(quantile(vals, 0.99), key.Unit), fmtFigure(quantile(vals, 1), key.Unit))
		}
		writeFigures(&b, rs)
		var failing []*Result
		for _, r := range rs {
			if !r.Pass {
				failing = append(failing, r)
			}
		}
		if len(failing) == 0 {
			continue
		}
		b.WriteString("\nFailing runs:\n\n| seed | what failed | replay |\n|---|---|---|\n")
		for _, r := range failing {
			var what []string
			if r.Err != "" {
				what = append(what, "run broke off: "+r.Err)
			}
			for _, v := range r.Verdicts {
				if !v.Pass {
					name := v.Invariant
					if bug := ExplainFailure(r, v); bug != nil {
						name += " (known server bug " + bug.ID + ")"
					}
					what = append(what, fmt.Sprintf("**%s**: %s", name, v.Measured))
					if len(v.Details) > 0 {
						what[len(what)-1] += " (" + strings.Join(v.Details[:min(3, len(v.Details))], "; ") + ")"
					}
				}
			}
			cmd := ""
			if replay != nil {
				cmd = "`" + replay(r) + "`"
			}
			fmt.Fprintf(&b, "| %d | %s | %s |\n", r.Seed, mdEscape(strings.Join(what, "; ")), cmd)
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// quantile returns the nearest-rank q-quantile of vs (NaN if empty). It
// sorts vs.
func quantile(vs []float64, q float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	sort.Float64s(vs)
	k := int(math.Ceil(q*float64(len(vs)))) - 1
	return vs[min(max(k, 0), len(vs)-1)]
}

// fmtFigure formats v in unit ("s", "%" or a count).
func fmtFigure(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case unit == "s":
		return secs(time.Duration(v * float64(time.Second)))
	case unit == "%":
		return fmt.Sprintf("%.2f%%", v)
	}
	return fmt.Sprintf("%g", v)
}

// seedList names the seeds of rs compactly ("1–20", or a list).
func seedList(rs []*Result) string {
	seeds := make([]int64, 0, len(rs))
	for _, r := range rs {
		seeds = append(seeds, r.Seed)
	}
	return compactSeeds(seeds)
}

// compactSeeds names seeds compactly: "1–20" for a run of more than two,
// else a list.
func compactSeeds(seeds []int64) string {
	contiguous := true
	for i := 1; i < len(seeds); i++ {
		contiguous = contiguous && seeds[i] == seeds[i-1]+1
	}
	if contiguous && len(seeds) > 2 {
		return fmt.Sprintf("%d–%d", seeds[0], seeds[len(seeds)-1])
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprint(s)
	}
	return strings.Join(parts, ", ")
}

// runFigure is one figure the many-seeds summary reports for every
// scenario, whatever its invariants: its name, unit, and how to read it off
// a run (ok false when the run gave none).
type runFigure struct {
	name, unit string
	of         func(r *Result) (float64, bool)
}

// verdictKey reads the key figure of the verdict inv.
func verdictKey(inv string) func(r *Result) (float64, bool) {
	return func(r *Result) (float64, bool) {
		for _, v := range r.Verdicts {
			if v.Invariant == inv && v.Key.Name != "" && !math.IsNaN(v.Key.Value) {
				return v.Key.Value, true
			}
		}
		return 0, false
	}
}

// runFigures are the figures of writeFigures.
var runFigures = []runFigure{
	{"convergence time (s after the faults)", "s", verdictKey(InvConvergence)},
	{"longest miss of a renewing client", "s", verdictKey(InvNoMissingRenewer)},
	{"eviction delay of silently dead clients (worst)", "s", func(r *Result) (float64, bool) {
		if r.Silent.Evicted == 0 {
			return 0, false
		}
		return r.Silent.MaxLatency.Seconds(), true
	}},
	{"dead clients not evicted by the teardown", "", func(r *Result) (float64, bool) {
		return float64(r.Silent.Died - r.Silent.Evicted), r.Silent.Died > 0
	}},
	{"self-preservation engaged share", "%", func(r *Result) (float64, bool) { return 100 * r.SP.EngagedShare, true }},
	{"records moved per heal (anti-entropy)", "", func(r *Result) (float64, bool) {
		if r.Heals == 0 {
			return 0, false
		}
		return math.Round(float64(r.Wire.TransferRecords) / float64(r.Heals)), true
	}},
	{"replication messages per client renewal", "", func(r *Result) (float64, bool) {
		if r.Clients.Renewals == 0 {
			return 0, false
		}
		return math.Round(100*float64(r.Wire.RenewalMessages)/float64(r.Clients.Renewals)) / 100, true
	}},
}

// writeFigures writes the distribution over rs of every runFigure.
func writeFigures(b *strings.Builder, rs []*Result) {
	b.WriteString("\n| figure (over runs) | runs | p50 | p99 | max |\n|---|---|---|---|---|\n")
	for _, f := range runFigures {
		var vals []float64
		for _, r := range rs {
			if v, ok := f.of(r); ok {
				vals = append(vals, v)
			}
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s |\n", f.name, len(vals),
			fmtFigure(quantile(vals, 0.5), f.unit), fmtFigure(quantile(vals, 0.99), f.unit), fmtFigure(quantile(vals, 1), f.unit))
	}
}
