//go:build linux

package httpapi

// The hijacked connections' poller
//
// A parked read waits for its client's next bytes (or its leaving), and
// so does its connection after the answer until the next request begins;
// a stream waits for its client's leaving. A goroutine each for that wait
// held 10,000 goroutines for 10,000 watchers: their stacks in the node's
// memory, and in every collection's scan. So on Linux those TCP
// connections wait in one epoll instance (connPoller) of their owner's
// (the parker's, the streamer's), itself waited for in Go's poller (an
// epoll descriptor is pollable): no goroutine and no buffer per waiting
// connection. A connection is registered one-shot, under a token; when it
// becomes readable (bytes, the client gone) the poller takes it out and
// calls its waiter, which starts a goroutine to read what came (a parked
// read's watchClose, a stream's drain). A connection registered again
// re-arms its registration (EPOLL_CTL_MOD); one closed leaves the epoll
// set with its descriptor, and its owner takes it out of the poller
// first. The server's idle timeout, which a read deadline enforced on a
// waiting goroutine, is enforced for parked reads by a sweep of the idle
// connections about once a second (sweepEvery).

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// sweepEvery is how often the poller calls its sweep (the parker's looks
// for idle connections past the server's idle timeout: the timeout holds
// to within this).
const sweepEvery = time.Second

// pollWaiter is a connection that waits in a connPoller.
type pollWaiter interface {
	// pollConn is the connection's descriptor and where its token is
	// kept (by the poller, under its lock).
	pollConn() (syscall.RawConn, *uint64)
	// readable is called, once per registration, when the connection
	// becomes readable; it must not block (it starts a goroutine).
	readable()
}

// connPoller is an epoll instance of waiting connections and the
// goroutine that waits on it.
type connPoller struct {
	ep    *os.File        // the epoll descriptor, in Go's poller
	rc    syscall.RawConn // ep's
	epfd  int
	sweep func() // called about every sweepEvery

	mu     sync.Mutex
	next   uint64
	polled map[uint64]pollWaiter // by token
	closed bool
}

// newConnPoller starts a poller; nil if the system refuses one (its
// owner's connections then wait in a goroutine each).
func newConnPoller(sweep func()) *connPoller {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return nil
	}
	ep := os.NewFile(uintptr(fd), "hijacked-conns-epoll")
	rc, err := ep.SyscallConn()
	if err != nil {
		_ = ep.Close()
		return nil
	}
	p := &connPoller{ep: ep, rc: rc, epfd: fd, sweep: sweep, polled: map[uint64]pollWaiter{}}
	go p.run()
	return p
}

// add registers w's connection; false if it cannot be (the caller then
// waits for it in a goroutine).
func (p *connPoller) add(w pollWaiter) bool {
	raw, tokp := w.pollConn()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.next++
	tok := p.next
	p.polled[tok] = w
	*tokp = tok
	p.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT,
		Fd: int32(uint32(tok)), Pad: int32(uint32(tok >> 32))}
	var cerr error
	err := raw.Control(func(fd uintptr) {
		// Registered before: its registration is there, disarmed by its
		// one shot.
		cerr = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
		if cerr == syscall.ENOENT {
			cerr = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		}
	})
	if err != nil || cerr != nil {
		return !p.take(w) // taken already: the poller called it
	}
	return true
}

// take takes w out of the poller; false if it was not in it (it was
// called, or never added).
func (p *connPoller) take(w pollWaiter) bool {
	_, tokp := w.pollConn()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.polled[*tokp] != w {
		return false
	}
	delete(p.polled, *tokp)
	return true
}

// close stops the poller: every connection left in it is the caller's.
func (p *connPoller) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ep.Close() // run returns
}

// run calls the waiter of each connection that becomes readable, and
// the sweep about every sweepEvery, until close.
func (p *connPoller) run() {
	events := make([]syscall.EpollEvent, 256)
	nextSweep := time.Now().Add(sweepEvery)
	_ = p.ep.SetReadDeadline(nextSweep)
	for {
		n := 0
		err := p.rc.Read(func(fd uintptr) bool {
			var werr error
			n, werr = syscall.EpollWait(int(fd), events, 0)
			if werr != nil {
				n = 0
			}
			return n > 0 // else wait in Go's poller
		})
		switch {
		case err == nil:
		case os.IsTimeout(err):
		default:
			return // closed
		}
		for _, ev := range events[:n] {
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			p.mu.Lock()
			w := p.polled[tok]
			delete(p.polled, tok)
			p.mu.Unlock()
			if w != nil {
				w.readable()
			}
		}
		if now := time.Now(); !now.Before(nextSweep) {
			p.sweep()
			nextSweep = now.Add(sweepEvery)
			_ = p.ep.SetReadDeadline(nextSweep)
		}
	}
}
