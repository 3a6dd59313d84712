package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/heureka/heureka/bench"
)

// epoch is the origin of the monotonic times the watchers record.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// round is one change: the watchers that get it record when.
type round struct {
	start int64          // before the write
	recv  []atomic.Int64 // per watcher; 0: not yet
	left  atomic.Int64
	done  chan struct{}
}

func newRound(n int) *round {
	r := &round{recv: make([]atomic.Int64, n), done: make(chan struct{})}
	r.left.Store(int64(n))
	if n == 0 {
		close(r.done)
	}
	r.start = now()
	return r
}

// watchers are the goroutines of one mode, all watching one application.
type watchers struct {
	mode string // "blocking" or "stream"
	raw  bool   // blocking: one plain HTTP/1.1 connection each, not an http.Client (raw_linux.go)
	// nextAfterChange: raw watchers send their next request once every
	// watcher has the change (Config.NextAfterChange).
	nextAfterChange bool
	base            string
	app             string
	client          *http.Client

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	n      int

	rawLoops *rawLoops // the raw watchers' event loops

	cur      atomic.Pointer[round]
	received atomic.Int64 // every 200 or delta event, in or out of rounds
	inFlight atomic.Int64 // blocking: requests sent and not yet answered
	errs     atomic.Int64
	lastErr  atomic.Value
}

func newWatchers(mode, base, app string, conns int) *watchers {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchers{mode: mode, base: base, app: app, client: newClient(conns), ctx: ctx, cancel: cancel}
	w.rawLoops = &rawLoops{w: w}
	return w
}

// newClient is one transport with up to conns keep-alive connections to
// the node; it neither asks for nor decodes gzip on its own.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns,
		MaxIdleConns:        conns,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
	}}
}

func (w *watchers) record(i int) {
	w.received.Add(1)
	r := w.cur.Load()
	if r == nil || i >= len(r.recv) {
		return
	}
	t := now()
	if t < r.start {
		return
	}
	if r.recv[i].CompareAndSwap(0, t) && r.left.Add(-1) == 0 {
		close(r.done)
	}
}

func (w *watchers) fail(err error) {
	w.errs.Add(1)
	w.lastErr.Store(err.Error())
}

// grow starts watchers until there are n.
func (w *watchers) grow(n int) {
	for ; w.n < n; w.n++ {
		i := w.n
		if w.mode == "blocking" && w.raw {
			w.addRaw(i)
			continue
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if w.mode == "stream" {
				w.stream(i)
			} else {
				w.blocking(i)
			}
		}()
	}
}

// stop ends every watcher and waits for them.
func (w *watchers) stop() {
	w.cancel()
	w.wg.Wait()
	w.client.CloseIdleConnections()
}

func (w *watchers) pause() bool {
	select {
	case <-w.ctx.Done():
		return false
	case <-time.After(200 * time.Millisecond):
		return true
	}
}

// blocking is one client of blocking reads: GET /eureka/apps/{app} once,
// then again and again with If-None-Match and wait=60s.
func (w *watchers) blocking(i int) {
	etag := ""
	for w.ctx.Err() == nil {
		q := ""
		if etag != "" {
			q = "wait=60s"
		}
		req, _ := http.NewRequestWithContext(w.ctx, http.MethodGet, w.base+"/eureka/apps/"+w.app+"?"+q, nil)
		req.Header.Set("Accept", "application/json")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		w.inFlight.Add(1)
		resp, err := w.client.Do(req)
		if err != nil {
			w.inFlight.Add(-1)
			if w.ctx.Err() == nil {
				w.fail(err)
				w.pause()
			}
			continue
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		w.inFlight.Add(-1)
		switch {
		case err != nil:
			if w.ctx.Err() == nil {
				w.fail(err)
			}
		case resp.StatusCode == http.StatusOK:
			if etag != "" {
				w.record(i)
			}
			etag = resp.Header.Get("ETag")
		case resp.StatusCode == http.StatusNotModified:
		default:
			w.fail(fmt.Errorf("GET /eureka/apps/%s: status %d", w.app, resp.StatusCode))
			w.pause()
		}
	}
}

var (
	deltaEvent = []byte("event: delta")
	idPrefix   = []byte("id: ")
)

// stream is one client of the change stream of the application, which
// reconnects (with its last id) when the stream ends.
func (w *watchers) stream(i int) {
	lastID := ""
	for w.ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(w.ctx, http.MethodGet, w.base+"/eureka/stream?app="+w.app, nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := w.client.Do(req)
		if err != nil {
			if w.ctx.Err() == nil {
				w.fail(err)
				w.pause()
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			w.fail(fmt.Errorf("GET /eureka/stream: status %d", resp.StatusCode))
			w.pause()
			continue
		}
		lastID = w.readEvents(i, resp.Body, lastID)
		resp.Body.Close()
		if w.ctx.Err() == nil {
			w.fail(fmt.Errorf("stream %d ended", i))
		}
	}
}

// readEvents reads events until the stream ends and returns the last id.
// A delta event is recorded when the blank line that ends it is read.
func (w *watchers) readEvents(i int, body io.Reader, lastID string) string {
	br := bufio.NewReaderSize(body, 8<<10)
	delta := false
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a long data line: skip the rest of it
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return lastID
			}
			continue
		}
		if err != nil {
			return lastID
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if delta {
				w.record(i)
			}
			delta = false
		case bytes.Equal(line, deltaEvent):
			delta = true
		case bytes.HasPrefix(line, idPrefix):
			lastID = string(line[len(idPrefix):])
		}
	}
}

// gauge reads heureka_push_watchers{kind=…} from the node's /metrics.
func gauge(c *http.Client, base, kind string) (int, error) {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	want := `heureka_push_watchers{kind="` + kind + `"} `
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			var f float64
			_, err := fmt.Sscanf(v, "%g", &f)
			return int(f), err
		}
	}
	return 0, sc.Err()
}

// waitArmed waits until the node counts n watchers of the mode waiting
// (at most a minute). For blocking reads it first waits until every
// watcher has sent its next request, so that it reads /metrics about once.
func (w *watchers) waitArmed(ctl *http.Client, n int) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if w.mode == "blocking" && w.inFlight.Load() < int64(n) {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		time.Sleep(20 * time.Millisecond)
		got, err := gauge(ctl, w.base, w.mode)
		if err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: fewer than %d watchers waiting after a minute (errors %d, last %v)", w.mode, n, w.errs.Load(), w.lastErr.Load())
}

// writer makes the changes: a new instance of the application, then its
// cancellation.
type writer struct {
	c      *http.Client
	base   string
	app    string
	body   []byte
	placed *bench.Instance
}

// change makes the next change and returns when its response arrived.
func (wr *writer) change() error {
	var req *http.Request
	if wr.placed == nil {
		in := bench.NextFreshIn(wr.app)
		wr.body = bench.AppendRegisterBody(wr.body[:0], in)
		req, _ = http.NewRequest(http.MethodPost, wr.base+"/eureka/apps/"+in.App, bytes.NewReader(wr.body))
		req.Header.Set("Content-Type", "application/json")
		wr.placed = &in
	} else {
		req, _ = http.NewRequest(http.MethodDelete, wr.base+"/eureka/apps/"+wr.placed.App+"/"+wr.placed.ID, nil)
		wr.placed = nil
	}
	resp, err := wr.c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d", req.Method, req.URL.Path, resp.StatusCode)
	}
	return nil
}

// selfCPU is the CPU time this process (the watchers and the writer) has
// used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stepResult is one step's measurement.
type stepResult struct {
	watchers  int
	mem       memory
	cpu       time.Duration // the node's, over the changes
	selfCPU   time.Duration // this process's (the watchers'), over the changes
	changes   int
	fromResp  []time.Duration // every watcher's latency from the write's response
	fromReq   []time.Duration // … from before the write
	missed    int             // watchers that had not got a change after 30 s
	early     int             // got it before the write's response (counted as 0)
	wall      time.Duration
	idleCPU   time.Duration // the node's, over the settle time before
	idleWall  time.Duration
	load      string
	perChange []changeResult
}

// changeResult is one change as the watchers and the node saw it.
type changeResult struct {
	slowest time.Duration // the last watcher's delivery, from the write's response
	node    nodeDelta     // the node's fan-out and collections over it
}

// nodeStats are the node's counters that explain a slow change: the
// fan-out histogram of the mode measured (heureka_push_blocking_fanout_seconds
// or heureka_push_stream_fanout_seconds: sum and count) and its Go
// collections (go_gc_duration_seconds_count).
type nodeStats struct {
	fanoutSum, fanouts, gcs float64
}

// nodeDelta is what the node did between two readings of nodeStats.
type nodeDelta struct {
	fanout  time.Duration // the fan-outs' total time
	fanouts int
	gcs     int
}

func (b nodeStats) since(a nodeStats) nodeDelta {
	return nodeDelta{fanout: time.Duration((b.fanoutSum - a.fanoutSum) * float64(time.Second)),
		fanouts: int(b.fanouts - a.fanouts), gcs: int(b.gcs - a.gcs)}
}

// readNodeStats reads the node's nodeStats from /metrics, with the
// fan-out of mode ("blocking" or "stream").
func readNodeStats(c *http.Client, base, mode string) (nodeStats, error) {
	var st nodeStats
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	fields := map[string]*float64{
		"heureka_push_" + mode + "_fanout_seconds_sum ":   &st.fanoutSum,
		"heureka_push_" + mode + "_fanout_seconds_count ": &st.fanouts,
		"go_gc_duration_seconds_count ":                   &st.gcs,
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for prefix, f := range fields {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				if _, err := fmt.Sscanf(v, "%g", f); err != nil {
					return st, fmt.Errorf("/metrics %q: %w", line, err)
				}
			}
		}
	}
	return st, sc.Err()
}

// runChanges makes changes changes with w's n watchers and times them.
func runChanges(w *watchers, wr *writer, ctl *http.Client, n, changes int, pid func() time.Duration) (stepResult, error) {
	res := stepResult{watchers: n, changes: changes}
	cpu0, t0, self0 := pid(), time.Now(), selfCPU()
	for k := 0; k < changes; k++ {
		if n > 0 {
			if err := w.waitArmed(ctl, n); err != nil {
				return res, err
			}
		}
		st0, err := readNodeStats(ctl, w.base, w.mode)
		if err != nil {
			return res, err
		}
		r := newRound(n)
		w.cur.Store(r)
		if err := wr.change(); err != nil {
			return res, err
		}
		resp := now()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
		}
		w.cur.Store(nil)
		// The node counts a fan-out once its last answer is written, which
		// the last watcher may read a moment before.
		var st1 nodeStats
		for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
			st1, err = readNodeStats(ctl, w.base, w.mode)
			if err != nil {
				return res, err
			}
			if n == 0 || st1.fanouts > st0.fanouts || time.Now().After(deadline) {
				break
			}
		}
		cr := changeResult{node: st1.since(st0)}
		for i := range r.recv {
			t := r.recv[i].Load()
			if t == 0 {
				res.missed++
				continue
			}
			d := time.Duration(t - resp)
			if d < 0 {
				res.early++
				d = 0
			}
			res.fromResp = append(res.fromResp, d)
			res.fromReq = append(res.fromReq, time.Duration(t-r.start))
			cr.slowest = max(cr.slowest, d)
		}
		res.perChange = append(res.perChange, cr)
	}
	res.cpu, res.wall, res.selfCPU = pid()-cpu0, time.Since(t0), selfCPU()-self0
	return res, nil
}
