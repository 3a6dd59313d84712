package simulations

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ReportHeader describes how a report was produced.
type ReportHeader struct {
	// Command is the command line that produced the report.
	Command string
	// Generated is when the run finished.
	Generated time.Time
	// GoVersion is the toolchain, e.g. "go1.26".
	GoVersion string
	// Revision is the source revision the nodes were built from, if known.
	Revision string
}

// WriteReport renders results as Markdown: a summary table, then per
// scenario its seed, timeline, invariant verdicts with the measured figures,
// and the clients' and network's counters.
func WriteReport(w io.Writer, h ReportHeader, results []*Result) error {
	var b strings.Builder
	b.WriteString("# Heureka simulation report\n\n")
	if h.Command != "" {
		fmt.Fprintf(&b, "Produced by `%s`", h.Command)
		if !h.Generated.IsZero() {
			fmt.Fprintf(&b, " on %s", h.Generated.UTC().Format("2006-01-02 15:04 MST"))
		}
		if h.GoVersion != "" {
			fmt.Fprintf(&b, " with %s", h.GoVersion)
		}
		if h.Revision != "" {
			fmt.Fprintf(&b, " at revision %s", h.Revision)
		}
		b.WriteString(".\n")
	}
	b.WriteString("Each scenario runs a real cluster in one process on a seeded in-memory network; " +
		"see simulations/README.md for what each scenario does and how the invariants are measured. " +
		"The fault timeline follows from the seed; the measured figures vary a little between runs " +
		"(real clocks, goroutine scheduling).\n\n")

	b.WriteString("| scenario | seed | nodes | main phase | wall time | result |\n|---|---|---|---|---|---|\n")
	pass := 0
	for _, r := range results {
		fmt.Fprintf(&b, "| [%s](#%s) | %d | %d | %v | %v | %s |\n", r.Scenario, r.Scenario, r.Seed, r.Nodes,
			r.Duration, r.Wall.Round(100*time.Millisecond), passFail(r.Pass))
		if r.Pass {
			pass++
		}
	}
	fmt.Fprintf(&b, "\n**%d of %d scenarios passed.**\n", pass, len(results))

	seenBugs := map[string]*KnownBug{}
	for _, r := range results {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", r.Scenario, r.Summary)
		fmt.Fprintf(&b, "Seed %d, %d nodes, main phase %v, wall time %v: **%s**.\n",
			r.Seed, r.Nodes, r.Duration, r.Wall.Round(100*time.Millisecond), passFail(r.Pass))
		if r.Err != "" {
			fmt.Fprintf(&b, "\nThe run broke off: `%s`\n", r.Err)
		}
		b.WriteString("\n### Timeline\n\n| t | event | detail |\n|---|---|---|\n")
		for _, ev := range r.Timeline {
			fmt.Fprintf(&b, "| +%.1fs | %s | %s |\n", ev.At.Seconds(), ev.Kind, mdEscape(ev.Detail))
		}
		b.WriteString("\n### Invariants\n\n| # | invariant | threshold | measured | verdict |\n|---|---|---|---|---|\n")
		for _, v := range r.Verdicts {
			verdict := passFail(v.Pass)
			if bug := ExplainFailure(r, v); bug != nil {
				verdict += " (known server bug " + bug.ID + ")"
				seenBugs[bug.ID] = bug
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", v.Property, v.Invariant, mdEscape(v.Threshold), mdEscape(v.Measured), verdict)
		}
		for _, v := range r.Verdicts {
			if len(v.Details) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n%s (%s):\n\n", v.Invariant, passFail(v.Pass))
			for _, d := range v.Details {
				fmt.Fprintf(&b, "- %s\n", d)
			}
		}
		c := r.Clients
		fmt.Fprintf(&b, "\n### Figures\n\n"+
			"- clients: %d instance ids; %d registrations (%d after a 404), %d renewals, %d renewals failed everywhere, %d fail-overs, %d cancels (%d answered 404, %d failed)\n"+
			"- clients that died without cancelling: %d; gone from every node before the teardown: %d, at worst %s after the death\n"+
			"- self-preservation (nodes that expect renewals): engaged in %.0f%% of the probes, %d switches\n"+
			"- observations: %d HTTP samples, %d in-process probes\n"+
			"- network: %d packets sent (%d dropped), %d streams, %.1f MiB\n",
			r.Instances, c.Registrations, c.ReRegistrations, c.Renewals, c.RenewFailures, c.Failovers, c.Cancels, c.CancelNotFound, c.CancelFailures,
			r.Silent.Died, r.Silent.Evicted, secs(r.Silent.MaxLatency),
			r.SP.EngagedShare*100, r.SP.Transitions,
			r.Samples, r.Probes,
			r.Net.PacketsSent, r.Net.PacketsDropped, r.Net.StreamsOpened, float64(r.Net.BytesSent())/(1<<20))
	}
	if len(seenBugs) > 0 {
		b.WriteString("\n## Known server bugs seen in this run\n\n")
		for _, bug := range KnownBugs {
			if seenBugs[bug.ID] != nil {
				fmt.Fprintf(&b, "- **%s**: %s. Analysis in simulations/FINDINGS.md.\n", bug.ID, bug.Title)
			}
		}
	}
	if len(results) > 0 {
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// mdEscape keeps a table cell on one line and its pipes literal.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
