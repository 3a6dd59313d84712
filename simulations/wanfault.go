package simulations

// A WAN that is slow or lossy rather than cut: a TCP proxy that the
// scenarios put behind a wanLink (the link forwards to it, it forwards to
// the region's nodes), which delays what crosses it and, now and then,
// holds a chunk back for a while (a lost segment waiting for its
// retransmission) or resets the connection (a path that died mid-answer).
// wanLink's Cut and Heal keep working in front of it.

import (
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// wanDegrade is how a wanFault degrades what crosses it, per chunk (one
// read of the proxy, in either direction): every chunk is delayed by a
// seeded duration in [DelayLo, DelayHi] (one way; chunks keep their order,
// so the delay is a latency, not a cap on throughput); with probability
// StallP it is held back for [StallLo, StallHi] more (and the chunks behind
// it with it); with probability ResetP the connection is closed before it
// is delivered. The zero value lets everything through at once.
type wanDegrade struct {
	DelayLo, DelayHi time.Duration
	StallP           float64
	StallLo, StallHi time.Duration
	ResetP           float64
}

// on reports whether d degrades anything.
func (d wanDegrade) on() bool {
	return d.DelayHi > 0 || d.StallP > 0 || d.ResetP > 0
}

// wanFault is the degrading proxy in front of one region's nodes (each
// connection goes to the next node in turn). Its decisions come from a
// generator seeded by the run's seed, drawn in the order the chunks
// arrive. Its methods are safe for concurrent use.
type wanFault struct {
	ln net.Listener

	mu      sync.Mutex
	rng     *rand.Rand
	deg     wanDegrade
	targets []string
	next    int
	closed  bool
	conns   map[net.Conn]struct{}

	wg sync.WaitGroup
	// chunks counts the chunks that crossed while degraded, stalls those
	// held back, resets the connections closed on purpose.
	chunks, stalls, resets atomic.Int64
}

// newWANFault listens on a free loopback port and forwards to targets.
func newWANFault(seed int64, targets []string) (*wanFault, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &wanFault{ln: ln, rng: rand.New(rand.NewPCG(uint64(seed), 0x77616e)), targets: append([]string(nil), targets...),
		conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the proxy's host:port.
func (f *wanFault) Addr() string { return f.ln.Addr().String() }

// Degrade sets how the proxy degrades what crosses it from now on (the
// zero wanDegrade: not at all).
func (f *wanFault) Degrade(d wanDegrade) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deg = d
}

// Close stops the proxy and waits for its goroutines.
func (f *wanFault) Close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	_ = f.ln.Close()
	f.wg.Wait()
}

func (f *wanFault) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		f.wg.Add(1)
		go f.forward(c)
	}
}

func (f *wanFault) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *wanFault) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.conns, c)
		_ = c.Close()
	}
}

// between draws a duration in [lo, hi]; f.mu must be held.
func (f *wanFault) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(f.rng.Int64N(int64(hi-lo)+1))
}

// chunkFate decides one chunk's delay (delay and stall) and whether the
// connection is reset instead of delivering it.
func (f *wanFault) chunkFate() (hold time.Duration, reset bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.deg
	if !d.on() {
		return 0, false
	}
	f.chunks.Add(1)
	if d.ResetP > 0 && f.rng.Float64() < d.ResetP {
		f.resets.Add(1)
		return 0, true
	}
	hold = f.between(d.DelayLo, d.DelayHi)
	if d.StallP > 0 && f.rng.Float64() < d.StallP {
		f.stalls.Add(1)
		hold += f.between(d.StallLo, d.StallHi)
	}
	return hold, false
}

func (f *wanFault) forward(c net.Conn) {
	defer f.wg.Done()
	if !f.track(c) {
		return
	}
	f.mu.Lock()
	var target string
	if len(f.targets) > 0 {
		target = f.targets[f.next%len(f.targets)]
		f.next++
	}
	f.mu.Unlock()
	if target == "" {
		f.untrack(c)
		return
	}
	up, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		f.untrack(c)
		return
	}
	if !f.track(up) {
		f.untrack(c)
		return
	}
	done := make(chan struct{}, 2)
	go func() { f.pipe(up, c); done <- struct{}{} }()
	go func() { f.pipe(c, up); done <- struct{}{} }()
	<-done
	f.untrack(c, up) // unblocks the other direction
	<-done
}

// chunk is one read of a direction, due for delivery at due (reset: close
// the connection instead).
type chunk struct {
	b     []byte
	due   time.Time
	reset bool
}

// pipe copies src to dst through a delay line: a reader stamps every chunk
// with its due time (never before the previous chunk's: order is kept, a
// stall holds back what follows), a writer delivers it then.
func (f *wanFault) pipe(dst, src net.Conn) {
	line := make(chan chunk, 64)
	go func() {
		defer close(line)
		var last time.Time
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				hold, reset := f.chunkFate()
				due := time.Now().Add(hold)
				if due.Before(last) {
					due = last
				}
				last = due
				line <- chunk{b: buf[:n], due: due, reset: reset}
				if reset {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range line {
		if ch.reset {
			_ = src.Close()
			_ = dst.Close()
			break
		}
		if d := time.Until(ch.due); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(ch.b); err != nil {
			_ = src.Close() // the reader stops too
			break
		}
	}
	for range line { // let the reader end
	}
}
