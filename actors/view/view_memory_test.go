//go:build memtest

package view_test

// The memory measurement: the heap a registry of N instances
// holds (leases, instances, the view's applications and pieces), and the
// heap and RSS once every prepared document is built. Run:
//
//	go test -tags memtest -run TestMemory -v -timeout 60m ./actors/view/ \
//	    -args -sizes 100000,1000000 -per-app 20 -steps 2
//
// -steps limits the document steps after loading (full JSON gzip, full JSON
// plain, full XML, the compact formats, every application document); at a
// million instances all five need about 12 GB.
//
// It is a measurement, not a check: it logs its figures and fails only if
// the registry does not hold what was loaded.

import (
	"context"
	"flag"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

var (
	memSizes   = flag.String("sizes", "100000", "comma-separated registry sizes")
	memPerApp  = flag.Int("per-app", 20, "instances per application")
	memSteps   = flag.Int("steps", 5, "how many of the document steps to run after loading (0-5)")
	memProfile = flag.String("heap-profile", "", "write a heap profile of the loaded registry to this file")
)

func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// procStatus returns a field of /proc/self/status in bytes (VmRSS, VmHWM).
func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			kb, _ := strconv.ParseUint(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func TestMemory(t *testing.T) {
	for _, s := range strings.Split(*memSizes, ",") {
		size, err := strconv.Atoi(s)
		require.NoError(t, err)
		t.Run(s, func(t *testing.T) { measure(t, size, *memPerApp) })
		runtime.GC()
	}
}

func measure(t *testing.T, size, perApp int) {
	base := heapAfterGC()
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	cfg := actors.DefaultConfig("n1")
	cfg.Sinks = []actors.Sink{v}
	cfg.SelfPreservation = false
	cfg.RequestTimeout = 10 * time.Minute // the machine may be loaded
	cfg.EvictionInterval = 24 * time.Hour // loading may take longer than a lease
	reg, err := actors.NewRegistry(cfg)
	require.NoError(t, err)
	defer reg.Close()

	start := time.Now()
	var wg sync.WaitGroup
	const workers = 8
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < size; i += workers {
				if err := reg.Register(context.Background(), decodedInstance(appName(i/perApp), i), false); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	v.ClearDelta()
	require.Equal(t, size, v.Snapshot().Count())
	loaded := heapAfterGC()
	t.Logf("size %d in %d apps: loaded in %v; registry heap %.0f B/instance (%.1f MiB); RSS %.1f MiB",
		size, (size+perApp-1)/perApp, time.Since(start).Round(time.Millisecond),
		float64(loaded-base)/float64(size), float64(loaded-base)/(1<<20), float64(procStatus("VmRSS"))/(1<<20))

	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		require.NoError(t, err)
		require.NoError(t, pprof.WriteHeapProfile(f))
		require.NoError(t, f.Close())
	}

	s := v.Snapshot()
	steps := 0
	step := func(name string, build func()) {
		if steps++; steps > *memSteps {
			return
		}
		t0 := time.Now()
		build()
		h := heapAfterGC()
		t.Logf("  + %-34s built in %8v: heap %6.0f B/instance (%7.1f MiB), RSS %7.1f MiB, peak RSS %7.1f MiB",
			name, time.Since(t0).Round(time.Millisecond), float64(h-base)/float64(size), float64(h-base)/(1<<20),
			float64(procStatus("VmRSS"))/(1<<20), float64(procStatus("VmHWM"))/(1<<20))
	}
	step("full JSON gzip", func() { s.Full(view.FormatJSON, true) })
	step("full JSON plain", func() { s.Full(view.FormatJSON, false) })
	step("full XML plain and gzip", func() { s.Full(view.FormatXML, false); s.Full(view.FormatXML, true) })
	step("full compact JSON and XML, both", func() {
		for _, f := range []view.Format{view.FormatCompactJSON, view.FormatCompactXML} {
			s.Full(f, false)
			s.Full(f, true)
		}
	})
	step("every app document, all formats", func() {
		s.Apps(func(a *view.App) bool {
			for f := view.Format(0); f < view.NumFormats; f++ {
				s.AppDocument(a.Name(), f, false)
				s.AppDocument(a.Name(), f, true)
			}
			return true
		})
	})
	runtime.KeepAlive(s)
}

var (
	churnRate    = flag.Int("churn-rate", 4000, "register+cancel pairs per simulated second (TestChurnMemory)")
	churnMinutes = flag.Int("churn-minutes", 10, "simulated minutes of churn (TestChurnMemory)")
	churnSize    = flag.Int("churn-size", 20000, "fixed registry size under churn (TestChurnMemory)")
)

// TestChurnMemory measures what churn retains in the view: a registry of
// churn-size instances (20 per application) takes churn-rate register+cancel
// pairs per second with fresh ids, on a simulated clock, with the delta
// pruned every 30 s and the full and delta documents (JSON, gzip) read every
// 30 s as Eureka's response cache would. It logs the heap after GC and the
// RSS every simulated minute.
//
//	go test -tags memtest -run TestChurnMemory -v -timeout 60m ./actors/view/
func TestChurnMemory(t *testing.T) {
	base := heapAfterGC()
	clock := actors.NewManualClock(time.Unix(1754500000, 0))
	cfg := view.DefaultConfig(eureka.Encoders())
	cfg.Clock = clock
	v := view.New(cfg)
	size, rate := *churnSize, *churnRate
	var ver uint64
	apply := func(action actors.ActionType, in *actors.Instance) {
		in.ActionType = action
		ver++
		v.Apply(&actors.Event{Action: action, Instance: in, Version: actors.Version{Clock: ver, Node: "n1"}})
	}
	for i := 0; i < size; i++ {
		apply(actors.ActionAdded, decodedInstance(appName(i/20), i))
	}
	v.ClearDelta()
	loaded := heapAfterGC()
	t.Logf("registry of %d: view heap %.1f MiB, RSS %.1f MiB", size, float64(loaded-base)/(1<<20),
		float64(procStatus("VmRSS"))/(1<<20))

	const tick = 100 * time.Millisecond
	perTick := rate / 10
	next := size // fresh ids
	start := time.Now()
	for step := 1; step <= *churnMinutes*600; step++ {
		for j := 0; j < perTick; j++ {
			// A fresh instance joins an application and leaves at once:
			// the registry size stays fixed, the window fills.
			in := decodedInstance(appName(next%(size/20)), next)
			apply(actors.ActionAdded, in)
			gone := in.Clone()
			gone.LeaseInfo.EvictionTimestamp = clock.Now().UnixMilli()
			apply(actors.ActionDeleted, gone)
			next++
		}
		clock.Advance(tick)
		if step%300 == 0 { // every 30 s
			v.PruneDelta()
			s := v.Snapshot()
			s.Full(view.FormatJSON, true)
			s.Delta(view.FormatJSON, true)
		}
		if step%600 == 0 {
			h := heapAfterGC()
			s := v.Snapshot()
			t.Logf("minute %2d (%v): %d entries in the delta window, delta gzip %.1f MiB; view heap %.1f MiB "+
				"(%.0f B per retained entry); RSS %.1f MiB, peak %.1f MiB",
				step/600, time.Since(start).Round(time.Second), s.DeltaLen(),
				float64(len(s.Delta(view.FormatJSON, true)))/(1<<20), float64(h-base)/(1<<20),
				float64(h-loaded)/float64(max(1, s.DeltaLen())),
				float64(procStatus("VmRSS"))/(1<<20), float64(procStatus("VmHWM"))/(1<<20))
		}
	}
	require.Equal(t, size, v.Snapshot().Count())
}
