package simulations

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
)

// WriteReportDir writes the report of results into dir (made if missing):
// report.md (WriteReport's Markdown, then a Charts section with, per run,
// the SVG charts of WriteCharts), report.html (the same document as HTML,
// the charts embedded as images) and the chart files, named
// <scenario>-seed<seed>-<chart>.svg. Runs without observations (broken
// runs) get no charts.
func WriteReportDir(dir string, h ReportHeader, results []*Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := WriteReport(&md, h, results); err != nil {
		return err
	}
	md.WriteString("## Charts\n\nTime runs from the scenario's start; the shaded bands are the fault windows " +
		"(from the timeline event that injected a fault to the one that lifted it).\n")
	for _, r := range results {
		fmt.Fprintf(&md, "\n### Charts: %s, seed %d\n\n", r.Scenario, r.Seed)
		if r.Observations == nil {
			md.WriteString("No observations: the run broke off before it started.\n")
			continue
		}
		charts, err := WriteCharts(dir, fmt.Sprintf("%s-seed%d-", r.Scenario, r.Seed), r.Observations)
		if err != nil {
			return fmt.Errorf("%s seed %d: %w", r.Scenario, r.Seed, err)
		}
		if ws := FaultWindows(r.Observations.Timeline, r.Observations.End.Sub(r.Observations.Start)); len(ws) > 0 {
			md.WriteString("| fault | from | to | detail |\n|---|---|---|---|\n")
			for _, w := range ws {
				to := fmt.Sprintf("+%.1fs", w.To.Seconds())
				if w.Open {
					to += " (end of run)"
				}
				fmt.Fprintf(&md, "| %s | +%.1fs | %s | %s |\n", w.Kind, w.From.Seconds(), to, mdEscape(w.Detail))
			}
			md.WriteString("\n")
		}
		for _, c := range charts {
			fmt.Fprintf(&md, "![%s](%s)\n\n", c.Title, c.File)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	if err := WriteHTML(f, "Heureka simulation report", md.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// markdown renders GitHub-flavoured Markdown (tables), with heading ids so
// that the reports' in-page links work.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
)

// WriteHTML renders the Markdown document md as a standalone HTML page
// titled title; images stay links relative to the page.
func WriteHTML(w io.Writer, title string, md []byte) error {
	var body bytes.Buffer
	if err := markdown.Convert(md, &body); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>%s</title>
<style>
body { font-family: sans-serif; max-width: 72em; margin: 1em auto; padding: 0 1em; line-height: 1.4; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
img { max-width: 100%%; display: block; margin: 0.5em 0; }
code { background: #f6f6f6; }
</style>
</head>
<body>
`, html.EscapeString(title))
	b.Write(body.Bytes())
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
