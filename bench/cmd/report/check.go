package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The report's ratios must be recomputable from the figures printed beside
// them. A column whose header reads "NAME = A ÷ B" (or "A − B") holds, in
// every row, the quotient (difference) of that row's columns headed A and
// B (a derived column is headed NAME for this purpose). checkRatios
// recomputes every such cell of a Markdown report.

// formula matches a derived column's header.
var formula = regexp.MustCompile(`^(.*?)=\s*(.+?)\s+([÷−])\s+(.+?)\s*$`)

// ratioCheck is the outcome of checkRatios.
type ratioCheck struct {
	Checked  int      // cells recomputed
	Mismatch []string // cells that do not match their figures
}

// checkRatios parses every Markdown table of report and recomputes each
// derived cell from the printed figures it names, allowing for the rounding
// of the printed figures. A header naming a column the table lacks is a
// mismatch too.
func checkRatios(report string) ratioCheck {
	var out ratioCheck
	lines := strings.Split(report, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|---") {
			continue
		}
		header := cells(lines[i])
		col := map[string]int{}
		for k, h := range header {
			col[h] = k
			if m := formula.FindStringSubmatch(h); m != nil {
				// A derived column is named by its name too, so another
				// formula can build on it.
				col[strings.TrimSpace(m[1])] = k
			}
		}
		type derived struct {
			at, a, b int
			op       string
			name     string
		}
		var ds []derived
		for k, h := range header {
			m := formula.FindStringSubmatch(h)
			if m == nil {
				continue
			}
			a, okA := col[strings.TrimSpace(m[2])]
			b, okB := col[strings.TrimSpace(m[4])]
			if !okA || !okB {
				out.Mismatch = append(out.Mismatch, fmt.Sprintf("line %d: header %q names a column the table lacks", i+1, h))
				continue
			}
			ds = append(ds, derived{at: k, a: a, b: b, op: m[3], name: h})
		}
		j := i + 2
		for ; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			row := cells(lines[j])
			if len(row) != len(header) {
				out.Mismatch = append(out.Mismatch, fmt.Sprintf("line %d: %d cells under %d headers", j+1, len(row), len(header)))
				continue
			}
			for _, d := range ds {
				got, gd, ok1 := number(row[d.at])
				a, ad, ok2 := number(row[d.a])
				b, bd, ok3 := number(row[d.b])
				if !ok1 || !ok2 || !ok3 {
					continue // a dash: nothing to recompute
				}
				var want, tol float64
				ua, ub := half(ad), half(bd)
				switch d.op {
				case "÷":
					if b == 0 {
						continue
					}
					want = a / b
					tol = math.Abs(want) * (ua/math.Max(math.Abs(a)-ua, 1e-12) + ub/math.Max(math.Abs(b)-ub, 1e-12))
				case "−":
					want = a - b
					tol = ua + ub
				}
				tol += half(gd) + 1e-9
				out.Checked++
				if math.Abs(got-want) > tol {
					out.Mismatch = append(out.Mismatch, fmt.Sprintf("line %d: %q is %s but %s %s %s gives %.4f",
						j+1, d.name, row[d.at], row[d.a], d.op, row[d.b], want))
				}
			}
		}
		i = j - 1
	}
	return out
}

// cells splits a Markdown table line into trimmed cells; an escaped pipe
// (\|) stays inside its cell.
func cells(line string) []string {
	const escaped = "\x00"
	line = strings.ReplaceAll(strings.TrimSpace(line), `\|`, escaped)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	parts := strings.Split(line, "|")
	for k := range parts {
		parts[k] = strings.ReplaceAll(strings.TrimSpace(parts[k]), escaped, "|")
	}
	return parts
}

// number parses a printed figure ("0.82", "14322", "19.8×", "**0.52**")
// and returns it with its number of decimals.
func number(s string) (float64, int, bool) {
	s = strings.Trim(s, "*")
	s = strings.TrimSuffix(s, "×")
	s = strings.TrimSpace(s)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, 0, false
	}
	dec := 0
	if k := strings.IndexByte(s, '.'); k >= 0 {
		dec = len(s) - k - 1
	}
	return v, dec, true
}

// half is half a unit in the last printed place of a figure with dec
// decimals: the most its rounding can have moved it.
func half(dec int) float64 { return 0.5 * math.Pow10(-dec) }
