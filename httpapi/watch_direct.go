package httpapi

// Next reads served on the parked connection
//
// A watcher's next request, once its parked read is answered, is almost
// always another blocking read: the same resource, the new tag, wait=.
// Handing the connection back to net/http for it (watch_handoff.go) cost
// a connection goroutine, net/http's background reader, a second hijack
// and the stop of that reader: 28–45% of the node's CPU per change and
// watcher (0.059–0.094 ms with the hand-back, 0.037–0.055 without;
// BENCHMARKS.md, "Push to applications"). So the parked read's reader
// goroutine, which sees the next request begin, reads that request
// itself and, when it is a blocking read of a watchable resource,
// serves it on the spot: through the Server's own handler (s.handler:
// authentication, the rate limit, the router, the endpoint's metrics, the
// readiness gate, serveWatched's If-None-Match and wait), with a
// ResponseWriter (directWriter) that renders the answer as net/http
// would (answerWriter.bytes) and whose Hijack gives the connection to the
// read parked anew. A read that does not wait (200 at once, 304, 401,
// 403, the rate limit's 503, 400) is written and the connection is idle
// again, its reader waiting for the next request.
//
// The request is read as net/http reads it: under the server's header
// timeout (ReadHeaderTimeout, else ReadTimeout) once its first bytes came
// (on a TCP connection the read that sees it begin nearly always brings
// all of its head: watch_conn.go; read a byte at a time, the read after
// the first byte is under the idle deadline still set), with
// http.ReadRequest, from a pooled 4 KiB bufio.Reader. It is served here only when it is
//   - a complete request head within those 4 KiB (longer: handed back, and
//     net/http applies MaxHeaderBytes and answers 431 itself);
//   - an HTTP/1.1 GET in origin form with one valid Host, no body
//     (Content-Length or Transfer-Encoding), no Upgrade, no Expect, no
//     "Connection: close";
//   - of a clean path (no escapes, no empty, "." or ".." segment) under a
//     base path: apps/delta, apps/{app}, vips/{vip} or svips/{svip}, with
//     or without a trailing slash;
//   - carrying If-None-Match and a wait parameter.
// Anything else (another path, a body, a request net/http would refuse)
// goes back to net/http through the hand-back, every byte read so far in
// front: net/http parses it again and answers it as any other. A request
// pipelined behind a directly answered one is handed back likewise.
//
// The requests differ from net/http's in what the API does not read:
// their context carries the server and the local address but no
// cancellation (nothing served here waits: a read that must wait is
// parked), ConnContext and BaseContext are not called, and over TLS
// Request.TLS is set from the connection as net/http does. A handler's
// panic is recovered and logged, and closes the connection, as net/http
// does. The request goes to the Server's own handler, not to what the
// http.Server's Handler may wrap it in (the node serves the Server
// itself): a wrapper that must see every request needs BlockingDirect
// off.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// directBufSize is the buffer a next request's head must fit in to be
// served directly (net/http's own read buffer is as large).
const directBufSize = 4 << 10

// directReaders are the read buffers of the requests served directly,
// used only while one is read and served.
var directReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, directBufSize) }}

// What serveNext did with the connection.
const (
	directHandBack = iota // not served: hand it back, pr.pre in front
	directParked          // served, and parked again: the new read owns it
	directIdle            // served and answered: wait for the next request
	directClosed          // closed (a read or write failed, or the server shuts down)
)

// serveNext reads the client's next request on pr's answered connection
// (its first bytes are pr.pre) and serves it when it can (see the file
// comment).
func (pr *parkedRead) serveNext() int {
	pk := pr.pk
	pk.mu.Lock()
	s := pk.s
	pk.mu.Unlock()
	if s == nil || !s.push.cfg.BlockingDirect {
		return directHandBack
	}
	srv := pr.ho.srv
	hc, ok := pr.conn.(*handedConn)
	if !ok {
		hc = &handedConn{Conn: pr.conn} // pr.conn stays: closeServer reads it
	}
	hc.pre = pr.pre
	pr.pre = nil
	br := directReaders.Get().(*bufio.Reader)
	br.Reset(hc)
	defer func() {
		br.Reset(nil)
		directReaders.Put(br)
	}()
	// The head nearly always came whole with the read that saw it begin
	// (pr.pre: readNext); the header timeout is set only if more must be
	// waited for. Read a byte at a time (no descriptor: watch_conn.go),
	// the head's first read of the connection is under the idle deadline
	// still set (one deadline change less per request, each a runtime
	// timer's), unless the server has no idle timeout.
	waitAt := 2
	if pr.raw == nil && idleTimeout(srv) > 0 {
		waitAt = 3
	}
	end, err := headEnd(br, waitAt, func() {
		if d := headerTimeout(srv); d > 0 {
			_ = hc.SetReadDeadline(time.Now().Add(d))
		}
	})
	if err != nil {
		if err == bufio.ErrBufferFull {
			pr.pre = rest(br, hc) // net/http applies its header limit
			return directHandBack
		}
		_ = hc.Close() // the client left, or its request timed out
		return directClosed
	}
	head, _ := br.Peek(end)
	req, err := parseHead(head)
	if err != nil || !directable(req) {
		pr.pre = rest(br, hc) // the head is still in br
		return directHandBack
	}
	_, _ = br.Discard(end)
	delete(req.Header, "Host")
	req.RemoteAddr = pr.remoteAddr()
	if tc, ok := hc.Conn.(*tls.Conn); ok {
		st := tc.ConnectionState()
		req.TLS = &st
	}
	ctx := context.WithValue(pr.ho.ctx, http.LocalAddrContextKey, hc.LocalAddr())
	req = req.WithContext(ctx)

	dw := &directWriter{conn: hc, br: br}
	pk.p.metrics.nextDirect.Inc()
	if !s.serveDirect(dw, req) {
		if !dw.hijacked {
			_ = hc.Close()
		}
		return directClosed
	}
	if dw.hijacked {
		return directParked
	}
	closing := false
	select {
	case <-pr.shutdown:
		closing = true
	default:
	}
	out := dw.bytes(closing)
	wt := srv.WriteTimeout
	if wt <= 0 {
		wt = blockingWriteAllowance
	}
	_ = hc.SetWriteDeadline(time.Now().Add(wt))
	if _, err := hc.Write(out); err != nil || closing {
		_ = hc.Close()
		return directClosed
	}
	if more := rest(br, hc); len(more) > 0 {
		pr.pre = more // pipelined: net/http serves it
		return directHandBack
	}
	return directIdle
}

// headReader parses a request head apart from the connection's reader,
// so that the head stays there to be handed back.
type headReader struct {
	r  bytes.Reader
	br *bufio.Reader
}

var headReaders = sync.Pool{New: func() any {
	h := &headReader{}
	h.br = bufio.NewReaderSize(&h.r, directBufSize)
	return h
}}

// parseHead parses a request head (no body is read) with
// http.ReadRequest.
func parseHead(head []byte) (*http.Request, error) {
	h := headReaders.Get().(*headReader)
	h.r.Reset(head)
	h.br.Reset(&h.r)
	req, err := http.ReadRequest(h.br)
	h.r.Reset(nil)
	h.br.Reset(&h.r)
	headReaders.Put(h)
	return req, err
}

// directHook, when set (by tests only: watch_export_test.go), runs before
// the handler of each request served directly, as part of it.
var directHook atomic.Pointer[func(*http.Request)]

// serveDirect runs the handler for req; false if it panicked, which is
// logged as net/http logs it (the caller closes the connection, as
// net/http does; http.ErrAbortHandler is not logged).
func (s *Server) serveDirect(w *directWriter, req *http.Request) (ok bool) {
	defer func() {
		if err := recover(); err != nil {
			ok = false
			if err != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				s.log.Error("panic serving a blocking read", "remote", req.RemoteAddr, "path", req.URL.Path,
					"panic", fmt.Sprint(err), "stack", string(buf))
			}
		}
	}()
	if h := directHook.Load(); h != nil {
		(*h)(req)
	}
	s.handler.ServeHTTP(w, req)
	return true
}

// rest takes what br has buffered and what hc has left of its read-ahead
// (nil if nothing).
func rest(br *bufio.Reader, hc *handedConn) []byte {
	var out []byte
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		out = slices.Clone(b)
		_, _ = br.Discard(n)
	}
	return append(out, hc.takePre()...)
}

// headerTimeout is how long net/http gives a request's head.
func headerTimeout(srv *http.Server) time.Duration {
	if srv.ReadHeaderTimeout > 0 {
		return srv.ReadHeaderTimeout
	}
	return srv.ReadTimeout
}

// headEnd reads until br holds a whole request head and returns its
// length (to the end of the blank line); bufio.ErrBufferFull when it does
// not fit in br, or the read's error. The first read of br takes what was
// read ahead, the second the connection; wait is called before the waitAt-th read of br.
func headEnd(br *bufio.Reader, waitAt int, wait func()) (int, error) {
	from, reads := 0, 0
	for {
		n := br.Buffered()
		if n > 0 {
			b, _ := br.Peek(n)
			if i := blankLine(b, from); i >= 0 {
				return i, nil
			}
			from = max(0, n-2)
		}
		if n == br.Size() {
			return 0, bufio.ErrBufferFull
		}
		if reads++; reads == waitAt {
			wait()
		}
		if _, err := br.Peek(n + 1); err != nil {
			return 0, err
		}
	}
}

// blankLine returns the end of the first empty line in b ("\n\n" or
// "\n\r\n"; textproto accepts both), looking from from on; -1 if none.
func blankLine(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 3
		}
	}
	return -1
}

// directable reports whether req is served directly (see the file
// comment).
func directable(req *http.Request) bool {
	h := req.Header
	if req.Method != http.MethodGet || req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.Close ||
		req.ContentLength != 0 || len(req.TransferEncoding) != 0 ||
		len(h["Content-Length"]) != 0 || len(h["Transfer-Encoding"]) != 0 ||
		len(h["Upgrade"]) != 0 || len(h["Expect"]) != 0 ||
		!validHost(req.Host) || // from the one Host line (ReadRequest refuses two)
		len(h["If-None-Match"]) == 0 || !strings.Contains(req.URL.RawQuery, "wait=") ||
		!strings.HasPrefix(req.RequestURI, "/") || req.URL.RawPath != "" {
		return false
	}
	return watchablePath(req.URL.Path)
}

// watchablePath reports whether path is a clean path of a resource that
// blocking reads watch.
func watchablePath(path string) bool {
	for _, base := range BasePaths {
		rest, ok := strings.CutPrefix(path, base+"/")
		if !ok {
			continue
		}
		kind, name, ok := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
		if ok && cleanSegment(name) && strings.IndexByte(name, '/') < 0 &&
			(kind == "apps" || kind == "vips" || kind == "svips") {
			return true
		}
	}
	return false
}

// validHost is a strict subset of the Host values net/http accepts:
// letters, digits and the punctuation of names, IPv6 literals and ports.
func validHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~:[]%", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// directWriter is the ResponseWriter of a request served directly: it
// keeps the answer (answerWriter), and its Hijack gives the connection to
// the read that parks.
type directWriter struct {
	answerWriter
	conn     *handedConn
	br       *bufio.Reader
	hijacked bool
}

// Hijack hands over the connection; the bytes read after the request are
// in the reader's buffer and the connection's read-ahead, as park takes
// them.
func (w *directWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	w.hijacked = true
	// No deadline for the parked read (net/http clears it on a hijack);
	// the read the parked one starts at once must not inherit the idle
	// or header deadline.
	_ = w.conn.SetReadDeadline(time.Time{})
	// No writer: park, the only caller, takes the reader's buffered bytes
	// alone (one allocation less per read parked).
	return w.conn, bufio.NewReadWriter(w.br, nil), nil
}
