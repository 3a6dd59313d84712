package deploy_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// PromQL pieces that are not metric names.
var (
	promStringRe   = regexp.MustCompile(`"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|` + "`[^`]*`")
	promMatchersRe = regexp.MustCompile(`\{[^{}]*\}`)
	promRangeRe    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGroupingRe = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promVarRe      = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	promIdentRe    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "atan2": true, "start": true, "end": true}
)

// promMetricNames returns the metric names a PromQL expression selects:
// every identifier outside label matchers, ranges, grouping clauses and
// strings that is not a function call or a keyword.
func promMetricNames(expr string) []string {
	s := promStringRe.ReplaceAllString(expr, `""`)
	s = promMatchersRe.ReplaceAllString(s, " ")
	s = promRangeRe.ReplaceAllString(s, " ")
	s = promGroupingRe.ReplaceAllString(s, " ")
	s = promVarRe.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	var out []string
	for _, loc := range promIdentRe.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(s[loc[0]-1:loc[0]], "0123456789.") {
			continue // the exponent of a number (1e3)
		}
		call := strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(")
		if call || promKeywords[strings.ToLower(name)] || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func TestPromMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`heureka_instances`, []string{"heureka_instances"}},
		{`max by (status) (heureka_instances_by_status{job=~"$job", status!="UP"})`, []string{"heureka_instances_by_status"}},
		{`histogram_quantile(0.99, sum by (le, route) (rate(x_bucket{a="b{c}"}[$__rate_interval])))`, []string{"x_bucket"}},
		{`a / on(instance) group_left(node) b offset 5m`, []string{"a", "b"}},
		{`sum(rate(a_total[5m])) or vector(0)`, []string{"a_total"}},
		{`max(time() - (c > 0)) and bool 1e3`, []string{"c"}},
		// label_values' label reads as a metric: dashboardQueries strips it first.
		{`label_values(heureka_cluster_ready{job=~"$job"}, instance)`, []string{"heureka_cluster_ready", "instance"}},
	} {
		assert.Equal(t, c.want, promMetricNames(c.expr), c.expr)
	}
}

// labelValuesRe matches Grafana's label_values(selector, label) query.
var labelValuesRe = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// dashboardQueries returns every PromQL expression of a Grafana dashboard:
// the panels' targets (rows' nested panels included) and the query
// variables' selectors.
func dashboardQueries(t *testing.T, dash map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(panels []any)
	walk = func(panels []any) {
		for _, p := range panels {
			panel := p.(map[string]any)
			title, _ := panel["title"].(string)
			if nested, ok := panel["panels"].([]any); ok {
				walk(nested)
			}
			if panel["type"] == "row" {
				continue
			}
			targets, _ := panel["targets"].([]any)
			assert.NotEmpty(t, targets, "panel %q has no query", title)
			for _, tg := range targets {
				target := tg.(map[string]any)
				expr, _ := target["expr"].(string)
				assert.NotEmpty(t, expr, "panel %q has a target without expr", title)
				out["panel "+title+" "+target["refId"].(string)] = expr
			}
		}
	}
	walk(dash["panels"].([]any))
	for _, v := range dash["templating"].(map[string]any)["list"].([]any) {
		variable := v.(map[string]any)
		if variable["type"] != "query" {
			continue
		}
		q := variable["query"]
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		qs, _ := q.(string)
		if m := labelValuesRe.FindStringSubmatch(qs); m != nil {
			qs = m[1]
		}
		out["variable "+variable["name"].(string)] = qs
	}
	return out
}

func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("grafana/heureka.json")
	require.NoError(t, err)
	var dash map[string]any
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is JSON")
	assert.Equal(t, "heureka", dash["uid"])
	assert.NotEmpty(t, dash["title"])

	// Panels: unique ids, a position, the data source variable, and the
	// ones the operations guide promises.
	ids := map[float64]bool{}
	titles := map[string]bool{}
	var walk func([]any)
	walk = func(panels []any) {
		for _, p := range panels {
			panel := p.(map[string]any)
			id := panel["id"].(float64)
			assert.False(t, ids[id], "panel id %v is used twice", id)
			ids[id] = true
			assert.Contains(t, panel, "gridPos", panel["title"])
			titles[panel["title"].(string)] = true
			if panel["type"] != "row" {
				ds, _ := panel["datasource"].(map[string]any)
				assert.Equal(t, "${datasource}", ds["uid"], "panel %q uses the data source variable", panel["title"])
			}
			if nested, ok := panel["panels"].([]any); ok {
				walk(nested)
			}
		}
	}
	walk(dash["panels"].([]any))
	for _, want := range []string{"Instances", "Instances by status", "Renewals vs threshold", "Self-preservation engaged",
		"Members by state", "Replication queue depth", "Replication errors and drops", "HTTP latency p99 by route"} {
		assert.True(t, titles[want], "no panel %q", want)
	}

	// Every metric an expression names is one a running cluster exports.
	queries := dashboardQueries(t, dash)
	used := map[string][]string{}
	for where, expr := range queries {
		names := promMetricNames(expr)
		assert.NotEmpty(t, names, "%s: no metric in %q", where, expr)
		for _, n := range names {
			used[n] = append(used[n], where)
		}
	}
	nodes := startCluster(t, 2)
	traffic(t, nodes[0])
	f := scrape(t, nodes[0])
	var missing []string
	for name, where := range used {
		if !f.exports(name) {
			missing = append(missing, name+" (used by "+strings.Join(where, ", ")+")")
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "the dashboard queries metrics the node does not export")
	t.Logf("%d queries use %d metric names", len(queries), len(used))
}

// metricsDocRe matches a family named in the first column of a table in
// METRICS.md.
var metricsDocRe = regexp.MustCompile("(?m)^\\| `([a-z_:][a-z0-9_:]*)` \\|")

func TestMetricsDocListsEveryFamily(t *testing.T) {
	raw, err := os.ReadFile("METRICS.md")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, m := range metricsDocRe.FindAllStringSubmatch(string(raw), -1) {
		documented[m[1]] = true
	}
	require.NotEmpty(t, documented)

	nodes := startCluster(t, 2)
	traffic(t, nodes[0])
	// Let the nodes exchange what makes every family appear (per-peer
	// series, renewal counts).
	require.Eventually(t, func() bool {
		f := scrape(t, nodes[0])
		return f.exports("heureka_replication_queue_depth") && f.exports("heureka_http_request_duration_seconds_count")
	}, 10*time.Second, 50*time.Millisecond)
	f := scrape(t, nodes[0])
	for name, mf := range f {
		if !strings.HasPrefix(name, "heureka_") {
			continue
		}
		assert.True(t, documented[name], "%s is exported but not in METRICS.md", name)
		assert.NotEmpty(t, mf.GetHelp(), "%s has no help", name)
	}
	for name := range documented {
		assert.True(t, f.exports(name), "METRICS.md lists %s, which the node does not export", name)
	}
	// The node lists itself, as every node does in production.
	assert.True(t, f.exports("heureka_application_instances"))
	found := false
	for _, m := range f["heureka_application_instances"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "application" && lp.GetValue() == node.SelfApp {
				found = true
			}
		}
	}
	assert.True(t, found, "the nodes' own instances are counted")
}
