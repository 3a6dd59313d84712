package view_test

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// loadedView returns a view holding size instances in applications of
// perApp, every cached document (JSON and XML, plain and gzip, full and
// delta) built once as readers would have, and a delta window of window
// entries (modifications of loaded instances).
func loadedView(b *testing.B, size, perApp, window int) (*view.View, []*actors.Instance, *atomic.Uint64) {
	b.Helper()
	v, _, insts, ver := registeredView(size, perApp)
	for i := 0; i < window; i++ {
		modify(v, insts, i%size, ver)
	}
	s := v.Snapshot()
	for _, f := range []view.Format{view.FormatJSON, view.FormatXML} {
		for _, gz := range []bool{false, true} {
			s.Full(f, gz)
			s.Delta(f, gz)
		}
	}
	runtime.GC() // the loading's garbage is not the writes' cost
	return v, insts, ver
}

// registeredView returns a view on a manual clock holding size instances in
// applications of perApp, with an empty delta window, the instances and
// the version counter.
func registeredView(size, perApp int) (*view.View, *actors.ManualClock, []*actors.Instance, *atomic.Uint64) {
	clock := actors.NewManualClock(time.Unix(1754500000, 0))
	cfg := view.DefaultConfig(eureka.Encoders())
	cfg.Clock = clock
	v := view.New(cfg)
	insts := make([]*actors.Instance, size)
	ver := &atomic.Uint64{}
	evs := make([]actors.Event, 0, perApp)
	for i := 0; i < size; i++ {
		in := decodedInstance(appName(i/perApp), i)
		in.ActionType = actors.ActionAdded
		insts[i] = in
		evs = append(evs, actors.Event{Action: actors.ActionAdded, Instance: in, Version: actors.Version{Clock: ver.Add(1), Node: "n1"}})
		if len(evs) == perApp || i == size-1 {
			v.ApplyBatch(evs)
			evs = evs[:0]
		}
	}
	v.ClearDelta()
	return v, clock, insts, ver
}

// modify re-registers instance i with a new timestamp, as a client's
// re-registration does.
func modify(v *view.View, insts []*actors.Instance, i int, ver *atomic.Uint64) {
	in := insts[i].Clone()
	in.ActionType = actors.ActionModified
	in.LastUpdatedTimestamp++
	insts[i] = in
	v.Apply(&actors.Event{Action: actors.ActionModified, Instance: in, Version: actors.Version{Clock: ver.Add(1), Node: "n1"}})
}

// BenchmarkWrite measures one registry change (View.Apply) against registry
// size and delta window length: the cost should not grow with either, since
// a write copies its application's slices, makes one piece and updates the
// sorted map, and encodes nothing.
func BenchmarkWrite(b *testing.B) {
	for _, size := range []int{1000, 10000, 100000} {
		for _, window := range []int{0, 10000} {
			b.Run(fmt.Sprintf("instances=%d/window=%d", size, window), func(b *testing.B) {
				v, insts, ver := loadedView(b, size, 20, window)
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				for b.Loop() {
					modify(v, insts, i%size, ver)
					i += 7919 // spread over applications
				}
			})
		}
	}
}

// BenchmarkWriteFresh measures a registration of a new instance id (a
// deploy's): the registry and the delta window grow with every write, the
// ids spread over the applications as the report's fresh registrations do.
// The instances are decoded beforehand; the cost is the view's alone.
func BenchmarkWriteFresh(b *testing.B) {
	for _, size := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) {
			v, _, ver := loadedView(b, size, 20, 0)
			apps := size / 20
			fresh := make([]*actors.Instance, 0, 1<<16)
			for i := range cap(fresh) {
				in := decodedInstance(appName(i%apps), size+i)
				in.ActionType = actors.ActionAdded
				fresh = append(fresh, in)
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				v.Apply(&actors.Event{Action: actors.ActionAdded, Instance: fresh[i%len(fresh)], Version: actors.Version{Clock: ver.Add(1), Node: "n1"}})
				i++
			}
		})
	}
}

// BenchmarkWriteParallel is BenchmarkWrite from GOMAXPROCS goroutines, each
// writing its own applications (as application actors do): the writes share
// only the short critical section that installs a snapshot.
func BenchmarkWriteParallel(b *testing.B) {
	for _, size := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) {
			v, insts, ver := loadedView(b, size, 20, 0)
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				// Worker w owns the applications a with a % workers == w.
				w := int(next.Add(1) - 1)
				const workers = 64
				apps := size / 20
				a := w % workers
				j := 0
				for pb.Next() {
					i := a*20 + j%20
					if i >= size {
						a, i = w%workers, (w%workers)*20
					}
					modify(v, insts, i, ver)
					j++
					if j%20 == 0 {
						a += workers
						if a >= apps {
							a = w % workers
						}
					}
				}
			})
		})
	}
}

// BenchmarkWriteThenRead is one change followed by the reads a Java client
// fleet makes of the new snapshot: the gzipped JSON full document and delta.
// Its cost grows with the registry (the full document is reassembled), but
// only the changed application is encoded and compressed.
func BenchmarkWriteThenRead(b *testing.B) {
	for _, size := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) {
			v, insts, ver := loadedView(b, size, 20, 1000)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				modify(v, insts, i%size, ver)
				s := v.Snapshot()
				s.Full(view.FormatJSON, true)
				s.Delta(view.FormatJSON, true)
				i += 7919
			}
		})
	}
}

// BenchmarkWriteThenReadDelta is one change followed by one gzipped JSON
// delta read as the server writes it, with a delta window of 3,000 changes: what a Java client
// fleet's delta fetches cost while churn runs.
func BenchmarkWriteThenReadDelta(b *testing.B) {
	for _, size := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) {
			v, insts, ver := loadedView(b, size, 20, 3000)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				modify(v, insts, i%size, ver)
				_, _ = v.Snapshot().DeltaBody(view.FormatJSON, true).WriteTo(io.Discard)
				i += 7919
			}
		})
	}
}

// BenchmarkReadDelta is a read of a built delta document (JSON, gzip), as
// it is written to a connection, with a window of 100 changes spread over
// the applications: what a read costs between writes.
func BenchmarkReadDelta(b *testing.B) {
	for _, size := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) {
			v, insts, ver := loadedView(b, size, 20, 0)
			for i := range 100 {
				modify(v, insts, i*7919%size, ver)
			}
			s := v.Snapshot()
			_, _ = s.DeltaBody(view.FormatJSON, true).WriteTo(io.Discard)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _ = s.DeltaBody(view.FormatJSON, true).WriteTo(io.Discard)
			}
		})
	}
}

// BenchmarkPruneDelta is the delta window's pruning at Eureka's interval
// (30 s) under 1,000 writes per second: 30,000 changes expire at once. A
// writer runs beside it and reports the longest a write took
// (max-write-µs), since pruning shares the lock that installs snapshots;
// prune=none is the same writer beside a 40 ms sleep instead, the floor
// that the machine's scheduling and collections give.
func BenchmarkPruneDelta(b *testing.B) {
	for _, perApp := range []int{20, 1000} {
		for _, prune := range []bool{true, false} {
			name := fmt.Sprintf("instances=100000/perApp=%d/expiring=30000/prune=none", perApp)
			if prune {
				name = strings.Replace(name, "prune=none", "prune=all", 1)
			}
			b.Run(name, func(b *testing.B) { benchPrune(b, 100000, perApp, 30000, prune) })
		}
	}
}

func benchPrune(b *testing.B, size, perApp, expiring int, prune bool) {
	v, clock, insts, ver := registeredView(size, perApp)
	var worst time.Duration
	for j := 0; b.Loop(); j++ {
		b.StopTimer()
		for k := range expiring { // 1,000 a second for the window's 30 s
			modify(v, insts, (j+k*7919)%size, ver)
			if k%1000 == 999 {
				clock.Advance(time.Second)
			}
		}
		clock.Advance(4 * time.Minute) // all of them past the retention
		runtime.GC()
		stop, done := make(chan struct{}), make(chan time.Duration)
		go func() {
			var w time.Duration
			for i := 0; ; i++ {
				select {
				case <-stop:
					done <- w
					return
				default:
				}
				t := time.Now()
				modify(v, insts, (i*104729)%size, ver)
				w = max(w, time.Since(t))
			}
		}()
		b.StartTimer()
		if prune {
			v.PruneDelta()
		} else {
			time.Sleep(40 * time.Millisecond)
		}
		b.StopTimer()
		close(stop)
		worst = max(worst, <-done)
		v.ClearDelta()
		b.StartTimer()
	}
	b.ReportMetric(float64(worst.Microseconds()), "max-write-µs")
}

// BenchmarkChurnThenReadDelta is deploy churn, a fresh registration and the
// cancel of the oldest instance, followed by one gzipped JSON delta read as
// the server writes it, with 3,000 such pairs in the window: the delta then
// holds mostly deleted states, which it keeps packed and unpacks to encode
// (packed.go).
func BenchmarkChurnThenReadDelta(b *testing.B) {
	for _, size := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) {
			v, clock, insts, ver := registeredView(size, 20)
			next := size
			pair := func() {
				old := insts[0]
				in := decodedInstance(old.App, next)
				next++
				in.ActionType = actors.ActionAdded
				v.Apply(&actors.Event{Action: actors.ActionAdded, Instance: in, Version: actors.Version{Clock: ver.Add(1), Node: "n1"}})
				gone := old.Clone()
				gone.ActionType = actors.ActionDeleted
				gone.LeaseInfo.EvictionTimestamp = clock.Now().UnixMilli()
				v.Apply(&actors.Event{Action: actors.ActionDeleted, Instance: gone, Version: actors.Version{Clock: ver.Add(1), Node: "n1"}})
				insts = append(insts[1:], in)
				clock.Advance(time.Millisecond)
			}
			for range 3000 {
				pair()
			}
			_, _ = v.Snapshot().DeltaBody(view.FormatJSON, true).WriteTo(io.Discard)
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				pair()
				_, _ = v.Snapshot().DeltaBody(view.FormatJSON, true).WriteTo(io.Discard)
			}
		})
	}
}
