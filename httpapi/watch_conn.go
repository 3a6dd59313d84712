package httpapi

// The parked reads' connection I/O
//
// A parked read's answer and its client's next request are the whole cost
// of a blocking read that a change answers, and they are paid once per
// watcher and change: so on a TCP connection they go through the
// descriptor itself (syscall.RawConn), still in Go's poller.
//   - The answer is written with one write(2) that does not wait (writeNow):
//     what the kernel does not take at once is finished by the
//     connection's own goroutine (slowSend), as a write that would have
//     blocked; no write deadline to set and clear per answer, and a writer
//     never waits for one client.
//   - The next request is read, once the parker's poller (poll_linux.go)
//     or Go's says it is there, with one read(2) into a pooled buffer taken
//     only then (readNext): the whole head nearly always, where a read of
//     one byte and then of the rest took two, and an idle connection holds
//     no buffer.
// Other connections (TLS, or a net.Conn that is not a syscall.Conn) are
// read one byte at a time and written under a deadline, as before.

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// rawConnOf returns the descriptor of c's TCP connection, or nil. c may
// be a connection handed back or served directly (a handedConn, with
// nothing read ahead left), which keeps it for the next read parked on it.
func rawConnOf(c net.Conn) syscall.RawConn {
	hc, _ := c.(*handedConn)
	if hc != nil {
		if len(hc.pre) > 0 {
			return nil
		}
		if hc.raw != nil {
			return hc.raw
		}
		c = hc.Conn
	}
	sc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	if hc != nil {
		hc.raw = rc
	}
	return rc
}

// writeNow writes what the kernel takes of b at once and returns how
// much that was; without a descriptor, what it takes within
// streamFastWrite (a deadline error then means the rest is due).
func (pr *parkedRead) writeNow(b []byte) (int, error) {
	if pr.raw == nil {
		_ = pr.conn.SetWriteDeadline(time.Now().Add(streamFastWrite))
		return pr.conn.Write(b)
	}
	w := rawWrites.Get().(*rawWrite)
	w.b, w.n, w.err = b, 0, nil
	err := pr.raw.Write(w.f)
	n, werr := w.n, w.err
	w.b = nil
	rawWrites.Put(w)
	if err != nil {
		return n, err
	}
	return n, werr
}

// rawWrite is one write(2) that does not wait, through a RawConn: pooled,
// its callback bound once, so that the writers allocate nothing per answer
// (an allocation during a collection is paid for in marking work).
type rawWrite struct {
	b   []byte
	n   int
	err error
	f   func(fd uintptr) bool // do
}

var rawWrites = sync.Pool{New: func() any {
	w := &rawWrite{}
	w.f = w.do
	return w
}}

func (w *rawWrite) do(fd uintptr) bool {
	for {
		m, e := syscall.Write(int(fd), w.b[w.n:])
		if m > 0 {
			w.n += m
		}
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
		case e != nil:
			w.err = os.NewSyscallError("write", e)
		case m > 0 && w.n < len(w.b):
			continue // a short write: the kernel may take more
		}
		return true // never wait
	}
}

// nextBufs are the buffers the next requests are read into (as large as
// the direct reader's, which a head must fit in to be served directly).
var nextBufs = sync.Pool{New: func() any {
	b := make([]byte, directBufSize)
	return &b
}}

// oneByte is the buffer of a one-byte read: an idle connection without a
// descriptor holds only this.
type oneByte [1]byte

// readNext waits for the client's next bytes and returns them, (*bp)[:n],
// in a buffer to give back with putNextBuf (bp may be nil when n is 0);
// err is the client gone, the read deadline or the connection closed.
func (pr *parkedRead) readNext() (bp *[]byte, n int, err error) {
	if pr.raw == nil {
		var b oneByte
		n, err = pr.conn.Read(b[:])
		if n > 0 {
			bp = nextBufs.Get().(*[]byte)
			(*bp)[0] = b[0]
		}
		return bp, n, err
	}
	r := rawReads.Get().(*rawRead)
	r.bp, r.n, r.err = nil, 0, nil
	err = pr.raw.Read(r.f)
	bp, n, rerr := r.bp, r.n, r.err
	r.bp = nil
	rawReads.Put(r)
	switch {
	case err != nil:
	case rerr != nil:
		err = os.NewSyscallError("read", rerr)
	case n == 0:
		err = io.EOF
	}
	return bp, n, err
}

// rawRead is one read(2) of the next request through a RawConn, into a
// buffer of nextBufs taken once there is something to read: pooled, its
// callback bound once.
type rawRead struct {
	bp  *[]byte
	n   int
	err error
	f   func(fd uintptr) bool // do
}

var rawReads = sync.Pool{New: func() any {
	r := &rawRead{}
	r.f = r.do
	return r
}}

func (r *rawRead) do(fd uintptr) bool {
	if r.bp == nil {
		r.bp = nextBufs.Get().(*[]byte)
	}
	var e error
	for {
		r.n, e = syscall.Read(int(fd), *r.bp)
		if e != syscall.EINTR {
			break
		}
	}
	if e == syscall.EAGAIN {
		nextBufs.Put(r.bp)
		r.bp, r.n = nil, 0
		return false // wait in the poller
	}
	if r.n < 0 {
		r.n = 0
	}
	r.err = e
	return true
}

// putNextBuf gives back a buffer of readNext (nil: none).
func putNextBuf(bp *[]byte) {
	if bp != nil {
		nextBufs.Put(bp)
	}
}
