//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The raw blocking watchers (-raw-blocking) are as cheap a real HTTP/1.1
// client as can be, so that the client's CPU takes as little as it can
// from what is measured: each watcher is one keep-alive TCP connection,
// non-blocking, and a few event loops (one per GOMAXPROCS) serve them all
// with an epoll instance of their own: a response is read with one
// read(2) into the loop's buffer when epoll says it is there (no
// goroutine per connection to wake, no read that finds nothing), and the
// next request is one write(2) of bytes prepared once (only the tag
// changes), at once or, with -next-after-change, once every watcher has
// the change (release). A loop waits for its epoll instance in Go's poller (the epoll
// descriptor is itself pollable), not in a blocking epoll_wait, so that
// the rest of this process (the writer, whose response starts the clock)
// runs as soon as it can. Only the status line, ETag,
// Content-Length, Transfer-Encoding and Connection are parsed; the body
// is counted to its Content-Length; nothing is allocated per response.
// Every response is checked: a 200 to a waiting read is a delivery (the
// watcher then asks again with its new ETag), a 304 the end of a wait,
// anything else an error (the watcher waits 200 ms and asks again).

// rawLoops are the event loops of the raw watchers of one watchers.
type rawLoops struct {
	w     *watchers
	addr  syscall.SockaddrInet4
	loops []*rawLoop
	conns []atomic.Pointer[rawConn] // by watcher index
	once  sync.Once
	err   error
}

// rawLoop is one event loop: an epoll instance and its connections.
type rawLoop struct {
	r    *rawLoops
	epfd int
	ep   *os.File // epfd in Go's poller
	buf  []byte   // what read(2) fills
	req  []byte   // the request being built

	mu    sync.Mutex
	retry []*rawConn // to connect again once their pause is over

	// held are the watchers that have the change and wait for every
	// other to have it before they ask again (-next-after-change).
	held []*rawConn
}

// rawConn is one watcher's connection and where its response stands.
type rawConn struct {
	i        int
	fd       int
	loop     *rawLoop
	etag     []byte // the tag held; empty before the first 200
	head     []byte // a response head that came in pieces (rare)
	bodyLeft int    // body bytes still to come
	inBody   bool
	status   int
	close    bool   // the response said "Connection: close"
	newTag   []byte // the response's ETag
	pending  []byte // the rest of a request write(2) did not take (rare)
	retryAt  time.Time
	waited   bool // the request asked to wait (its 200 is a delivery)
	inFlight bool
}

const rawBufSize = 256 << 10

var (
	rawStatusPrefix = []byte("HTTP/1.1 ")
	rawHeadEnd      = []byte("\r\n\r\n")
)

// startRaw starts the loops, once; base is http://host:port with an IPv4
// host.
func (w *watchers) startRaw() error {
	r := w.rawLoops
	r.once.Do(func() {
		host, port, err := net.SplitHostPort(trimScheme(w.base))
		if err != nil {
			r.err = err
			return
		}
		ip := net.ParseIP(host).To4()
		p, err := strconv.Atoi(port)
		if ip == nil || err != nil {
			r.err = fmt.Errorf("raw watchers: %q is not an IPv4 address and port", w.base)
			return
		}
		r.addr.Port = p
		copy(r.addr.Addr[:], ip)
		r.conns = make([]atomic.Pointer[rawConn], MaxWatchers)
		for range runtime.GOMAXPROCS(0) {
			epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
			if err == nil {
				err = syscall.SetNonblock(epfd, true)
			}
			if err != nil {
				r.err = err
				return
			}
			l := &rawLoop{r: r, epfd: epfd, ep: os.NewFile(uintptr(epfd), "epoll"), buf: make([]byte, rawBufSize)}
			r.loops = append(r.loops, l)
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				l.run()
			}()
		}
	})
	return r.err
}

func trimScheme(base string) string {
	if i := bytes.Index([]byte(base), []byte("://")); i >= 0 {
		return base[i+3:]
	}
	return base
}

// addRaw connects watcher i and sends its first request (a plain read,
// for the tag).
func (w *watchers) addRaw(i int) {
	r := w.rawLoops
	if err := w.startRaw(); err != nil {
		w.fail(err)
		return
	}
	l := r.loops[i%len(r.loops)]
	c := &rawConn{i: i, fd: -1, loop: l}
	err := l.connect(c)
	r.conns[i].Store(c) // c as connect left it, for the loop
	if err == nil {
		err = l.register(c)
	}
	if err != nil {
		w.fail(err)
		l.later(c)
	}
}

// connect dials c's connection and sends the request due; register then
// adds it to the loop's epoll instance.
func (l *rawLoop) connect(c *rawConn) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := syscall.Connect(fd, &l.r.addr); err != nil {
		syscall.Close(fd)
		return err
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return err
	}
	c.fd, c.head, c.inBody, c.pending, c.inFlight = fd, c.head[:0], false, nil, false
	req := c.request(nil)
	c.inFlight = true
	l.r.w.inFlight.Add(1)
	n, err := syscall.Write(fd, req)
	if err != nil {
		c.inFlight = false
		l.r.w.inFlight.Add(-1)
		syscall.Close(fd)
		c.fd = -1
		return err
	}
	if n < len(req) {
		c.pending = append(c.pending, req[n:]...)
	}
	return nil
}

// register adds c's connection to the loop's epoll instance.
func (l *rawLoop) register(c *rawConn) error {
	fd := c.fd
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd), Pad: int32(c.i)}
	if len(c.pending) > 0 {
		ev.Events |= syscall.EPOLLOUT
	}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.closeConn(c)
		return err
	}
	return nil
}

// request appends c's next request to b: a plain read before the first
// tag, then the blocking read with If-None-Match.
func (c *rawConn) request(b []byte) []byte {
	app := c.loop.r.w.app
	b = append(b, "GET /eureka/apps/"...)
	b = append(b, app...)
	if len(c.etag) == 0 {
		c.waited = false
		b = append(b, " HTTP/1.1\r\nHost: node\r\nAccept: application/json\r\n\r\n"...)
		return b
	}
	c.waited = true
	b = append(b, "?wait=60s HTTP/1.1\r\nHost: node\r\nAccept: application/json\r\nIf-None-Match: "...)
	b = append(b, c.etag...)
	return append(b, "\r\n\r\n"...)
}

// run serves the loop's connections until the watchers stop.
func (l *rawLoop) run() {
	w := l.r.w
	events := make([]syscall.EpollEvent, 512)
	defer l.closeAll()
	rc, err := l.ep.SyscallConn()
	if err != nil {
		w.fail(err)
		return
	}
	// The wait wakes at least every 100 ms, to see the end and the
	// connections due again.
	var wake time.Time
	for w.ctx.Err() == nil {
		if now := time.Now(); now.After(wake.Add(-50 * time.Millisecond)) {
			wake = now.Add(100 * time.Millisecond)
			_ = l.ep.SetReadDeadline(wake)
		}
		n := 0
		var werr error
		err := rc.Read(func(fd uintptr) bool {
			n, werr = syscall.EpollWait(int(fd), events, 0)
			return n > 0 || (werr != nil && werr != syscall.EINTR)
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			n = 0
		case err != nil:
			w.fail(err)
			return
		case werr != nil:
			w.fail(werr)
			return
		}
		for _, ev := range events[:n] {
			c := l.r.conns[ev.Pad].Load()
			if c == nil || c.fd != int(ev.Fd) {
				continue
			}
			if ev.Events&syscall.EPOLLOUT != 0 && len(c.pending) > 0 {
				if err := l.flush(c); err != nil {
					l.broken(c, err)
					continue
				}
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
				l.readable(c)
			}
		}
		l.release()
		l.retryDue()
	}
}

// readable reads what c's connection has (one read(2): epoll is
// level-triggered, so what is left is reported again).
func (l *rawLoop) readable(c *rawConn) {
	n, err := syscall.Read(c.fd, l.buf)
	switch {
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
		return
	case err != nil:
		l.broken(c, err)
		return
	case n == 0:
		l.broken(c, errors.New("connection closed by the node"))
		return
	}
	if err := l.consume(c, l.buf[:n]); err != nil {
		l.broken(c, err)
	}
}

// consume takes the bytes read of c's response.
func (l *rawLoop) consume(c *rawConn, b []byte) error {
	if !c.inFlight {
		return fmt.Errorf("%d bytes with no request", len(b))
	}
	if !c.inBody {
		data := b
		if len(c.head) > 0 {
			c.head = append(c.head, b...)
			data = c.head
		}
		end := bytes.Index(data, rawHeadEnd)
		if end < 0 {
			if len(data) > 64<<10 {
				return errors.New("response head over 64 KiB")
			}
			if len(c.head) == 0 {
				c.head = append(c.head, b...)
			}
			return nil
		}
		if err := c.parseHead(data[:end+2]); err != nil {
			return err
		}
		c.inBody = true
		b = data[end+4:]
	}
	if len(b) > c.bodyLeft {
		return fmt.Errorf("%d bytes past the response", len(b)-c.bodyLeft)
	}
	c.bodyLeft -= len(b)
	if c.bodyLeft > 0 {
		return nil
	}
	return l.done(c)
}

// parseHead parses the status line and the headers the watcher reads;
// head ends with the last header line's CRLF.
func (c *rawConn) parseHead(head []byte) error {
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	if !bytes.HasPrefix(line, rawStatusPrefix) || len(line) < len(rawStatusPrefix)+3 {
		return fmt.Errorf("status line %q", line)
	}
	code := line[len(rawStatusPrefix) : len(rawStatusPrefix)+3]
	c.status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	if c.status < 100 || c.status > 599 {
		return fmt.Errorf("status line %q", line)
	}
	c.newTag, c.close = c.newTag[:0], false
	length := -1
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return fmt.Errorf("header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, ok := digits(value)
			if !ok {
				return fmt.Errorf("Content-Length %q", value)
			}
			length = n
		case bytes.EqualFold(name, []byte("ETag")):
			c.newTag = append(c.newTag, value...)
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return fmt.Errorf("Transfer-Encoding %q: not read by the raw watchers", value)
		case bytes.EqualFold(name, []byte("Connection")):
			c.close = bytes.EqualFold(value, []byte("close"))
		}
	}
	switch {
	case c.status == 304 || c.status == 204 || c.status < 200:
		c.bodyLeft = 0
	case length < 0:
		return fmt.Errorf("status %d without Content-Length", c.status)
	default:
		c.bodyLeft = length
	}
	return nil
}

// digits parses a decimal Content-Length (at most 9 digits).
func digits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, d := range b {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int(d-'0')
	}
	return n, true
}

// done ends c's response: a delivery or the end of a wait, then the next
// request; an error status waits 200 ms.
func (l *rawLoop) done(c *rawConn) error {
	w := l.r.w
	c.inFlight, c.inBody, c.head = false, false, c.head[:0]
	w.inFlight.Add(-1)
	switch c.status {
	case 200:
		if len(c.newTag) == 0 {
			return errors.New("200 without ETag")
		}
		if c.waited {
			w.record(c.i)
		}
		c.etag = append(c.etag[:0], c.newTag...)
	case 304:
	default:
		w.fail(fmt.Errorf("GET /eureka/apps/%s: status %d", w.app, c.status))
		l.closeConn(c)
		l.later(c)
		return nil
	}
	if c.close {
		l.closeConn(c)
		if err := l.connect(c); err != nil {
			return err
		}
		return l.register(c)
	}
	if w.nextAfterChange && c.status == 200 && c.waited {
		if r := w.cur.Load(); r != nil && r.left.Load() > 0 {
			l.held = append(l.held, c)
			return nil
		}
	}
	return l.ask(c)
}

// release sends the held watchers' next requests once the change has
// reached every watcher (or the round is over).
func (l *rawLoop) release() {
	if len(l.held) == 0 {
		return
	}
	if r := l.r.w.cur.Load(); r != nil && r.left.Load() > 0 {
		return
	}
	for _, c := range l.held {
		if err := l.ask(c); err != nil {
			l.broken(c, err)
		}
	}
	l.held = l.held[:0]
}

// ask sends c's next request.
func (l *rawLoop) ask(c *rawConn) error {
	w := l.r.w
	l.req = c.request(l.req[:0])
	c.inFlight = true
	w.inFlight.Add(1)
	n, err := syscall.Write(c.fd, l.req)
	switch {
	case errors.Is(err, syscall.EAGAIN):
		n = 0
	case err != nil:
		return err
	}
	if n < len(l.req) {
		c.pending = append(c.pending[:0], l.req[n:]...)
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLOUT, Fd: int32(c.fd), Pad: int32(c.i)}
		return syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev)
	}
	return nil
}

// flush writes the rest of a request.
func (l *rawLoop) flush(c *rawConn) error {
	n, err := syscall.Write(c.fd, c.pending)
	switch {
	case errors.Is(err, syscall.EAGAIN):
		return nil
	case err != nil:
		return err
	}
	c.pending = c.pending[n:]
	if len(c.pending) > 0 {
		return nil
	}
	c.pending = nil
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd), Pad: int32(c.i)}
	return syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev)
}

// broken counts an error on c's connection (unless the watchers stop),
// closes it and connects again after 200 ms.
func (l *rawLoop) broken(c *rawConn, err error) {
	w := l.r.w
	if w.ctx.Err() != nil {
		return
	}
	w.fail(err)
	if c.inFlight {
		c.inFlight = false
		w.inFlight.Add(-1)
	}
	l.closeConn(c)
	l.later(c)
}

// later connects c again in 200 ms.
func (l *rawLoop) later(c *rawConn) {
	c.retryAt = time.Now().Add(200 * time.Millisecond)
	l.mu.Lock()
	l.retry = append(l.retry, c)
	l.mu.Unlock()
}

// retryDue connects the connections whose pause is over.
func (l *rawLoop) retryDue() {
	w := l.r.w
	l.mu.Lock()
	if len(l.retry) == 0 {
		l.mu.Unlock()
		return
	}
	now := time.Now()
	var due []*rawConn
	keep := l.retry[:0]
	for _, c := range l.retry {
		if now.After(c.retryAt) {
			due = append(due, c)
		} else {
			keep = append(keep, c)
		}
	}
	l.retry = keep
	l.mu.Unlock()
	for _, c := range due {
		err := l.connect(c)
		if err == nil {
			err = l.register(c)
		}
		if err != nil {
			w.fail(err)
			l.later(c)
		}
	}
}

func (l *rawLoop) closeConn(c *rawConn) {
	if c.fd >= 0 {
		_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
		_ = syscall.Close(c.fd)
		c.fd = -1
	}
	if c.inFlight {
		c.inFlight = false
		l.r.w.inFlight.Add(-1)
	}
}

// closeAll closes the loop's connections and its epoll instance.
func (l *rawLoop) closeAll() {
	for i := range l.r.conns {
		if c := l.r.conns[i].Load(); c != nil && c.loop == l {
			l.closeConn(c)
		}
	}
	_ = l.ep.Close()
}
