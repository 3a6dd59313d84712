package httpapi

// Parked blocking reads
//
// A blocking read that slept in its handler held, for its whole wait, the
// connection's goroutine, net/http's background reader and the
// connection's read and write buffers: about 27 KB per waiting read, and a
// change woke every handler to render and write its own copy of the
// answer. So over HTTP/1.1 a read that must wait hijacks its connection
// and parks it: the handler returns, and the read is a parkedRead in the
// parker, filed under what it watches (resource, format, gzip) and the tag
// the client holds.
//
// Changes. One goroutine, running while any read is parked, sleeps on the
// shared change channel (watch_changes.go). On a change it reads the
// snapshot once, computes each watched document's tag once, and takes
// every set of reads whose tag is stale; each set's answer is rendered
// once (the same bytes net/http would write: status line, the handler's
// headers sorted, Date, Content-Length, answerWriter) and the shared
// writers, max(2, GOMAXPROCS) of them, write it to every read of the set.
// A writer writes what the kernel takes of an answer at once (one
// write(2) on a TCP connection, watch_conn.go; elsewhere what it takes
// within streamFastWrite, as the stream's writers do); the rest is
// finished by a goroutine of the connection's own, under
// blockingWriteAllowance. A node that stops being ready answers every
// parked read 403, as a waiting handler did.
//
// Ends. Each read has its wait timer (time.AfterFunc: a runtime timer, no
// goroutine until it fires); at the end of the wait it looks once more and
// answers 304 with the current tag (or the new document, if it changed
// that instant), from the timer's goroutine. The server's shutdown answers
// every parked read of that server 304 with "Connection: close", as
// net/http does while shutting down (http.Server does not track hijacked
// connections: watch_shutdown.go calls the parker). Liveness: the
// connection waits to be readable in the parker's epoll poller
// (poll_linux.go: no goroutine and no buffer per waiting
// connection; elsewhere, and over TLS, one small goroutine each), which
// starts its reader (watchClose) when bytes or the client's leaving
// come, so a client that leaves is dropped at once (and uncounted). Bytes
// that come while the read is parked are the next request, pipelined:
// they are kept, and the read stops watching.
//
// Keep-alive. After its answer, the connection stays waiting so, idle as
// net/http keeps a connection between requests (under the server's idle
// timeout; closed by its shutdown), until the client's next request
// begins. When that request is another blocking read,
// its reader reads and serves it itself (watch_direct.go: through the
// Server's handler, so parked again or answered at once); anything else
// goes back to the http.Server (watch_handoff.go) with the bytes read of
// it in front, and is served as any other. Serving the next read on the
// connection saves the hand-back's new connection, net/http's reader and
// a second hijack: 28–45% of the node's CPU per watcher and change
// (BENCHMARKS.md, "Push to applications"). Either way it costs no wake-up
// of its own, and a client's next request is taken up only once that
// client has its answer. The next requests of one change are taken up
// only once all its answers are written (fanout), so that the first
// clients' next requests do not compete with the answers still due.
//
// Not parked, and served by the waiting handler of watch.go as before:
// HTTP/2 and HTTP/1.0 requests, requests with a body or "Connection:
// close", a handler called without an http.Server, and every read when
// PushConfig.BlockingHijack is off.

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/sabotage"
)

// parkKey is what parked reads are filed under: those with the same key
// get the same bytes.
type parkKey struct {
	res resource
	f   view.Format
	gz  bool
	inm string // the client's If-None-Match
}

// parkBatch is how many reads a writer takes from the queue at once.
const parkBatch = 64

// parker holds the parked blocking reads of one Server's push side.
type parker struct {
	p *push

	mu       sync.Mutex
	s        *Server
	reads    map[parkKey]map[*parkedRead]struct{}
	open     int                       // parked, being answered, or idle after it
	watched  map[<-chan struct{}]bool  // servers whose shutdown the parker hears
	handoffs map[*http.Server]*handoff // where connections go back
	idle     map[*parkedRead]struct{}  // answered, waiting for the client's next request
	work     chan parkJob              // the writers' queue; nil while none run
	stop     chan struct{}             // closed when the writers and the watcher stop
	poll     *connPoller               // where parked connections wait (poll_linux.go); nil: a goroutine each
}

// The states of a parked read.
const (
	parkWaiting   = iota // parked
	parkAnswering        // taken out to be answered (or dropped)
)

// parkedRead is one parked blocking read.
type parkedRead struct {
	pk       *parker
	key      parkKey
	conn     net.Conn
	ho       *handoff
	shutdown <-chan struct{}
	tls      bool            // a write that times out breaks a TLS connection: no fast write
	raw      syscall.RawConn // the TCP connection's descriptor, when it has one (watch_conn.go)
	poll     *connPoller     // the poller pr's connection waits in, if it does
	pollTok  uint64          // pr's token in poll

	mu        sync.Mutex
	state     int
	timer     *time.Timer
	out       []byte  // the answer, once taken
	closeConn bool    // close the connection after the answer
	answered  bool    // the answer is written
	readerOut bool    // watchClose returned
	eof       bool    // the client closed the connection (or it failed)
	pre       []byte  // bytes of the client's next request, read already
	preBuf    *[]byte // the pooled buffer pre lies in, if it does (keepNext)
	ended     bool
	remote    string    // conn.RemoteAddr().String(), once needed (watch_direct.go)
	idleUntil time.Time // the idle timeout of the answered connection (zero: none); pk.mu
}

func newParker(p *push) *parker {
	return &parker{p: p, reads: map[parkKey]map[*parkedRead]struct{}{},
		watched: map[<-chan struct{}]bool{}, handoffs: map[*http.Server]*handoff{},
		idle: map[*parkedRead]struct{}{}}
}

// park hijacks w's connection and parks the read; false when it cannot
// (see the file comment): the handler then waits itself.
func (pk *parker) park(s *Server, w http.ResponseWriter, r *http.Request, res resource, f view.Format, gz bool,
	inm string, wait time.Duration) bool {
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Close || r.Method != http.MethodGet ||
		r.ContentLength != 0 || len(w.Header()) != 0 {
		return false
	}
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return false
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	var pre []byte
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		pre = slices.Clone(b)
	}
	_, isTLS := conn.(*tls.Conn)
	if hc, ok := conn.(*handedConn); ok {
		pre = append(pre, hc.takePre()...)
		isTLS = hc.isTLS()
	}
	pr := &parkedRead{pk: pk, key: parkKey{res: res, f: f, gz: gz, inm: inm}, conn: conn,
		shutdown: pk.p.shutdowns.of(r), pre: pre, tls: isTLS, remote: r.RemoteAddr}
	if !isTLS {
		pr.raw = rawConnOf(conn)
	}
	pk.p.metrics.blockingWaiting.Inc()

	pk.mu.Lock()
	pk.s = s
	pr.ho = pk.handoffs[srv]
	if pr.ho == nil {
		pr.ho = newHandoff(srv)
		pk.handoffs[srv] = pr.ho
	}
	hook := pr.shutdown != nil && !pk.watched[pr.shutdown]
	if hook {
		pk.watched[pr.shutdown] = true
	}
	if pk.open == 0 {
		pk.start()
	}
	pk.open++
	if pr.raw != nil {
		pr.poll = pk.poll
	}
	set := pk.reads[pr.key]
	if set == nil {
		set = map[*parkedRead]struct{}{}
		pk.reads[pr.key] = set
	}
	set[pr] = struct{}{}
	pk.mu.Unlock()
	if hook {
		ch := pr.shutdown
		pk.p.shutdowns.onShutdown(r, func() { pk.closeServer(ch) })
	}

	pr.mu.Lock()
	if pr.state == parkWaiting {
		pr.timer = time.AfterFunc(wait, pr.expire)
	}
	pr.mu.Unlock()
	if pr.poll == nil || !pr.poll.add(pr) {
		go pr.watchClose()
	}
	select {
	case <-pr.shutdown:
		pk.closeServer(pr.shutdown) // the hook may have run before the read was filed
	default:
		// A change between the handler's snapshot and the filing: the
		// watcher may have looked before the read was filed.
		pk.check(pr.key)
	}
	return true
}

// start starts the watcher and the writers; pk.mu must be held.
func (pk *parker) start() {
	pk.work = make(chan parkJob, 256)
	pk.stop = make(chan struct{})
	for range max(2, runtime.GOMAXPROCS(0)) {
		go pk.write(pk.work, pk.stop)
	}
	pk.p.changes.acquire()
	go pk.watch(pk.stop)
	pk.poll = newConnPoller(pk.sweepIdle)
}

// sweepIdle closes the answered connections in the poller whose idle
// timeout passed (a goroutine waiting for them had its read deadline).
func (pk *parker) sweepIdle() {
	if sabotage.On(sabotage.ParkedIdleNotSwept) {
		return
	}
	now := time.Now()
	var due []*parkedRead
	pk.mu.Lock()
	for pr := range pk.idle {
		if !pr.idleUntil.IsZero() && now.After(pr.idleUntil) {
			due = append(due, pr)
		}
	}
	pk.mu.Unlock()
	for _, pr := range due {
		pr.closeWaiting()
	}
}

// watch looks at the parked reads on every change until stop closes.
func (pk *parker) watch(stop chan struct{}) {
	defer pk.p.changes.release()
	for {
		changed := pk.p.changes.wait() // before the snapshot: watch_changes.go
		pk.scan(nil)
		select {
		case <-changed:
		case <-stop:
			return
		}
	}
}

// check looks at the reads filed under key only.
func (pk *parker) check(key parkKey) { pk.scan(&key) }

// scan answers the parked reads whose document changed (all of them 403
// if the node is no longer ready): each set's answer is rendered once and
// queued for the writers. only, if not nil, restricts it to one key.
func (pk *parker) scan(only *parkKey) {
	pk.mu.Lock()
	s := pk.s
	pk.mu.Unlock()
	if s == nil {
		return
	}
	start := time.Now()
	ready := s.cfg.Ready == nil || s.cfg.Ready()
	snap := s.cfg.View.Snapshot()
	type due struct {
		key   parkKey
		reads []*parkedRead
	}
	var dues []due
	pk.mu.Lock()
	for key, set := range pk.reads {
		if only != nil && key != *only {
			continue
		}
		if ready {
			tag, ok := pk.p.etags.of(snap, key.res, key.f)
			if ok && matchETag(key.inm, tag) {
				continue
			}
		}
		d := due{key: key, reads: make([]*parkedRead, 0, len(set))}
		for pr := range set {
			if pr.take() {
				d.reads = append(d.reads, pr)
			}
		}
		delete(pk.reads, key)
		dues = append(dues, d)
	}
	work := pk.work
	pk.mu.Unlock()
	fo := &fanout{start: start, took: pk.p.metrics.fanout}
	for _, d := range dues {
		fo.left += len(d.reads)
	}
	if fo.left == 0 {
		return
	}
	fo.written = make([]*parkedRead, 0, fo.left)
	for _, d := range dues {
		if len(d.reads) == 0 {
			continue
		}
		out, counter := pk.answer(s, snap, ready, d.key, false, false)
		if counter != nil {
			counter.Add(float64(len(d.reads)))
		}
		for _, pr := range d.reads {
			pr.out = out
		}
		for b := range slices.Chunk(d.reads, parkBatch) {
			work <- parkJob{reads: b, fo: fo}
		}
	}
}

// parkJob is a writer's share of a fan-out.
type parkJob struct {
	reads []*parkedRead
	fo    *fanout
}

// fanout is the answers of one scan. Their connections go back to the
// server only once every answer of the scan is written (or handed to its
// own goroutine), so that the clients' next requests, which come at once,
// do not compete with the answers still due: a change reaches the last of
// 10k reads sooner.
type fanout struct {
	start time.Time           // the scan's
	took  prometheus.Observer // observes how long the fan-out took

	mu      sync.Mutex
	left    int
	written []*parkedRead
}

// done counts n answers of fo out, ok those written; the last hands the
// connections of all back.
func (fo *fanout) done(n int, ok []*parkedRead) {
	fo.mu.Lock()
	fo.left -= n
	fo.written = append(fo.written, ok...)
	var all []*parkedRead
	if fo.left == 0 {
		all, fo.written = fo.written, nil
		fo.took.Observe(time.Since(fo.start).Seconds())
	}
	fo.mu.Unlock()
	for _, pr := range all {
		pr.written()
	}
}

// answer renders the answer to the reads filed under key, as the waiting
// handler of watch.go writes it: 403 when not ready, the document when
// its tag differs from the client's, else 304 (final: the wait is over;
// not final: nil, keep waiting). The counter is the outcome's, for the
// caller to count each read it sends the answer to (nil for 403).
func (pk *parker) answer(s *Server, snap *view.Snapshot, ready bool, key parkKey, final, closeConn bool) ([]byte, prometheus.Counter) {
	var aw answerWriter
	var counter prometheus.Counter
	m := pk.p.metrics
	if !ready {
		s.fail(&aw, nil, errNotReady)
		return aw.bytes(closeConn), nil
	}
	tag, ok := pk.p.etags.of(snap, key.res, key.f)
	switch {
	case !ok || !matchETag(key.inm, tag):
		writeResource(&aw, snap, key.res, key.f, key.gz, tag, ok)
		counter = m.changed
	case final:
		writeNotModified(&aw, tag)
		counter = m.notModified
	default:
		return nil, nil
	}
	return aw.bytes(closeConn), counter
}

// write is a writer: it sends the answers queued in work.
func (pk *parker) write(work chan parkJob, stop chan struct{}) {
	ok := make([]*parkedRead, 0, parkBatch)
	for {
		select {
		case <-stop:
			return
		case j := <-work:
			ok = ok[:0] // done copies it
			for _, pr := range j.reads {
				if pr.write() {
					ok = append(ok, pr)
				}
			}
			j.fo.done(len(j.reads), ok)
		}
	}
}

// closeServer answers 304 (or what is due) with "Connection: close" to
// the parked reads of the server whose shutdown channel is ch.
func (pk *parker) closeServer(ch <-chan struct{}) {
	var taken []*parkedRead
	pk.mu.Lock()
	for key, set := range pk.reads {
		for pr := range set {
			if pr.shutdown == ch && pr.take() {
				taken = append(taken, pr)
				delete(set, pr)
			}
		}
		if len(set) == 0 {
			delete(pk.reads, key)
		}
	}
	var idle []*parkedRead
	for pr := range pk.idle {
		if pr.shutdown == ch {
			idle = append(idle, pr)
		}
	}
	pk.mu.Unlock()
	for _, pr := range taken {
		go pr.finalAnswer(true)
	}
	for _, pr := range idle {
		pr.closeWaiting()
	}
}

// take moves a parked read to answering, once; the caller removes it
// from pk.reads (pk.mu held, or taken after by drop).
func (pr *parkedRead) take() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.state != parkWaiting {
		return false
	}
	pr.state = parkAnswering
	if pr.timer != nil {
		pr.timer.Stop()
	}
	pr.pk.p.metrics.blockingWaiting.Dec()
	return true
}

// unfile takes pr out of the parker's index.
func (pk *parker) unfile(pr *parkedRead) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if set := pk.reads[pr.key]; set != nil {
		delete(set, pr)
		if len(set) == 0 {
			delete(pk.reads, pr.key)
		}
	}
}

// expire ends the wait: the answer as it stands, 304 if unchanged.
func (pr *parkedRead) expire() {
	if !pr.take() {
		return
	}
	pr.pk.unfile(pr)
	pr.finalAnswer(false)
}

// finalAnswer renders pr's answer at the end of its wait (or the
// server's) and sends it from the calling goroutine.
func (pr *parkedRead) finalAnswer(closing bool) {
	pk := pr.pk
	pk.mu.Lock()
	s := pk.s
	pk.mu.Unlock()
	ready := s.cfg.Ready == nil || s.cfg.Ready()
	pr.closeConn = closing
	var counter prometheus.Counter
	pr.out, counter = pk.answer(s, s.cfg.View.Snapshot(), ready, pr.key, true, closing)
	if counter != nil {
		counter.Inc()
	}
	pr.send()
}

// send writes pr's answer and then hands its connection back.
func (pr *parkedRead) send() {
	if pr.write() {
		pr.written()
	}
}

// write writes pr's answer and reports whether it is all written: one
// write the kernel takes at once (writeNow), so that a writer never waits
// for one client; the rest is written by a goroutine of its own, which
// hands the connection back itself, and a failed write closes it. Over TLS
// the whole answer is written so (a write that times out leaves a TLS
// connection unusable).
func (pr *parkedRead) write() bool {
	if pr.tls {
		go pr.slowSend(pr.out)
		return false
	}
	n, err := pr.writeNow(pr.out)
	switch {
	case err == nil && n == len(pr.out):
		return true
	case err == nil || errors.Is(err, os.ErrDeadlineExceeded):
		go pr.slowSend(pr.out[n:])
	default:
		pr.drop()
	}
	return false
}

// slowSend finishes a write the connection did not take at once.
func (pr *parkedRead) slowSend(rest []byte) {
	_ = pr.conn.SetWriteDeadline(time.Now().Add(blockingWriteAllowance))
	if _, err := pr.conn.Write(rest); err != nil {
		pr.drop()
		return
	}
	pr.written()
}

// written is called once the answer is out. The client's next request is
// taken up when it comes: the reader goroutine sees it begin and
// serves it (watch_direct.go) or hands the connection back to the server
// (or it has returned already, on a byte that came before the answer was
// out, and a goroutine of this does). Until then the connection is idle, as
// net/http keeps it: under the server's idle timeout, and closed by its
// shutdown.
func (pr *parkedRead) written() {
	pk := pr.pk
	pk.mu.Lock()
	pr.mu.Lock()
	pr.answered = true
	out := pr.readerOut
	if !out {
		if !pr.closeConn {
			if d := idleTimeout(pr.ho.srv); d > 0 {
				pr.idleUntil = time.Now().Add(d)
				_ = pr.conn.SetReadDeadline(pr.idleUntil)
			}
			pk.idle[pr] = struct{}{}
		}
	}
	pr.mu.Unlock()
	pk.mu.Unlock()
	if !out && pr.closeConn {
		pr.closeWaiting()
	}
	if out {
		// Its own goroutine: the next request may be served here
		// (watch_direct.go), and its head may be still on its way; the
		// caller may be a writer with other answers due.
		go pr.finish()
	}
}

// idleTimeout is how long srv keeps an idle connection open (as net/http
// reckons it); 0 for ever.
func idleTimeout(srv *http.Server) time.Duration {
	if srv.IdleTimeout > 0 {
		return srv.IdleTimeout
	}
	return srv.ReadTimeout
}

// watchClose watches the connection while pr is parked: an error is the
// client gone, bytes its next request (kept); after the answer, the
// client's next request is served or hands the connection back, and an
// error (the client gone, the idle timeout) closes it.
func (pr *parkedRead) watchClose() {
	bp, n, err := pr.readNext()
	pr.mu.Lock()
	if n > 0 {
		pr.keepNext(bp, n)
	} else {
		putNextBuf(bp)
		if err != nil {
			pr.eof = true
		}
	}
	pr.readerOut = true
	answered, eof := pr.answered, pr.eof
	pr.mu.Unlock()
	switch {
	case answered:
		pr.finish()
	case eof:
		if pr.take() { // the client left while parked
			pr.pk.unfile(pr)
			pr.drop()
		} // else it is being answered: written finishes, closing it
	}
}

// finish serves the client's next request on the connection
// (watch_direct.go) or hands the connection back to its server for it,
// or closes it.
func (pr *parkedRead) finish() {
	pk := pr.pk
	pk.mu.Lock()
	delete(pk.idle, pr)
	pk.mu.Unlock()
	for !pr.eof && !pr.closeConn && !pr.shuttingDown() {
		how := pr.serveNext()
		pr.releasePre()
		switch how {
		case directParked, directClosed:
			pr.end()
			return
		case directIdle:
			if pr.idleAgain() {
				continue
			}
			pr.end()
			return
		}
		// net/http sets a new connection's read deadline when it has a
		// header timeout, and the write deadline of each request when it
		// has a WriteTimeout; the deadlines set here go otherwise.
		srv := pr.ho.srv
		if headerTimeout(srv) <= 0 {
			_ = pr.conn.SetReadDeadline(time.Time{})
		}
		if srv.WriteTimeout <= 0 {
			_ = pr.conn.SetWriteDeadline(time.Time{})
		}
		pk.p.metrics.nextHandedBack.Inc()
		pr.ho.give(pr.conn, pr.pre)
		pr.end()
		return
	}
	_ = pr.conn.Close()
	pr.end()
}

// remoteAddr is the client's address as net/http gives it (Request.
// RemoteAddr), worked out once per connection: a directly served read
// passes it on to the read it parks.
func (pr *parkedRead) remoteAddr() string {
	if pr.remote == "" {
		pr.remote = pr.conn.RemoteAddr().String()
	}
	return pr.remote
}

// shuttingDown reports whether pr's server is shutting down.
func (pr *parkedRead) shuttingDown() bool {
	select {
	case <-pr.shutdown:
		return true
	default:
		return false
	}
}

// idleAgain waits, as after the parked read's answer (written), for the
// client's next request to begin after one served directly; false
// when the client left, the idle timeout passed or the server shuts down
// (the caller closes the connection).
func (pr *parkedRead) idleAgain() bool {
	pk := pr.pk
	var until time.Time
	if d := idleTimeout(pr.ho.srv); d > 0 {
		until = time.Now().Add(d)
		_ = pr.conn.SetReadDeadline(until)
	}
	pk.mu.Lock()
	pr.idleUntil = until // the sweep's, which closes it at most as early as the deadline
	pk.idle[pr] = struct{}{}
	pk.mu.Unlock()
	var bp *[]byte
	n := 0
	if !pr.shuttingDown() { // closeServer may have looked before pr was idle
		bp, n, _ = pr.readNext()
	}
	pk.mu.Lock()
	delete(pk.idle, pr)
	pk.mu.Unlock()
	if n == 0 {
		putNextBuf(bp)
		pr.eof = true
		return false
	}
	pr.pre = pr.pre[:0]
	pr.keepNext(bp, n)
	return true
}

// keepNext keeps (*bp)[:n], bytes of the client's next request, after
// pr.pre: in bp itself when pr.pre is empty (no copy; releasePre gives it
// back), else copied.
func (pr *parkedRead) keepNext(bp *[]byte, n int) {
	if len(pr.pre) == 0 && pr.preBuf == nil {
		pr.pre, pr.preBuf = (*bp)[:n], bp
		return
	}
	pr.pre = append(pr.pre, (*bp)[:n]...)
	putNextBuf(bp)
}

// releasePre gives back the pooled buffer pr.pre was read into, once
// serveNext has read it (pr.pre is then a copy, or nothing); what is
// left of it is copied first.
func (pr *parkedRead) releasePre() {
	if pr.preBuf == nil {
		return
	}
	if len(pr.pre) > 0 {
		pr.pre = slices.Clone(pr.pre)
	}
	putNextBuf(pr.preBuf)
	pr.preBuf = nil
}

// drop closes the connection without an answer (a failed write, the
// client gone).
func (pr *parkedRead) drop() {
	if pr.poll != nil {
		pr.poll.take(pr)
	}
	_ = pr.conn.Close()
	pr.end()
}

// pollConn and readable make pr a pollWaiter: its reader starts when its
// connection becomes readable.
func (pr *parkedRead) pollConn() (syscall.RawConn, *uint64) { return pr.raw, &pr.pollTok }
func (pr *parkedRead) readable()                            { go pr.watchClose() }

// closeWaiting closes pr's connection while its reader waits for the
// client, which then finishes pr: a connection in the poller is taken
// out and its reader started, to see the close as a waiting reader does.
func (pr *parkedRead) closeWaiting() {
	polled := pr.poll != nil && pr.poll.take(pr)
	_ = pr.conn.Close()
	if polled {
		go pr.watchClose()
	}
}

// end counts pr out, once; the writers and the watcher stop with the last
// read.
func (pr *parkedRead) end() {
	pr.mu.Lock()
	ended := pr.ended
	pr.ended = true
	pr.out = nil
	if !ended && pr.preBuf != nil {
		putNextBuf(pr.preBuf)
		pr.pre, pr.preBuf = nil, nil
	}
	pr.mu.Unlock()
	if ended {
		return
	}
	pk := pr.pk
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.open--
	if pk.open == 0 {
		close(pk.stop)
		if pk.poll != nil {
			pk.poll.close()
		}
		pk.work, pk.stop, pk.poll = nil, nil, nil
	}
}

// answerWriter is an http.ResponseWriter that keeps what a handler
// writes, to render it as net/http would (bytes).
type answerWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (a *answerWriter) Header() http.Header {
	if a.h == nil {
		a.h = http.Header{}
	}
	return a.h
}

func (a *answerWriter) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *answerWriter) Write(p []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	return a.body.Write(p)
}

// bytes renders the response as net/http's server writes it to an
// HTTP/1.1 GET whose handler has returned (chunkWriter.writeHeader): the
// status line, the handler's headers in key order, then the headers
// net/http adds, in its order (Date, Content-Length, Content-Type,
// Connection), and the body.
func (a *answerWriter) bytes(closeConn bool) []byte {
	code := a.code
	if code == 0 {
		code = http.StatusOK
	}
	bodyOK := code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
	h := a.Header()
	var b bytes.Buffer
	b.Grow(256 + a.body.Len())
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(code))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(code))
	b.WriteString("\r\n")
	var exclude map[string]bool
	if !bodyOK {
		exclude = map[string]bool{"Content-Type": true, "Content-Length": true, "Transfer-Encoding": true}
	}
	if closeConn {
		if exclude == nil {
			exclude = map[string]bool{}
		}
		exclude["Connection"] = true
	}
	_ = h.WriteSubset(&b, exclude)
	if _, ok := h["Date"]; !ok {
		b.WriteString("Date: ")
		b.WriteString(time.Now().UTC().Format(http.TimeFormat))
		b.WriteString("\r\n")
	}
	if bodyOK && h.Get("Content-Length") == "" {
		b.WriteString("Content-Length: ")
		b.WriteString(strconv.Itoa(a.body.Len()))
		b.WriteString("\r\n")
	}
	if _, ok := h["Content-Type"]; bodyOK && !ok && h.Get("Content-Encoding") == "" && a.body.Len() > 0 {
		b.WriteString("Content-Type: ")
		b.WriteString(http.DetectContentType(a.body.Bytes()))
		b.WriteString("\r\n")
	}
	if closeConn {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	if bodyOK {
		b.Write(a.body.Bytes())
	}
	return b.Bytes()
}
