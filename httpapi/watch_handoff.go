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
// A connection goes back when the client's next request begins (its
// first bytes, read by the parked read's reader goroutine) and is not a
// blocking read served on the connection (watch_direct.go), so never idle:
// to net/http it is a new connection, which Shutdown would take for idle
// only after five seconds. The bytes of that request read already go in
// front (handedConn): those first bytes, what the hijacked reader had
// buffered, and the head (and anything after it) that watch_direct.go
// read. One cost:
// over TLS, the server no longer sees a *tls.Conn, so later requests on
// that connection have no Request.TLS (the API does not read it).

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
)

// errHandoffIdle ends a handoff's Serve when its queue is empty.
var errHandoffIdle = errors.New("httpapi: no connection to hand back")

// handoff queues the connections going back to one http.Server.
type handoff struct {
	srv *http.Server
	ctx context.Context // carries srv, as net/http's requests do (watch_direct.go)

	mu    sync.Mutex
	queue []net.Conn
	run   *handoffListener // the listener of the running Serve; nil if none
}

func newHandoff(srv *http.Server) *handoff {
	return &handoff{srv: srv, ctx: context.WithValue(context.Background(), http.ServerContextKey, srv)}
}

// give hands c back to the server, with pre, bytes read from it already,
// in front.
func (h *handoff) give(c net.Conn, pre []byte) {
	hc, ok := c.(*handedConn)
	if !ok {
		hc = &handedConn{Conn: c}
	}
	hc.pre = pre
	h.mu.Lock()
	defer h.mu.Unlock()
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
	pre []byte          // read by net/http's reader only (one at a time)
	raw syscall.RawConn // Conn's descriptor, once a read parked on it asked (rawConnOf)
}

// isTLS reports whether c is a TLS connection.
func (c *handedConn) isTLS() bool {
	_, ok := c.Conn.(*tls.Conn)
	return ok
}

// Read reads what was read ahead first.
func (c *handedConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(p)
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
