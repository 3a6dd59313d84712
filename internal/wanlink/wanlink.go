// Package wanlink is a TCP proxy that stands for a WAN link between two
// datacenters in tests and benchmarks: it forwards every connection to
// one target, counts the bytes of each direction, and can be cut (every
// connection closed, new ones refused) and healed.
package wanlink

import (
	"net"
	"sync"
	"sync/atomic"
)

// Proxy is one link. Down counts the bytes from the target to the
// clients (what a follower receives over the WAN), Up the other way.
type Proxy struct {
	Down, Up atomic.Int64

	ln      net.Listener
	target  string
	blocked atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

// Listen starts a proxy to target on a free loopback port.
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.blocked.Load() {
			c.Close()
			continue
		}
		t, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, t)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.copy(t, c, &p.Up)
		go p.copy(c, t, &p.Down)
	}
}

func (p *Proxy) copy(dst, src net.Conn, n *atomic.Int64) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			n.Add(int64(k))
			if _, werr := dst.Write(buf[:k]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// Cut closes every connection and refuses new ones until Heal.
func (p *Proxy) Cut() {
	p.blocked.Store(true)
	p.closeConns()
}

// Heal accepts connections again.
func (p *Proxy) Heal() { p.blocked.Store(false) }

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() {
	p.ln.Close()
	p.closeConns()
	p.wg.Wait()
}

func (p *Proxy) closeConns() {
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
}
