//go:build linux

package netns

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ReportHeader says how a report was produced.
type ReportHeader struct {
	Command   string
	Generated time.Time
	Revision  string
	Machine   string // kernel, CPUs, Go
	Run       string
	// Cleanup lines: what the cleanup checks found.
	Cleanup []string
}

// WriteReport renders the results as Markdown.
func WriteReport(w io.Writer, h ReportHeader, results []*Result) error {
	var b strings.Builder
	b.WriteString("# Heureka on real processes in network namespaces\n\n")
	fmt.Fprintf(&b, "Produced by `%s` on %s", h.Command, h.Generated.UTC().Format("2006-01-02 15:04 MST"))
	if h.Revision != "" {
		fmt.Fprintf(&b, " at revision %s", h.Revision)
	}
	if h.Machine != "" {
		fmt.Fprintf(&b, " (%s)", h.Machine)
	}
	fmt.Fprintf(&b, ", run id `%s`.\n\n", h.Run)
	b.WriteString("Each scenario starts a fresh lab: one network namespace per node (`hk-<run>-<scenario>-n<i>`, " +
		"eth0 10.77.0.1x/24), one for the clients and the observer (`…-c`, 10.77.0.2) and one holding the bridge (`…-br`); " +
		"one real `heureka` process per node namespace (`ip netns exec … heureka --node-name n<i> --http-addr 10.77.0.1x:8761 " +
		"--gossip-addr 10.77.0.1x:7946 --join <two other nodes> " + strings.Join(ServerFlags, " ") + "`). " +
		"Clients register with a 3 s lease and renew every second over HTTP from the client namespace; the observer reads " +
		"`GET /eureka/apps` and `/cluster/members` from every node every 200 ms. The verdicts come from the in-process " +
		"simulations' own checkers (`simulations.Check*`) fed with these observations; see simulations/README.md.\n\n")

	b.WriteString("| scenario | result | wall time | instances | samples | probes |\n|---|---|---|---|---|---|\n")
	pass, known := 0, 0
	for _, r := range results {
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %v | %d | %d | %d |\n", r.Scenario, r.Scenario, resultWord(r),
			r.Wall.Round(100*time.Millisecond), r.Instances, r.Samples, r.Probes)
		switch {
		case r.Pass:
			pass++
		case r.OnlyKnown:
			known++
		}
	}
	fmt.Fprintf(&b, "\n**%d of %d scenarios passed", pass, len(results))
	if known > 0 {
		fmt.Fprintf(&b, "; %d failed only by the known finding below", known)
	}
	b.WriteString(".**\n")
	if known > 0 {
		fmt.Fprintf(&b, "\nKnown finding: %s. See simulations/FINDINGS.md (Real processes) for the mechanism.\n", FindingLateRegistration)
	}

	if len(h.Cleanup) > 0 {
		b.WriteString("\n## Cleanup\n\n")
		for _, l := range h.Cleanup {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}

	for _, r := range results {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", r.Scenario, r.Summary)
		fmt.Fprintf(&b, "%d nodes, wall time %v: **%s**.", r.Nodes, r.Wall.Round(100*time.Millisecond), resultWord(r))
		if r.Err != "" {
			fmt.Fprintf(&b, " Run error: %s.", r.Err)
		}
		b.WriteString("\n\n")
		for _, f := range r.Figures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		if len(r.Figures) > 0 {
			b.WriteString("\n")
		}
		if len(r.Verdicts) > 0 {
			b.WriteString("| invariant | verdict | threshold | measured |\n|---|---|---|---|\n")
			for _, v := range r.Verdicts {
				word := passFail(v.Pass)
				if _, ok := r.Known[v.Invariant]; ok {
					word += " (known finding)"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", v.Invariant, word, cell(v.Threshold), cell(v.Measured))
			}
			for _, v := range r.Verdicts {
				if len(v.Details) == 0 {
					continue
				}
				fmt.Fprintf(&b, "\n%s:\n", v.Invariant)
				for _, d := range v.Details {
					fmt.Fprintf(&b, "- %s\n", d)
				}
				if ev, ok := r.Known[v.Invariant]; ok {
					fmt.Fprintf(&b, "\nExplained by the known finding (%s), from the nodes' logs:\n", FindingLateRegistration)
					for _, e := range ev {
						fmt.Fprintf(&b, "- %s\n", e)
					}
				}
			}
		}
		if len(r.Charts) > 0 {
			b.WriteString("\nCharts (the fault windows shaded):")
			for _, c := range r.Charts {
				fmt.Fprintf(&b, " [%s](%s)", c.Name, c.File)
			}
			b.WriteString(".\n")
		}
		b.WriteString("\nTimeline:\n\n")
		for _, ev := range r.Timeline {
			fmt.Fprintf(&b, "- +%.1fs %s: %s\n", ev.At.Seconds(), ev.Kind, ev.Detail)
		}
		left := "none"
		if len(r.Leftovers) > 0 {
			left = strings.Join(r.Leftovers, "; ")
		}
		fmt.Fprintf(&b, "\nCleanup: %d heureka processes started, namespaces `%s…`; left after the run: %s.\n",
			len(r.Pids), r.Namespaces, left)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func resultWord(r *Result) string {
	switch {
	case r.Pass:
		return "PASS"
	case r.OnlyKnown:
		return "FAIL (known finding)"
	}
	return "FAIL"
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
