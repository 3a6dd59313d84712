package bench

// The benchmarks of BENCHMARKS.md (`make bench`).
//
// BenchmarkRegistry/instances=N loads one node with N instances (once) and
// runs every scenario against it, each right after its ceiling:
//
//	…/renew/server=trivial      …/renew/server=heureka
//	…/register/server=trivial   …/register/server=heureka
//	…/register-fresh/…          (a new instance id per request: the
//	                             registry and the delta window grow)
//	…/cancel/…                  (cancels those instances, oldest first)
//	…/full-json/server=static   …/full-json/server=heureka   (and full-xml, full-gzip)
//	…/app/server=static         …/app/server=heureka
//	…/delta/server=static       …/delta/server=heureka
//	…/readable                  (register-to-readable p50/p99)
//	…/part=…                    (renew and register in process, without
//	                             HTTP: the handler, the registry call, the
//	                             body decoding; CPU and allocations per op)
//
// The trivial server answers an empty 200; the static server writes the
// bytes Heureka serves for the same request, with the same headers. Compare
// req/s (wall clock) or cpu-µs/req (process CPU per request, load generator
// included, insensitive to other load on the machine) within a scenario;
// load1 is the 1-minute load average when the benchmark ended.
// Sizes run one after another, so only one registry is in memory at a time.
// BenchmarkHeap reports the live heap per instance. The ratio table is
// printed by `go run ./bench/cmd/report`. Nothing here runs without -bench
// (workloads_test.go holds the package's tests).

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"
)

// serve serves h for the rest of the (sub-)benchmark.
func serve(b *testing.B, h http.Handler) *Server {
	b.Helper()
	s, err := Serve(h)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// runLoad runs l on Concurrency() connections and reports req/s, process CPU
// per request and the response body size.
func runLoad(b *testing.B, l Load) {
	conc := Concurrency()
	c := NewClient(conc)
	defer c.CloseIdleConnections()
	if _, err := l.New(c, 0)(); err != nil { // a connection and the caches
		b.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	par := (conc + procs - 1) / procs
	b.SetParallelism(par)
	fns := make([]func() (int64, error), par*procs) // RunParallel's goroutines
	for i := range fns {
		fns[i] = l.New(c, i+1)
	}
	var workers, nbytes atomic.Int64
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		next := fns[int(workers.Add(1)-1)%len(fns)]
		var sum int64
		for pb.Next() {
			n, err := next()
			if err != nil {
				b.Error(err)
				break
			}
			sum += n
		}
		nbytes.Add(sum)
	})
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/req")
	b.ReportMetric(float64(nbytes.Load())/float64(b.N), "B/resp")
	b.ReportMetric(Load1(), "load1")
}

func sizeName(size int) string { return fmt.Sprintf("instances=%d", size) }

// BenchmarkRegistry runs every scenario at every size; see the file comment.
func BenchmarkRegistry(b *testing.B) {
	for _, size := range Sizes {
		b.Run(sizeName(size), func(b *testing.B) {
			var f *Fixture
			defer func() {
				if f != nil {
					f.Stop()
				}
			}()
			fixture := func(b *testing.B) *Fixture {
				if f == nil {
					var err error
					if f, err = NewFixture(size); err != nil {
						b.Fatal(err)
					}
				}
				return f
			}
			for _, sc := range Scenarios {
				if sc.Name == AA {
					continue // its subject is not Heureka: a report's measure of chance
				}
				b.Run(sc.Name, func(b *testing.B) {
					ceiling, subject, stop, err := sc.Setup(fixture(b))
					if err != nil {
						b.Fatal(err)
					}
					defer stop()
					b.Run("server="+sc.Ceiling, func(b *testing.B) { runLoad(b, ceiling) })
					b.Run("server=heureka", func(b *testing.B) {
						if sc.Name == "cancel" {
							// b.N instances to cancel (and one for the warm-up).
							f.Fresh.SetBudget(-1)
							if err := f.FillFresh(b.N + 1); err != nil {
								b.Fatal(err)
							}
						}
						runLoad(b, subject)
					})
				})
			}
			b.Run("readable", func(b *testing.B) { benchReadable(b, fixture(b)) })
			for _, p := range Parts {
				b.Run("part="+p.Name, func(b *testing.B) { benchPart(b, fixture(b), p) })
			}
		})
	}
}

// benchPart runs an in-process part of renew or register on 8 goroutines
// per CPU and reports its CPU time and allocations per operation.
func benchPart(b *testing.B, f *Fixture, p Part) {
	if err := p.New(f, 0)(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(8)
	fns := make([]func() error, 8*runtime.GOMAXPROCS(0)) // RunParallel's goroutines
	for i := range fns {
		fns[i] = p.New(f, i+1)
	}
	var workers atomic.Int64
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		next := fns[int(workers.Add(1)-1)%len(fns)]
		// The label follows the work into the actors' goroutines, which
		// are started by the sender: -tagfocus=part=… isolates the part
		// from the loading in a -cpuprofile.
		pprof.Do(context.Background(), pprof.Labels("part", p.Name), func(context.Context) {
			for pb.Next() {
				if err := next(); err != nil {
					b.Error(err)
					break
				}
			}
		})
	})
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(Load1(), "load1")
}

// benchReadable registers b.N new instances one at a time and reports the
// time from each 204 until GET apps/{app} shows the instance, and the p99 of
// one static GET interleaved with the samples (floor-p99-ms). Target: p99 ≤
// 5 ms.
func benchReadable(b *testing.B, f *Fixture) {
	c := NewClient(1)
	defer c.CloseIdleConnections()
	s := serve(b, Static(OneApp, OneApp.Bodies(f, 1)))
	if _, err := f.RegisterToReadable(c, 10, s.Base); err != nil { // warm up
		b.Fatal(err)
	}
	b.ResetTimer()
	lat, err := f.RegisterToReadable(c, b.N, s.Base)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(Percentile(lat.FromAck, 50)), "p50-ms")
	b.ReportMetric(ms(Percentile(lat.FromAck, 99)), "p99-ms")
	b.ReportMetric(ms(Percentile(lat.FromSend, 99)), "p99-from-send-ms")
	b.ReportMetric(ms(Percentile(lat.Floor, 99)), "floor-p99-ms")
}

// BenchmarkHeap loads a fresh node per iteration and reports the live heap
// per instance: registry state, then the encoded response caches (every full
// document, then every application document, all formats, plain and gzip).
// Target: state ≤ 2048 B/inst at 100k.
func BenchmarkHeap(b *testing.B) {
	for _, size := range Sizes {
		b.Run(sizeName(size), func(b *testing.B) {
			var h Heap
			for i := 0; i < b.N; i++ {
				var err error
				if h, err = MeasureHeap(size); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(h.PerInstance(h.State), "state-B/inst")
			b.ReportMetric(h.PerInstance(h.FullCaches), "fullcache-B/inst")
			b.ReportMetric(h.PerInstance(h.AppCaches), "appcache-B/inst")
		})
	}
}
