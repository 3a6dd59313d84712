package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The workloads users produce beyond re-registering a fixed set: fresh
// registrations that grow the registry and fill the delta window, cancels,
// a deploy of many new instances at once, register+cancel churn at a fixed
// size, and reads while that churn runs. Every load here speaks HTTP only,
// so it runs against Heureka in this process, a Heureka process or the
// reference Eureka server alike.

// Queue is a FIFO of registered instances shared by the workers of the
// fresh, cancel and churn loads: the oldest instance is cancelled first.
// A budget, when set, bounds how many instances Pop hands out.
type Queue struct {
	mu      sync.Mutex
	items   []Instance
	head    int
	budget  atomic.Int64
	limited atomic.Bool // whether budget applies
}

// NewQueue returns an empty queue without a budget.
func NewQueue() *Queue {
	return &Queue{}
}

// Push appends in (the newest).
func (q *Queue) Push(in Instance) {
	q.mu.Lock()
	q.items = append(q.items, in)
	q.mu.Unlock()
}

// Pop removes and returns the oldest instance; false when the queue is
// empty or its budget is spent.
func (q *Queue) Pop() (Instance, bool) {
	if q.limited.Load() && q.budget.Add(-1) < 0 {
		return Instance{}, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return Instance{}, false
	}
	in := q.items[q.head]
	q.items[q.head] = Instance{}
	q.head++
	if q.head > 1024 && q.head*2 > len(q.items) {
		q.items = append(q.items[:0], q.items[q.head:]...)
		q.head = 0
	}
	return in, true
}

// Len returns the number of queued instances.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

// SetBudget lets Pop hand out at most n more instances; n < 0 removes the
// budget.
func (q *Queue) SetBudget(n int) {
	q.budget.Store(int64(n))
	q.limited.Store(n >= 0)
}

// LoadedQueue returns a queue of the loaded instances 0…size-1, oldest
// first: the churn load cancels them in that order.
func LoadedQueue(size int) *Queue {
	q := &Queue{}
	q.items = make([]Instance, size)
	for i := range q.items {
		q.items[i] = InstanceAt(i)
	}
	return q
}

func registerRequest(host string, in Instance, hdr http.Header, body []byte) *http.Request {
	return newRequest(http.MethodPost, host, "/eureka/apps/"+in.App, "", hdr, AppendRegisterBody(body, in))
}

func registerHeaders() http.Header {
	hdr := javaHeaders("application/json", true)
	hdr["Content-Type"] = []string{"application/json"}
	return hdr
}

// FreshRegisterLoad registers a new instance (NextFresh, spread over apps
// applications) with every request, so the registry and the delta window
// grow by one per request; each registered instance is pushed onto q (nil:
// kept nowhere). want is the expected status (204 from Eureka servers).
func FreshRegisterLoad(base string, apps int, q *Queue, want int) Load {
	host := hostOf(base)
	hdr := registerHeaders()
	return Load{Name: "register-fresh", Kept: q, New: func(c *http.Client, worker int) func() (int64, error) {
		body := make([]byte, 0, 1400)
		return func() (int64, error) {
			in := NextFresh(apps)
			n, err := do(c, registerRequest(host, in, hdr, body), want)
			if err == nil && q != nil {
				q.Push(in)
			}
			return n, err
		}
	}}
}

// CancelLoad cancels (DELETE /eureka/apps/{app}/{id}) the oldest instance of
// q with every request and returns ErrExhausted when q is empty or its
// budget is spent. With q nil it cycles over ids that were never
// registered: the request stream of a ceiling.
func CancelLoad(base string, q *Queue, want int) Load {
	host := hostOf(base)
	hdr := javaHeaders("application/json", true)
	return Load{Name: "cancel", New: func(c *http.Client, worker int) func() (int64, error) {
		i := worker * 7919
		return func() (int64, error) {
			var in Instance
			if q == nil {
				i++
				in = extraInstance(i%100, i%(1<<20))
			} else {
				var ok bool
				if in, ok = q.Pop(); !ok {
					return 0, ErrExhausted
				}
			}
			return do(c, newRequest(http.MethodDelete, host, "/eureka/apps/"+in.App+"/"+in.ID, "", hdr, nil), want)
		}
	}}
}

// ChurnLoad is one register+cancel pair per call: it takes the oldest
// instance of q, registers a fresh instance of the same application (pushed
// onto q) and then cancels the old one, as a rolling deploy replaces an
// application's instances: the registry and every application keep their
// size while every id is new. wantReg and wantDel are the expected statuses
// (204 and 200 from Eureka servers).
func ChurnLoad(base string, q *Queue, wantReg, wantDel int) Load {
	return TimedChurnLoad(base, q, wantReg, wantDel, nil)
}

// Recorder records durations: *Durations and *Histogram.
type Recorder interface{ Add(time.Duration) }

// TimedChurnLoad is ChurnLoad that also records, in rt if not nil, how long
// each registration took (request sent to 204 read).
func TimedChurnLoad(base string, q *Queue, wantReg, wantDel int, rt Recorder) Load {
	host := hostOf(base)
	hdr := registerHeaders()
	delHdr := javaHeaders("application/json", true)
	return Load{Name: "churn", New: func(c *http.Client, worker int) func() (int64, error) {
		body := make([]byte, 0, 1400)
		return func() (int64, error) {
			old, ok := q.Pop()
			if !ok {
				return 0, fmt.Errorf("bench: churn queue empty")
			}
			in := NextFreshIn(old.App)
			t0 := time.Now()
			n, err := do(c, registerRequest(host, in, hdr, body), wantReg)
			if err != nil {
				return n, err
			}
			if rt != nil {
				rt.Add(time.Since(t0))
			}
			q.Push(in)
			m, err := do(c, newRequest(http.MethodDelete, host, "/eureka/apps/"+old.App+"/"+old.ID, "", delHdr, nil), wantDel)
			return n + m, err
		}
	}}
}

// pacedLoad returns l with its calls, over all workers, held to perSecond
// (l itself when perSecond is not positive). A call that the pace would
// hold back past the end of ctx is not made: the worker ends.
func pacedLoad(ctx context.Context, l Load, perSecond float64) Load {
	if perSecond <= 0 {
		return l
	}
	lim := rate.NewLimiter(rate.Limit(perSecond), 1)
	return Load{Name: l.Name, New: func(c *http.Client, worker int) func() (int64, error) {
		f := l.New(c, worker)
		return func() (int64, error) {
			if lim.Wait(ctx) != nil {
				return 0, ErrExhausted // the run is over (or would be before the next slot)
			}
			return f()
		}
	}}
}

// countedLoad returns l with every successful call also counted in n.
func countedLoad(l Load, n *atomic.Int64) Load {
	return Load{Name: l.Name, New: func(c *http.Client, worker int) func() (int64, error) {
		next := l.New(c, worker)
		return func() (int64, error) {
			b, err := next()
			if err == nil {
				n.Add(1)
			}
			return b, err
		}
	}}
}

// boundedLoad returns l ending (ErrExhausted) after count calls over all
// workers.
func boundedLoad(l Load, count int) Load {
	var left atomic.Int64
	left.Store(int64(count))
	return Load{Name: l.Name, New: func(c *http.Client, worker int) func() (int64, error) {
		next := l.New(c, worker)
		return func() (int64, error) {
			if left.Add(-1) < 0 {
				return 0, ErrExhausted
			}
			return next()
		}
	}}
}

// RegisterLoaded registers instances 0…size-1 over HTTP on conc
// connections (how a server in another process is loaded); 204 expected.
func RegisterLoaded(c *http.Client, base string, size, conc int) (Result, error) {
	host := hostOf(base)
	hdr := registerHeaders()
	var next atomic.Int64
	l := Load{Name: "load", New: func(c *http.Client, worker int) func() (int64, error) {
		body := make([]byte, 0, 1400)
		return func() (int64, error) {
			i := int(next.Add(1)) - 1
			if i >= size {
				return 0, ErrExhausted
			}
			return do(c, registerRequest(host, InstanceAt(i), hdr, body), http.StatusNoContent)
		}
	}}
	return MeasureCtx(context.Background(), c, l, conc, 0)
}

// Deploy registers count new instances (spread over apps applications) as
// fast as conc connections allow, pushing them onto q: a deploy of a new
// version. serverPID, if not 0, is the server process whose CPU time is
// measured.
func Deploy(c *http.Client, base string, apps, count, conc int, q *Queue, serverPID int) (Result, error) {
	l := boundedLoad(FreshRegisterLoad(base, apps, q, http.StatusNoContent), count)
	return MeasureCtx(context.Background(), c, l, conc, serverPID)
}

// Drain cancels every instance left in q over HTTP (untimed clean-up that
// restores the registry's size).
func Drain(c *http.Client, base string, q *Queue, conc int) error {
	q.SetBudget(-1)
	_, err := MeasureCtx(context.Background(), c, CancelLoad(base, q, http.StatusOK), conc, 0)
	return err
}

// PacedChurn runs churn alone on conns connections for d, held together to
// pace calls per second if pace is positive.
func PacedChurn(c *http.Client, churn Load, conns int, d time.Duration, pace float64, serverPID int) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return MeasureCtx(ctx, c, pacedLoad(ctx, churn, pace), conns, serverPID)
}

// UnderChurn runs churn on churnConns connections, held together to pace
// calls per second if pace is positive, and, meanwhile, read on readConns
// connections for d; it returns both results. The churn starts first and
// stops after the reads.
func UnderChurn(c *http.Client, read, churn Load, readConns, churnConns int, d time.Duration, serverPID int, pace float64) (reads, pairs Result, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	churn = pacedLoad(ctx, churn, pace)
	var churnErr error
	done := make(chan struct{})
	var started atomic.Int64
	go func() {
		defer close(done)
		pairs, churnErr = MeasureCtx(ctx, c, countedLoad(churn, &started), churnConns, 0)
	}()
	// Reads begin once the churn is under way.
	for started.Load() < int64(churnConns) {
		select {
		case <-done:
			return reads, pairs, churnErr
		case <-time.After(time.Millisecond):
		}
	}
	rctx, rcancel := context.WithTimeout(ctx, d)
	reads, err = MeasureCtx(rctx, c, read, readConns, serverPID)
	rcancel()
	cancel()
	<-done
	if err == nil {
		err = churnErr
	}
	return reads, pairs, err
}

// ChurnSample is one sample of a churn run.
type ChurnSample struct {
	At    time.Duration // since the start
	Pairs int64         // register+cancel pairs completed so far
	RSS   int64         // resident set size of the server process, bytes
	CPU   time.Duration // CPU time of the server process (this process's if in-process) so far
	// Regs holds how long the registrations completed since the previous
	// sample took.
	Regs *Histogram
}

// ChurnRun is a register+cancel churn measured over time.
type ChurnRun struct {
	Size  int
	Conns int
	// Pace is the pair rate the run was held to (pairs per second; 0: as
	// fast as the connections went).
	Pace    float64
	Samples []ChurnSample
	Result  Result
}

// Churn runs ChurnLoad against base (a registry of size instances in apps
// applications, whose loaded instances q holds oldest first) on conc
// connections for d, sampling the pairs done, the server's RSS and CPU
// every interval. serverPID 0 means the server runs in this process. pace,
// if positive, holds the connections together to that many pairs per
// second (a deploy pipeline's rate rather than the machine's limit).
func Churn(c *http.Client, base string, size, apps int, q *Queue, conc int, d, interval time.Duration, serverPID int, pace float64) (ChurnRun, error) {
	run := ChurnRun{Size: size, Conns: conc, Pace: pace}
	var pairs atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var regs Histogram
	l := countedLoad(pacedLoad(ctx, TimedChurnLoad(base, q, http.StatusNoContent, http.StatusOK, &regs), pace), &pairs)
	cpu := func() time.Duration {
		if serverPID == 0 {
			return cpuTime()
		}
		t, _ := ProcCPU(serverPID)
		return t
	}
	cpu0 := cpu()
	start := time.Now()
	sample := func() error {
		rss, err := ProcRSS(serverPID)
		if err != nil {
			return err
		}
		run.Samples = append(run.Samples, ChurnSample{At: time.Since(start), Pairs: pairs.Load(), RSS: rss, CPU: cpu() - cpu0, Regs: regs.Take()})
		return nil
	}
	if err := sample(); err != nil {
		return run, err
	}
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		run.Result, err = MeasureCtx(ctx, c, l, conc, serverPID)
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if serr := sample(); err == nil {
				err = serr
			}
			return run, err
		case <-tick.C:
			if serr := sample(); serr != nil {
				cancel()
				<-done
				return run, serr
			}
		}
	}
}

// Window is the churn over one window of a run.
type Window struct {
	From, To time.Duration
	Rate     float64 // pairs per second
	MaxRSS   int64
	CPUPer   time.Duration // server CPU per pair
	Regs     *Histogram    // how long the window's registrations took
}

// Windows splits the run into consecutive windows of length w (the last
// one only if at least half full).
func (r ChurnRun) Windows(w time.Duration) []Window {
	var out []Window
	if len(r.Samples) < 2 {
		return nil
	}
	first := r.Samples[0]
	for first.At < r.Samples[len(r.Samples)-1].At {
		var last ChurnSample
		var maxRSS int64
		found := false
		for _, s := range r.Samples {
			if s.At < first.At {
				continue
			}
			// A sample up to a tenth of a window late still closes it: the
			// sampler's ticks are not exact.
			if s.At > first.At+w+w/10 {
				break
			}
			maxRSS = max(maxRSS, s.RSS)
			last, found = s, true
		}
		if !found || last.At-first.At < w/2 || last.At == first.At {
			break
		}
		n := last.Pairs - first.Pairs
		win := Window{From: first.At, To: last.At, Rate: float64(n) / (last.At - first.At).Seconds(), MaxRSS: maxRSS, Regs: &Histogram{}}
		for _, s := range r.Samples {
			if s.At > first.At && s.At <= last.At {
				win.Regs.Merge(s.Regs)
			}
		}
		if n > 0 {
			win.CPUPer = (last.CPU - first.CPU) / time.Duration(n)
		}
		out = append(out, win)
		first = last
	}
	return out
}

// MaxRSS returns the largest RSS sampled.
func (r ChurnRun) MaxRSS() int64 {
	var m int64
	for _, s := range r.Samples {
		m = max(m, s.RSS)
	}
	return m
}

// Durations collects durations from many goroutines; the zero value is
// ready and a nil *Durations ignores Add.
type Durations struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records d.
func (r *Durations) Add(d time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
}

// Percentile returns the p-th percentile of what was recorded (see
// Percentile) and how many durations that is.
func (r *Durations) Percentile(p float64) (time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Percentile(r.d, p), len(r.d)
}
