package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/heureka/heureka/bench"
)

// sizeReport is everything measured on one server at one size.
type sizeReport struct {
	size     int
	server   string
	loadTime time.Duration
	heap     bench.Heap // in-process only
	rss      int64      // a server process's RSS after the scenarios
	rows     []*row

	lat             bench.Latencies
	rebuildPlain    time.Duration
	rebuildGzip     time.Duration
	p50, p99, max   time.Duration
	p99Send         time.Duration
	floorP50        time.Duration
	floorP99        time.Duration
	floorMax        time.Duration
	readableSamples int

	deploy *deployReport
	alone  *churnAlone // the churn of the reads under churn, with no reads
	reads  []*churnRead
	// failure is the error that ended the deploy or churn-read
	// measurements early (printed; the run exits 1).
	failure string
}

// deployReport is a deploy of many new instances at once and their cancel.
type deployReport struct {
	count            int
	deploy, undeploy bench.Result
	// deltaBytes is the gzipped JSON delta right after the deploy.
	deltaBytes int
	load       float64
}

// churnRead is one document read quietly and then while churn runs, on the
// same number of connections for the same time.
// churnAlone is the paced churn alone: its pair rate and how long its
// registrations took.
type churnAlone struct {
	pairs  bench.Result
	regP99 time.Duration
	regs   int
	load   float64
}

type churnRead struct {
	doc   string
	quiet bench.Result
	// reads are Heureka's rounds under churn and statics the static
	// server's, alternating with one static round more: static, Heureka,
	// static, …, static. A static round reads the document's bytes (for
	// app, every application's at its path) as Heureka served them just
	// before it, with the same churn running
	// against Heureka: the ceiling on the same busy machine, measured on
	// both sides of every Heureka round (the delta grows during the churn,
	// and at 1M one collection decides a round, so one round each way is
	// noise).
	reads, statics []bench.Result
	// staticRegP99 is the register p99 of the churn during the static
	// rounds: what the same churn's registrations take while a static
	// server, not Heureka, keeps the CPUs busy with reads.
	staticRegP99 time.Duration
	staticRegs   int
	pairs        bench.Result  // the churn during Heureka's rounds, summed
	regP99       time.Duration // registrations of the churn, sent to 204
	regs         int           // how many registrations regP99 is over
	load         float64
}

// medianRate is the median of the rounds' request rates.
func medianRate(rs []bench.Result) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.Rate()
	}
	return median(xs)
}

// rateRange is the lowest and highest of the rounds' request rates,
// "min–max".
func rateRange(rs []bench.Result) string {
	if len(rs) == 0 {
		return "–"
	}
	lo, hi := rs[0].Rate(), rs[0].Rate()
	for _, r := range rs[1:] {
		lo, hi = min(lo, r.Rate()), max(hi, r.Rate())
	}
	return rate(lo) + "–" + rate(hi)
}

// summed adds rounds up: their requests, bytes, time and CPU.
func summed(rs []bench.Result) bench.Result {
	var t bench.Result
	for _, r := range rs {
		t.Requests += r.Requests
		t.Bytes += r.Bytes
		t.Elapsed += r.Elapsed
		t.CPU += r.CPU
		t.ServerCPU += r.ServerCPU
		t.External = t.External || r.External
	}
	return t
}

func measureReadable(o options, f *bench.Fixture, r *sizeReport) error {
	f.ForgetDelta()
	rc := bench.NewClient(1)
	defer rc.CloseIdleConnections()
	// The floor: one GET of an application document from the static
	// server, interleaved with the samples.
	st, err := bench.Serve(bench.Static(bench.OneApp, bench.OneApp.Bodies(f, 1)))
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := f.RegisterToReadable(rc, 10, st.Base); err != nil {
		return err
	}
	if r.lat, err = f.RegisterToReadable(rc, o.samples, st.Base); err != nil {
		return err
	}
	r.readableSamples = len(r.lat.FromAck)
	r.p50 = bench.Percentile(r.lat.FromAck, 50)
	r.p99 = bench.Percentile(r.lat.FromAck, 99)
	r.max = bench.Percentile(r.lat.FromAck, 100)
	r.p99Send = bench.Percentile(r.lat.FromSend, 99)
	r.floorP50, r.floorP99 = bench.Percentile(r.lat.Floor, 50), bench.Percentile(r.lat.Floor, 99)
	r.floorMax = bench.Percentile(r.lat.Floor, 100)
	progress("instances=%d readable p50 %v p99 %v (static GET p50 %v p99 %v)", r.size, r.p50, r.p99, r.floorP50, r.floorP99)
	return nil
}

// measureDeployAndChurnReads runs the deploy (and its cancel) and then the
// reads quiet and under churn. The churn replaces the loaded instances, so
// it comes last.
func measureDeployAndChurnReads(o options, s *subject, c *http.Client, r *sizeReport) error {
	conc := bench.Concurrency()
	if o.deploy > 0 {
		if s.forgetDelta != nil {
			s.forgetDelta()
		}
		q := bench.NewQueue()
		d := &deployReport{count: o.deploy}
		var err error
		if d.deploy, err = bench.Deploy(c, s.base, s.apps, o.deploy, conc, q, s.pid); err != nil {
			return fmt.Errorf("deploy: %w", err)
		}
		delta, err := bench.Delta.Fetch(c, s.base)
		if err != nil {
			return err
		}
		d.deltaBytes = len(delta)
		if d.undeploy, err = bench.MeasureCtx(context.Background(), c, bench.CancelLoad(s.base, q, http.StatusOK), conc, s.pid); err != nil {
			return fmt.Errorf("undeploy: %w", err)
		}
		d.load = bench.Load1()
		r.deploy = d
		progress("%s instances=%d deploy of %d: %v (%.1f µs CPU/op), cancel: %v", s.server, s.size, o.deploy,
			d.deploy.Elapsed.Round(time.Millisecond), cpuPerOp(d.deploy), d.undeploy.Elapsed.Round(time.Millisecond))
	}
	if o.underChurn <= 0 {
		return nil
	}
	if s.forgetDelta != nil {
		s.forgetDelta()
	}
	q := bench.LoadedQueue(s.size)
	readConns, churnConns := max(1, conc/2), max(1, conc/2)
	{
		var regs bench.Durations
		ca := &churnAlone{}
		var err error
		collect() // as before every other round: the deploy's garbage is not the churn's cost
		if ca.pairs, err = bench.PacedChurn(c, bench.TimedChurnLoad(s.base, q, http.StatusNoContent, http.StatusOK, &regs),
			churnConns, o.underChurn, o.underChurnRate, s.pid); err != nil {
			return fmt.Errorf("churn alone: %w", err)
		}
		ca.regP99, ca.regs = regs.Percentile(99)
		ca.load = bench.Load1()
		r.alone = ca
		progress("%s instances=%d churn alone: %.1f pairs/s, register p99 %v", s.server, s.size, ca.pairs.Rate(), ca.regP99)
	}
	for _, d := range []bench.Doc{bench.FullGzip, bench.Delta, bench.OneApp} {
		cr, err := measureChurnRead(o, s, c, d, q, readConns, churnConns)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Name, err)
		}
		r.reads = append(r.reads, cr)
		progress("%s instances=%d %s: %.1f req/s quiet, %.1f req/s under churn (median of %s; %.1f pairs/s, register p99 %v, %.1f µs CPU/read); static under churn %.1f (median of %s; register p99 %v, %.1f µs CPU/read)", s.server, s.size, d.Name,
			cr.quiet.Rate(), medianRate(cr.reads), rateRange(cr.reads), cr.pairs.Rate(), cr.regP99, cpuPerOp(summed(cr.reads)),
			medianRate(cr.statics), rateRange(cr.statics), cr.staticRegP99, cpuPerOp(summed(cr.statics)))
	}
	return nil
}

// measureChurnRead reads d quiet, then under churn from s and from a static
// server. In process the delta window is held at the changes of the last
// o.underChurn (Fixture.HoldDeltaWindow), filled by the churn before the
// quiet round and frozen during it, so that every round reads a delta of
// the same steady size.
func measureChurnRead(o options, s *subject, c *http.Client, d bench.Doc, q *bench.Queue, readConns, churnConns int) (*churnRead, error) {
	cr := &churnRead{doc: d.Name}
	hold := func() func() { return func() {} }
	if s.holdDelta != nil {
		hold = func() func() { return s.holdDelta(o.underChurn) }
	}
	if s.forgetDelta != nil {
		s.forgetDelta()
	}
	var untimed bench.Durations
	stop := hold()
	_, err := bench.PacedChurn(c, bench.TimedChurnLoad(s.base, q, http.StatusNoContent, http.StatusOK, &untimed),
		churnConns, o.underChurn, o.underChurnRate, s.pid)
	stop()
	if err != nil {
		return nil, fmt.Errorf("filling the delta window: %w", err)
	}
	l := d.LoadFor(s.apps, s.base)
	if _, err := l.New(c, 0)(); err != nil {
		return nil, err
	}
	collect()
	if cr.quiet, err = bench.Measure(c, l, readConns, o.underChurn); err != nil {
		return nil, fmt.Errorf("quiet: %w", err)
	}

	stop = hold()
	defer stop()
	var regs, staticRegs bench.Durations
	staticRound := func() error {
		bodies, err := s.body(d)
		if err != nil {
			return err
		}
		st, err := bench.Serve(bench.Static(d, bodies))
		if err != nil {
			return err
		}
		defer st.Close()
		churn := bench.TimedChurnLoad(s.base, q, http.StatusNoContent, http.StatusOK, &staticRegs)
		collect()
		reads, _, err := bench.UnderChurn(c, d.LoadFor(s.apps, st.Base), churn, readConns, churnConns, o.underChurn, s.pid, o.underChurnRate)
		if err != nil {
			return fmt.Errorf("static under churn: %w", err)
		}
		cr.statics = append(cr.statics, reads)
		return nil
	}
	var pairs []bench.Result
	for range o.rounds {
		if err := staticRound(); err != nil {
			return nil, err
		}
		churn := bench.TimedChurnLoad(s.base, q, http.StatusNoContent, http.StatusOK, &regs)
		collect()
		reads, p, err := bench.UnderChurn(c, l, churn, readConns, churnConns, o.underChurn, s.pid, o.underChurnRate)
		if err != nil {
			return nil, fmt.Errorf("under churn: %w", err)
		}
		cr.reads, pairs = append(cr.reads, reads), append(pairs, p)
	}
	if err := staticRound(); err != nil {
		return nil, err
	}
	cr.pairs = summed(pairs)
	cr.regP99, cr.regs = regs.Percentile(99)
	cr.staticRegP99, cr.staticRegs = staticRegs.Percentile(99)
	cr.load = bench.Load1()
	return cr, nil
}

// cpuPerOp is the CPU per operation of r in µs: this process plus a
// server process.
func cpuPerOp(r bench.Result) float64 { return totalCPU(r) / float64(time.Microsecond) }

// churnReport is the register+cancel churn run on one server.
type churnReport struct {
	server string
	run    bench.ChurnRun
	window time.Duration
	load0  string
	load1  string
	// live is the in-process heap after a collection at the end of the
	// run (0 for a server process).
	live uint64
}

func churnRun(o options, s *subject) (*churnReport, error) {
	cr := &churnReport{server: s.server, window: o.churnWindow}
	q := bench.LoadedQueue(s.size)
	c := bench.NewClient(o.churnConns)
	defer c.CloseIdleConnections()
	progress("%s: churn at %d instances on %d connections for %v", s.server, s.size, o.churnConns, o.churn)
	if s.pid != 0 && o.warmup > 0 {
		// A server process (the JVM) warms up on the same churn first.
		progress("%s: warming up the churn for %v", s.server, o.warmup)
		if _, err := bench.Churn(c, s.base, s.size, s.apps, q, o.churnConns, o.warmup, o.warmup, s.pid, o.churnRate); err != nil {
			return nil, fmt.Errorf("%s churn warm-up: %w", s.server, err)
		}
	}
	cr.load0 = bench.LoadAvg()
	var err error
	cr.run, err = bench.Churn(c, s.base, s.size, s.apps, q, o.churnConns, o.churn, o.churnSample, s.pid, o.churnRate)
	cr.load1 = bench.LoadAvg()
	if err != nil {
		return nil, fmt.Errorf("%s churn: %w", s.server, err)
	}
	if s.pid == 0 {
		if cr.live, err = liveHeap(o.heapprofile); err != nil {
			return nil, err
		}
	}
	return cr, nil
}

// collect runs a garbage collection before a measured round. The
// in-process server's heap (a loaded registry: up to gigabytes at 1M) is
// marked at a pace set by allocation, so a cycle started by the loading
// or by one round's garbage would otherwise take its CPU from whichever
// rounds it overlaps: at 1M, the first scenario's (renew) server rounds
// spent 18% of their CPU marking the loading's heap. After a collection a
// round pays only for the collections its own allocations start (at 1M:
// none in a round of a few seconds, for either side).
func collect() { runtime.GC() }

// liveHeap collects garbage and returns the heap still in use, writing a
// heap profile to file when it is set.
func liveHeap(file string) (uint64, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if file == "" {
		return ms.HeapAlloc, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return 0, err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return 0, err
	}
	return ms.HeapAlloc, f.Close()
}
