package simulations

// The WAN between simulated datacenters: one TCP proxy on loopback per
// direction, which the scenario can cut and heal.

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// wanLink is one direction of the WAN between two simulated datacenters:
// a TCP proxy on loopback that the nodes of one datacenter are given as
// the other's remote-region URL, like a load balancer in front of that
// datacenter's nodes (each connection goes to the next node in turn). Cut
// breaks the open connections (pulls and change streams) and closes every
// new one at once, as a dead link does to HTTP; Heal lets connections
// through again. Its methods are safe for concurrent use.
type wanLink struct {
	ln net.Listener

	mu      sync.Mutex
	targets []string // host:port of the remote datacenter's nodes
	next    int
	down    bool
	closed  bool
	conns   map[net.Conn]struct{}

	wg sync.WaitGroup
	// bytes counts what crossed, both ways; refused counts connections
	// closed because the link was cut.
	bytes, refused atomic.Int64
}

// newWANLink listens on a free loopback port and starts accepting.
func newWANLink() (*wanLink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &wanLink{ln: ln, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// URL is the Eureka base URL the other datacenter's nodes reach through l.
func (l *wanLink) URL() string { return "http://" + l.ln.Addr().String() + "/eureka/" }

// SetTargets sets the addresses (host:port) the link forwards to.
func (l *wanLink) SetTargets(addrs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.targets = append([]string(nil), addrs...)
}

// Cut breaks the link: open connections are closed, new ones refused.
func (l *wanLink) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for c := range l.conns {
		_ = c.Close()
	}
}

// Heal lets connections through again.
func (l *wanLink) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}

// Close stops the link and waits for its goroutines.
func (l *wanLink) Close() {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	_ = l.ln.Close()
	l.wg.Wait()
}

func (l *wanLink) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.wg.Add(1)
		go l.forward(c)
	}
}

// track registers c as open; false when the link is cut or closed (c is
// then closed).
func (l *wanLink) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down || l.closed {
		_ = c.Close()
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *wanLink) untrack(cs ...net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cs {
		delete(l.conns, c)
		_ = c.Close()
	}
}

// forward joins the accepted connection c to the next target.
func (l *wanLink) forward(c net.Conn) {
	defer l.wg.Done()
	l.mu.Lock()
	var target string
	if len(l.targets) > 0 {
		target = l.targets[l.next%len(l.targets)]
		l.next++
	}
	l.mu.Unlock()
	if !l.track(c) {
		l.refused.Add(1)
		return
	}
	if target == "" {
		l.untrack(c)
		return
	}
	up, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		l.untrack(c)
		return
	}
	if !l.track(up) {
		l.refused.Add(1)
		l.untrack(c)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(countingWriter{dst, &l.bytes}, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	l.untrack(c, up) // unblocks the other copy
	<-done
}

// countingWriter counts what it writes as it goes (a stream's bytes count
// before its connection closes).
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
