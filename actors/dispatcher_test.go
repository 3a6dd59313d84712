package actors

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkerDispatcherReusesWorkers schedules runs one after another, as a
// request after a request does: they all run, on at most max workers
// rather than a goroutine each.
func TestWorkerDispatcherReusesWorkers(t *testing.T) {
	d := newWorkerDispatcher(10, 4)
	ids := map[uint64]bool{}
	var mu sync.Mutex
	for range 200 {
		ran := make(chan struct{})
		d.Schedule(func() {
			mu.Lock()
			ids[goroutineID()] = true
			mu.Unlock()
			close(ran)
		})
		<-ran
		// Let the worker get back to waiting before the next run.
		require.Eventually(t, func() bool { return d.idle() > 0 }, 5*time.Second, 100*time.Microsecond)
	}
	require.LessOrEqual(t, len(ids), 4, "runs got goroutines of their own")
	d.close()
}

// TestWorkerDispatcherNeverWaitsForAWorker blocks every worker: a run
// scheduled then still runs, on a goroutine of its own.
func TestWorkerDispatcherNeverWaitsForAWorker(t *testing.T) {
	d := newWorkerDispatcher(10, 2)
	release := make(chan struct{})
	var blocked sync.WaitGroup
	for range 2 {
		blocked.Add(1)
		d.Schedule(func() { blocked.Done(); <-release })
	}
	blocked.Wait()
	ran := make(chan struct{})
	go d.Schedule(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a run waited for a busy worker")
	}
	close(release)
	d.close()
}

// TestWorkerDispatcherCloseStopsWorkers checks that close leaves no worker
// behind, and that a run scheduled after close still runs.
func TestWorkerDispatcherCloseStopsWorkers(t *testing.T) {
	d := newWorkerDispatcher(10, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		d.Schedule(func() { time.Sleep(time.Millisecond); wg.Done() })
	}
	wg.Wait()
	require.NotZero(t, workerGoroutines(d), "no worker ran")
	d.close()
	require.Zero(t, workerGoroutines(d), "workers left after close")
	ran := make(chan struct{})
	d.Schedule(func() { close(ran) })
	<-ran
}

// idle reports how many workers wait for a run (tests only).
func (d *workerDispatcher) idle() int {
	return int(d.waiting.Load())
}

// workerGoroutines counts the goroutines running a worker loop of d (a
// stack trace shows the receiver as the first argument).
func workerGoroutines(d *workerDispatcher) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), fmt.Sprintf("(*workerDispatcher).worker(%p", d))
}

// goroutineID returns the calling goroutine's id, parsed from its stack
// header ("goroutine N [running]:").
func goroutineID() uint64 {
	var buf [32]byte
	n := runtime.Stack(buf[:], false)
	var id uint64
	for _, c := range buf[len("goroutine "):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
