package httpapi

// Hijacked streams
//
// A stream that keeps its handler sleeping for its whole life holds, per
// watcher, the connection's goroutine, net/http's background reader
// goroutine and the connection's read and write buffers: about 26 KB per
// idle watcher. So over HTTP/1.x the handler writes the response head
// itself on the hijacked connection ("Connection: close": the connection
// carries this one response) and returns, and the connection joins the
// streamer: a few writer goroutines shared by every hijacked stream, woken
// by the hub's signals and by one keep-alive goroutine. A watcher then
// costs its connection, its place in the hub and a streamConn
// (BENCHMARKS.md, "Push to applications").
//
// Writes. A writer gives a connection streamFastWrite to take what is
// due; what the kernel does not take by then (a client that does not
// read) is finished by a goroutine of that connection's own under
// StreamWriteTimeout, so a slow client never holds the shared writers, and
// one that does not read for StreamWriteTimeout loses its connection, as
// before. A connection that fails a write, or whose server shuts down
// (http.Server does not track hijacked connections: its shutdown hook
// closes them, watch_shutdown.go), is closed and leaves the hub. No shared
// goroutine runs while no stream is open.
//
// Liveness. A stream's TCP connection waits to be readable in the
// streamer's epoll poller (poll_linux.go: nothing more comes from the
// client on it, so readable is the client gone, seen at once rather than
// at the next keep-alive); then a goroutine drains what came, and closes
// the stream if the client left. A stream keeps no goroutine of its own.
// Over TLS, and where there is no poller, one small goroutine per stream
// sits in a one-byte read of the connection instead.
//
// HTTP/2, and a ResponseWriter that cannot be hijacked, keep the handler's
// own loop (stream.go).

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/internal/streamzip"
)

// streamFastWrite is how long a shared writer waits for one connection's
// write before it hands the rest to a goroutine of the connection's own.
const streamFastWrite = 20 * time.Millisecond

// streamZipInline is the largest batch a shared writer compresses for a
// compressed stream (streamzip) itself: a few hundred microseconds.
const streamZipInline = 64 << 10

// streamer runs the hijacked streams of one Server's push side.
type streamer struct {
	p *push

	mu      sync.Mutex
	conns   map[*streamConn]struct{}
	watched map[<-chan struct{}]bool // servers whose shutdown closes their streams
	ready   chan *streamConn         // the writers' queue; nil while none run
	stop    chan struct{}            // closed when the writers and the ticker stop
	poll    *connPoller              // where the streams' connections wait (poll_linux.go); nil: a goroutine each
}

// streamConn is one hijacked stream.
type streamConn struct {
	st        *streamer
	conn      net.Conn
	wt        *watcher
	keepAlive time.Duration
	shutdown  <-chan struct{}   // closed when its server shuts down
	ready     chan *streamConn  // the queue of the writers it joined
	zip       *streamzip.Writer // a gzip stream's (nil: plain); used by the writer that owns busy
	raw       syscall.RawConn   // the TCP connection's descriptor, when it has one
	sent      []*event          // the events of the write under way; the writer that owns busy keeps them
	poll      *connPoller       // the poller its connection waits in, if it does
	pollTok   uint64            // its token in poll

	due    atomic.Int64 // when a keep-alive is due (unix nanoseconds)
	queued atomic.Bool  // in ready
	dirty  atomic.Bool  // woken since a writer last looked
	busy   atomic.Bool  // a writer or its slow flush owns the connection
	closed atomic.Bool
	once   sync.Once
}

func newStreamer(p *push) *streamer {
	return &streamer{p: p, conns: map[*streamConn]struct{}{}, watched: map[<-chan struct{}]bool{}}
}

// hijack takes w's connection for wt and answers the stream's head on it.
// It reports false when the connection cannot be hijacked (HTTP/2): the
// handler then serves the stream itself. On true the streamer owns wt (it
// leaves the hub when the connection closes).
func (st *streamer) hijack(w http.ResponseWriter, r *http.Request, wt *watcher, keepAlive time.Duration, zip *streamzip.Writer) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	rc := http.NewResponseController(w)
	h := w.Header().Clone()
	conn, _, err := rc.Hijack()
	if err != nil {
		return false
	}
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	_ = h.Write(&head)
	head.WriteString("\r\n")
	_ = conn.SetReadDeadline(time.Time{})
	_ = conn.SetWriteDeadline(time.Now().Add(st.p.cfg.StreamWriteTimeout))
	if _, err := conn.Write(head.Bytes()); err != nil {
		_ = conn.Close()
		st.p.hub.leave(wt)
		zip.Close()
		return true
	}
	c := &streamConn{st: st, conn: conn, wt: wt, keepAlive: keepAlive, shutdown: st.p.shutdowns.of(r), zip: zip}
	if _, isTLS := conn.(*tls.Conn); !isTLS {
		c.raw = rawConnOf(conn)
	}
	c.due.Store(time.Now().Add(keepAlive).UnixNano())
	st.mu.Lock()
	watch := c.shutdown != nil && !st.watched[c.shutdown]
	if watch {
		st.watched[c.shutdown] = true
	}
	st.mu.Unlock()
	if watch {
		ch := c.shutdown
		st.p.shutdowns.onShutdown(r, func() { st.closeServer(ch) })
	}
	// Counted before add starts the goroutine whose close uncounts it.
	st.p.metrics.streamsOpen.Inc()
	if !st.add(c) {
		st.p.metrics.streamsOpen.Dec()
		return true
	}
	st.p.hub.attach(wt, c.wake)
	return true
}

// add registers c and starts the writers if none run; false if its
// server's shutdown has already come (c is closed then).
func (st *streamer) add(c *streamConn) bool {
	select {
	case <-c.shutdown:
		_ = c.conn.Close()
		st.p.hub.leave(c.wt)
		c.zip.Close()
		return false
	default:
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ready == nil {
		st.start()
	}
	c.ready = st.ready
	st.conns[c] = struct{}{}
	if c.raw != nil {
		c.poll = st.poll
	}
	if c.poll == nil || !c.poll.add(c) {
		go c.watchClose()
	}
	return true
}

// pollConn and readable make c a pollWaiter: once its connection is
// readable, a goroutine drains it.
func (c *streamConn) pollConn() (syscall.RawConn, *uint64) { return c.raw, &c.pollTok }
func (c *streamConn) readable()                            { go c.drain() }

// drain reads what came on c's connection without waiting: nothing but
// the client's leaving is expected, which closes c; bytes are ignored
// (as watchClose ignores them), and the connection waits in the poller
// again.
func (c *streamConn) drain() {
	var buf [64]byte
	gone := false
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, e := syscall.Read(int(fd), buf[:])
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				return true
			case e != nil || n == 0 || sabotage.On(sabotage.StreamClosedByClientBytes):
				gone = true
				return true
			}
		}
	})
	if err != nil || gone {
		c.close()
		return
	}
	if !c.poll.add(c) {
		go c.watchClose()
	}
}

// watchClose closes c when its client closes the connection (or it is
// closed here).
func (c *streamConn) watchClose() {
	var b [1]byte
	for {
		if _, err := c.conn.Read(b[:]); err != nil {
			c.close()
			return
		}
	}
}

// start starts the writers and the keep-alive ticker; st.mu must be held.
func (st *streamer) start() {
	cfg := st.p.cfg
	st.ready = make(chan *streamConn, cfg.MaxStreams)
	st.stop = make(chan struct{})
	for range max(2, runtime.GOMAXPROCS(0)) {
		go st.write(st.ready, st.stop)
	}
	// The shortest keep-alive a stream can have is min(StreamKeepAlive,
	// minStreamKeepAlive); the ticker looks four times as often.
	tick := max(min(cfg.StreamKeepAlive, minStreamKeepAlive)/4, 5*time.Millisecond)
	go st.tick(tick, st.stop)
	st.poll = newConnPoller(func() {})
}

// closeServer closes the streams of the server whose shutdown channel is
// ch.
func (st *streamer) closeServer(ch <-chan struct{}) {
	st.mu.Lock()
	var conns []*streamConn
	for c := range st.conns {
		if c.shutdown == ch {
			conns = append(conns, c)
		}
	}
	st.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// write is a writer: it serves the connections woken into ready.
func (st *streamer) write(ready chan *streamConn, stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case c := <-ready:
			c.queued.Store(false)
			c.serve()
		}
	}
}

// tick wakes the streams whose keep-alive is due.
func (st *streamer) tick(every time.Duration, stop chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	var due []*streamConn
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			due = due[:0]
			st.mu.Lock()
			for c := range st.conns {
				if c.due.Load() <= now.UnixNano() {
					due = append(due, c)
				}
			}
			st.mu.Unlock()
			for _, c := range due {
				c.wake()
			}
		}
	}
}

// wake queues c for a writer (the hub calls it under its lock, for a new
// event or snapshot; the ticker for a keep-alive).
func (c *streamConn) wake() {
	c.dirty.Store(true)
	if c.closed.Load() || !c.queued.CompareAndSwap(false, true) {
		return
	}
	select {
	case c.ready <- c:
	default:
		// Cannot happen: ready holds MaxStreams and each stream once.
		c.queued.Store(false)
	}
}

// serve writes what is due on c: the hub's snapshot and events, or a
// keep-alive. A write the connection does not take within streamFastWrite
// goes on in a goroutine of its own.
func (c *streamConn) serve() {
	if c.closed.Load() || !c.busy.CompareAndSwap(false, true) {
		return // closed, or a slow flush owns it and looks again when done
	}
	c.dirty.Store(false)
	bufs := c.frames()
	if len(bufs) == 0 {
		c.done()
		return
	}
	if c.zip != nil {
		// Compressed for this connection alone, the batch ends with a
		// sync flush; its bytes stay valid until the next serve, which
		// busy holds back until this write is done. A big batch (a
		// snapshot) is compressed by the connection's own goroutine, not
		// a shared writer.
		size := 0
		for _, b := range bufs {
			size += len(b)
		}
		if size > streamZipInline {
			go func() { c.slowFlush(net.Buffers{c.zip.Compress(bufs)}) }()
			return
		}
		bufs = net.Buffers{c.zip.Compress(bufs)}
	}
	_ = c.conn.SetWriteDeadline(time.Now().Add(streamFastWrite))
	_, err := bufs.WriteTo(c.conn)
	switch {
	case err == nil:
		c.done()
	case errors.Is(err, os.ErrDeadlineExceeded):
		go c.slowFlush(bufs)
	default:
		c.fail()
	}
}

// frames is what c should write now; empty when nothing is due.
func (c *streamConn) frames() net.Buffers {
	p := c.st.p
	snap, repair, evs := p.hub.take(c.wt)
	c.sent = evs
	var bufs net.Buffers
	if snap != nil {
		bufs = append(bufs, snap.frame(c.wt.filter, p.hub.enc))
		p.metrics.snapshots.Inc()
	}
	if repair != nil {
		bufs = append(bufs, repair)
	}
	for _, e := range evs {
		if b := e.frame(c.wt.filter, p.hub.enc); b != nil {
			bufs = append(bufs, b)
			p.metrics.events.Inc()
		}
	}
	if len(bufs) == 0 && c.due.Load() <= time.Now().UnixNano() {
		bufs = append(bufs, keepAliveComment)
	}
	return bufs
}

// slowFlush finishes a write that the connection did not take at once,
// within StreamWriteTimeout.
func (c *streamConn) slowFlush(rest net.Buffers) {
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.st.p.cfg.StreamWriteTimeout))
	if _, err := rest.WriteTo(c.conn); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.st.p.metrics.cutWrite.Inc()
		}
		c.fail()
		return
	}
	c.done()
}

// fail ends a write that failed: its events are done with (not written),
// and c is closed.
func (c *streamConn) fail() {
	doneWithAll(c.sent, c.st.p.metrics.streamFanout)
	c.sent = nil
	c.close()
}

// done ends a write: the next keep-alive is due a keep-alive interval
// from now, and a wake that came meanwhile is served.
func (c *streamConn) done() {
	doneWithAll(c.sent, c.st.p.metrics.streamFanout)
	c.sent = nil
	c.due.Store(time.Now().Add(c.keepAlive).UnixNano())
	c.busy.Store(false)
	if c.dirty.Load() {
		c.wake()
	}
}

// close closes c's connection and takes it out of the hub and the
// streamer; the writers stop when no stream is left.
func (c *streamConn) close() {
	c.once.Do(func() {
		c.closed.Store(true)
		if c.poll != nil {
			c.poll.take(c)
		}
		_ = c.conn.Close()
		c.zip.Close() // its place; a writer still flushing only fails on the closed connection
		st := c.st
		st.p.hub.leave(c.wt)
		st.p.metrics.streamsOpen.Dec()
		st.mu.Lock()
		delete(st.conns, c)
		if len(st.conns) == 0 && st.ready != nil {
			close(st.stop)
			if st.poll != nil {
				st.poll.close()
			}
			st.ready, st.stop, st.poll = nil, nil, nil
		}
		st.mu.Unlock()
	})
}
