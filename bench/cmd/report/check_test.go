package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/bench"
)

// res is a round of n requests in 1 s using cpu of this process and srv of
// a server process (external when srv > 0).
func res(n int64, cpu, srv time.Duration) bench.Result {
	return bench.Result{Requests: n, Bytes: n * 100, Elapsed: time.Second, CPU: cpu, ServerCPU: srv, External: srv > 0}
}

// fakeRow builds a row whose rounds make the median of per-round ratios
// differ from the ratio of the medians: subject 100, 100, 300 req/s against
// ceiling 100, 300, 300 gives per-round ratios 1, 1/3, 1 (median 1) but
// medians 100 ÷ 300.
func fakeRow(sc bench.Scenario, size int, server string, external bool, scale int64) *row {
	srv := time.Duration(0)
	if external {
		srv = 30 * time.Millisecond
	}
	rw := &row{sc: sc, size: size, server: server}
	for k, pair := range [][2]int64{{100, 100}, {100, 300}, {300, 300}} {
		s, c := pair[0]*scale, pair[1]*scale
		rw.subject = append(rw.subject, res(s, time.Duration(k+5)*time.Millisecond*time.Duration(scale), srv*time.Duration(scale)))
		rw.ceiling = append(rw.ceiling, res(c, time.Duration(7-k)*time.Millisecond*time.Duration(scale), 0))
	}
	rw.load = 1.5
	summarize(rw)
	return rw
}

// fakeRun is a run over sizes on servers with every table filled.
func fakeRun(target string, servers []string, sizes []int) *run {
	rn := &run{opts: options{target: target, rounds: 3, round: time.Second, samples: 10, deploy: 1000,
		underChurn: time.Second, warmup: time.Second, churnSample: time.Second},
		load0: "1.00 1.00 1.00", load1: "2.00 1.50 1.00", at: time.Now(), took: time.Minute}
	for _, server := range servers {
		external := server != inProcess
		for k, size := range sizes {
			r := &sizeReport{size: size, server: server, loadTime: time.Second,
				heap: bench.Heap{Size: size, State: int64(size) * 1500, FullCaches: int64(size) * 8000, AppCaches: int64(size) * 4000,
					FullJSON: size * 950, FullXML: size * 1577, FullGzip: size * 48},
				p50: time.Millisecond, p99: 2 * time.Millisecond, readableSamples: 10}
			for _, sc := range bench.Scenarios {
				r.rows = append(r.rows, fakeRow(sc, size, server, external, int64(k+1)))
			}
			srv := time.Duration(0)
			if external {
				srv = 40 * time.Millisecond
			}
			r.deploy = &deployReport{count: 1000, deploy: res(1000, 70*time.Millisecond, srv), undeploy: res(1000, 50*time.Millisecond, srv),
				deltaBytes: 12345, load: 1.1}
			r.alone = &churnAlone{pairs: res(500, time.Second, 0), regP99: 1500 * time.Microsecond, regs: 500, load: 1.3}
			for _, d := range []string{"full-gzip", "delta", "app"} {
				r.reads = append(r.reads, &churnRead{doc: d, quiet: res(3000, time.Second, 0), reads: []bench.Result{res(1700, time.Second, 0), res(1650, time.Second, 0), res(1800, time.Second, 0)},
					statics: []bench.Result{res(2000, time.Second, 0), res(2100, time.Second, 0), res(1900, time.Second, 0), res(2050, time.Second, 0)},
					pairs:   res(900, time.Second, 0), regP99: 4 * time.Millisecond, regs: 900, load: 1.2})
			}
			rn.reports = append(rn.reports, r)
		}
		cr := &churnReport{server: server, window: 10 * time.Second, load0: "1 1 1", load1: "2 2 2",
			run: bench.ChurnRun{Size: 20000, Conns: 16, Result: res(30000, time.Second, 0)}}
		for t := 0; t <= 30; t++ {
			cr.run.Samples = append(cr.run.Samples, bench.ChurnSample{At: time.Duration(t) * time.Second, Pairs: int64(t * 1000 * (1 + t/20)),
				RSS: int64(200+t) << 20, CPU: time.Duration(t) * 100 * time.Millisecond})
		}
		rn.churns = append(rn.churns, cr)
	}
	return rn
}

func render(rn *run) string {
	var b bytes.Buffer
	writeReport(&b, rn)
	return b.String()
}

func TestEveryPrintedRatioFollowsFromItsFigures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		target  string
		servers []string
	}{
		{"in-process", "heureka", []string{inProcess}},
		{"reference", "reference", []string{"heureka", "reference-cache-on", "reference-cache-off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := render(fakeRun(tc.target, tc.servers, []int{1000, 10000, 100000}))
			chk := checkRatios(out)
			assert.Empty(t, chk.Mismatch, out)
			// Every table with a ratio was found: throughput (2 per row),
			// cost and flat growth, reads under churn, churn windows, sizes.
			rows := len(bench.Scenarios) * 3 * len(tc.servers)
			assert.Greater(t, chk.Checked, 2*rows+len(tc.servers)*(len(bench.Scenarios)+6+9+3), out)
			assert.Contains(t, out, "load average 1.00 1.00 1.00 at start, 2.00 1.50 1.00 at end")
			assert.Contains(t, out, "| 1.50 |", "the load average beside every row")
			if len(tc.servers) > 1 {
				assert.Contains(t, out, "heureka ÷ reference-cache-on = heureka req/s ÷ reference-cache-on req/s")
			}
		})
	}
}

// The old report printed the median of per-round ratios beside the median
// rates (e.g. "delta 19195.0 req/s static 24314.2 req/s ratio 0.93"): put
// that computation back and the check must see it.
func TestCheckCatchesARatioComputedDifferently(t *testing.T) {
	old := wallRatio
	defer func() { wallRatio = old }()
	wallRatio = func(rw *row) float64 {
		var rs []float64
		for i := range rw.subject {
			rs = append(rs, rw.subject[i].Rate()/rw.ceiling[i].Rate())
		}
		return median(rs)
	}
	out := render(fakeRun("heureka", []string{inProcess}, []int{1000, 10000}))
	chk := checkRatios(out)
	require.NotEmpty(t, chk.Mismatch)
	assert.Contains(t, strings.Join(chk.Mismatch, "\n"), `"ratio (wall) = req/s ÷ ceiling req/s" is 1.00 but 100 ÷ 300`)
}

func TestCheckRatiosOnHandWrittenTables(t *testing.T) {
	good := "x\n\n| a | b | q = a ÷ b | d = a − b |\n|---|---:|---:|---:|\n| 14322 | 27440 | 0.52 | -13118 |\n| 16.28 | 16.69 | 0.98 | -0.41 |\n| – | 3 | – | – |\n\n"
	chk := checkRatios(good)
	assert.Empty(t, chk.Mismatch)
	assert.Equal(t, 4, chk.Checked)

	bad := "| a | b | q = a ÷ b |\n|---|---:|---:|\n| 19195.0 | 24314.2 | 0.93 |\n"
	chk = checkRatios(bad)
	require.Len(t, chk.Mismatch, 1)
	assert.Contains(t, chk.Mismatch[0], "0.7895")

	escaped := "| what | a | b | q = a ÷ b |\n|---|---:|---:|---:|\n| a 2\\|3 split | 2 | 4 | 0.50 |\n"
	chk = checkRatios(escaped)
	assert.Empty(t, chk.Mismatch, "an escaped pipe stays in its cell")
	assert.Equal(t, 1, chk.Checked)

	chained := "| load | idle | n | used = load − idle | per = used ÷ n |\n|---:|---:|---:|---:|---:|\n| 2601000 | 97000 | 20000 | 2504000 | 125.20 |\n| 2601000 | 97000 | 20000 | 2504000 | 130.00 |\n"
	chk = checkRatios(chained)
	assert.Equal(t, 4, chk.Checked, "a formula may name a derived column by its name")
	require.Len(t, chk.Mismatch, 1, "and its cells are checked against that column's figures")

	missing := "| a | q = a ÷ c |\n|---|---:|\n| 1 | 1 |\n"
	chk = checkRatios(missing)
	require.Len(t, chk.Mismatch, 1)
	assert.Contains(t, chk.Mismatch[0], "lacks")
}

// -sizes "" -churn D: a report of the churn run alone.
func TestChurnOnlyReport(t *testing.T) {
	rn := fakeRun("heureka", []string{inProcess}, []int{1000})
	rn.reports = nil
	out := render(rn)
	assert.Contains(t, out, "### Churn at a fixed size")
	assert.NotContains(t, out, "### Throughput")
	chk := checkRatios(out)
	assert.Empty(t, chk.Mismatch)
	assert.Positive(t, chk.Checked)
}

// The tables copied into BENCHMARKS.md keep their recomputable ratios.
func TestBenchmarksMDRatiosFollowFromTheirFigures(t *testing.T) {
	doc, err := os.ReadFile("../../../BENCHMARKS.md")
	require.NoError(t, err)
	chk := checkRatios(string(doc))
	assert.Empty(t, chk.Mismatch)
	assert.Positive(t, chk.Checked)
}
