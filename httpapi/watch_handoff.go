package httpapi

// Handing connections back
//
// A parked read (watch_park.go) owns its hijacked connection; once it is
// answered, the client may send its next request on the same connection
// (HTTP/1.1 keep-alive: the Go client and the bench's watchers do). The
// API does not own the server's listener, but an http.Server serves any
// number of listeners: the connection is queued on a handoff, and a
// Serve over the handoff's listener, started when the queue fills and
// returning when it is empty (so no goroutine stays while none is handed
// back), gives it to the server as if just accepted. From then on it is
// the server's like any other: its timeouts, its ConnState hooks, its
// Shutdown (the Serve's listener is tracked and closed with the others).
//
// The bytes of the next request the hijacked reader had already read go
// in front (handedConn). A handed-back connection waiting for its next
// request is, to net/http, a new connection, which Shutdown would only
// take for idle after five seconds; the handoff closes those itself when
// the server shuts down. One cost: over TLS, the server no longer sees a
// *tls.Conn, so later requests on that connection have no Request.TLS
// (the API does not read it).

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// errHandoffIdle ends a handoff's Serve when its queue is empty.
var errHandoffIdle = errors.New("httpapi: no connection to hand back")

// handoff queues the connections going back to one http.Server.
type handoff struct {
	srv *http.Server

	mu    sync.Mutex
	queue []net.Conn
	run   *handoffListener         // the listener of the running Serve; nil if none
	fresh map[*handedConn]struct{} // handed back, no byte of a request read yet
}

func newHandoff(srv *http.Server) *handoff {
	return &handoff{srv: srv, fresh: map[*handedConn]struct{}{}}
}

// give hands c back to the server, with pre, bytes read from it already,
// in front.
func (h *handoff) give(c net.Conn, pre []byte) {
	hc, ok := c.(*handedConn)
	if !ok {
		hc = &handedConn{Conn: c, h: h}
	}
	hc.pre = pre
	hc.fresh.Store(true)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fresh[hc] = struct{}{}
	h.queue = append(h.queue, hc)
	if h.run == nil {
		h.run = &handoffListener{h: h, addr: c.LocalAddr()}
		go h.serve(h.run)
	}
}

// serve serves the queue over l until it is empty or the server closed;
// connections the server will not take then are closed.
func (h *handoff) serve(l *handoffListener) {
	_ = h.srv.Serve(l)
	h.mu.Lock()
	var drop []net.Conn
	if h.run == l { // not idle: the server is closed
		h.run = nil
		drop, h.queue = h.queue, nil
	}
	h.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
}

// closeFresh closes the handed-back connections that wait for a next
// request (the server shuts down).
func (h *handoff) closeFresh() {
	h.mu.Lock()
	conns := make([]*handedConn, 0, len(h.fresh))
	for hc := range h.fresh {
		conns = append(conns, hc)
	}
	clear(h.fresh)
	h.mu.Unlock()
	for _, hc := range conns {
		_ = hc.Conn.Close()
	}
}

// handoffListener is a Serve's view of the queue.
type handoffListener struct {
	h    *handoff
	addr net.Addr
}

// Accept returns the next queued connection; errHandoffIdle ends the
// Serve when there is none.
func (l *handoffListener) Accept() (net.Conn, error) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queue) == 0 {
		if h.run == l {
			h.run = nil
		}
		return nil, errHandoffIdle
	}
	c := h.queue[0]
	h.queue[0] = nil
	h.queue = h.queue[1:]
	return c, nil
}

// Close does nothing: Accept never blocks.
func (l *handoffListener) Close() error { return nil }

// Addr is the server's address, as the connections' local one.
func (l *handoffListener) Addr() net.Addr { return l.addr }

// handedConn is a connection handed back: pre, then the connection.
type handedConn struct {
	net.Conn
	h     *handoff
	pre   []byte      // read by net/http's reader only (one at a time)
	fresh atomic.Bool // in h.fresh
}

// isTLS reports whether c is a TLS connection.
func (c *handedConn) isTLS() bool {
	_, ok := c.Conn.(*tls.Conn)
	return ok
}

// Read reads what was read ahead first.
func (c *handedConn) Read(p []byte) (int, error) {
	var n int
	var err error
	if len(c.pre) > 0 {
		n = copy(p, c.pre)
		c.pre = c.pre[n:]
	} else {
		n, err = c.Conn.Read(p)
	}
	if n > 0 && c.fresh.Load() {
		c.fresh.Store(false)
		c.h.mu.Lock()
		delete(c.h.fresh, c)
		c.h.mu.Unlock()
	}
	return n, err
}

// Close closes the connection and forgets it as waiting.
func (c *handedConn) Close() error {
	if c.fresh.Load() {
		c.fresh.Store(false)
		c.h.mu.Lock()
		delete(c.h.fresh, c)
		c.h.mu.Unlock()
	}
	return c.Conn.Close()
}

// takePre returns and forgets what is left of pre (the connection is
// hijacked again).
func (c *handedConn) takePre() []byte {
	p := c.pre
	c.pre = nil
	return p
}

// CloseWrite half-closes the connection when it can, as net/http does on
// a TCP connection before closing it.
func (c *handedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
