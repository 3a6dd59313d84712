package actors

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// workerDispatcher runs the actors' mailboxes on goroutines that outlive one
// run of a mailbox. protoactor's default dispatcher starts a goroutine per
// run, and with one application per request that is a goroutine per
// request whose stack then grows, by copying, to the depth of a write
// (the view's fold): 3.6% of a registration's CPU in
// BenchmarkPerRequestRegister. A worker that finished a run waits for the
// next one and keeps its grown stack.
//
// A run is handed to an idle worker if there is one, else to a new worker
// while there are fewer than max, else to a goroutine of its own (so a run
// never waits for a worker: a mailbox that blocks cannot stall the others).
// close stops the idle workers and waits for the busy ones to finish their
// run; runs scheduled after close get goroutines of their own.
type workerDispatcher struct {
	throughput int
	max        int
	work       chan func() // unbuffered: a send succeeds only to an idle worker
	done       chan struct{}

	waiting atomic.Int32 // workers waiting for a run

	mu      sync.Mutex
	workers int
	closed  bool
	wg      sync.WaitGroup
}

var _ actor.Dispatcher = (*workerDispatcher)(nil)

// newWorkerDispatcher returns a dispatcher of up to max workers that runs
// up to throughput messages of a mailbox before yielding.
func newWorkerDispatcher(throughput, max int) *workerDispatcher {
	return &workerDispatcher{throughput: throughput, max: max,
		work: make(chan func()), done: make(chan struct{})}
}

// Schedule runs fn on an idle worker, a new worker or a goroutine of its
// own, in that order of preference.
func (d *workerDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
		return
	default:
	}
	d.mu.Lock()
	if d.closed || d.workers >= d.max {
		d.mu.Unlock()
		go fn()
		return
	}
	d.workers++
	d.wg.Add(1)
	d.mu.Unlock()
	go d.worker(fn)
}

// Throughput is the number of messages a mailbox processes per run.
func (d *workerDispatcher) Throughput() int { return d.throughput }

func (d *workerDispatcher) worker(fn func()) {
	defer func() {
		d.mu.Lock()
		d.workers--
		d.mu.Unlock()
		d.wg.Done()
	}()
	for {
		fn()
		d.waiting.Add(1)
		select {
		case fn = <-d.work:
			d.waiting.Add(-1)
		case <-d.done:
			d.waiting.Add(-1)
			return
		}
	}
}

// close stops the workers: the idle ones at once, the busy ones after
// their run. It is called once.
func (d *workerDispatcher) close() {
	d.mu.Lock()
	d.closed = true
	close(d.done)
	d.mu.Unlock()
	d.wg.Wait()
}
