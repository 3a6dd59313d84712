// Package memnet is an in-memory network for memberlist, with faults.
//
// It plays the part of memberlist's MockNetwork (every node gets a transport
// with its own address, all wired to each other inside the process) and adds
// what tests and simulations need to break things on purpose: partitions,
// packet loss, latency, crashed hosts and stalled peers, all decided by one
// seeded random source, plus per-node counters of what was sent so benchmarks
// can report the wire cost of a protocol.
//
// Model
//
//   - Packets (memberlist's UDP side) are best effort. A packet is dropped
//     silently when its sender or receiver is crashed or shut down, when the
//     two are on different sides of a partition, by the loss probability, or
//     when the receiver's queue is full (like a full socket buffer). A packet
//     delayed in flight is checked again on arrival, so one sent just before
//     a partition or crash is lost too.
//   - Streams (memberlist's TCP side) are reliable: a dial either fails at
//     once (crashed, partitioned, shut down, unknown address) or returns a
//     net.Pipe connection, which loses nothing. Loss does not apply to
//     streams; delay applies to connection set-up only. Partition and Crash
//     close the open streams they cut, so reads and writes on them fail,
//     including a write blocked mid-transfer.
//   - A stream has no buffer (net.Pipe): a write blocks until the other end
//     reads it. Deadlines work as on TCP: once SetDeadline, SetWriteDeadline
//     or SetReadDeadline passes, a blocked or later write or read fails with
//     an error that satisfies errors.Is(err, os.ErrDeadlineExceeded) and
//     net.Error's Timeout.
//   - One-way faults (BlockOneWay, SetOneWayLoss) act on one direction of a
//     link, as a stateful firewall or a bad transmit path would. A blocked
//     direction from→to drops from's packets to to and fails from's dials to
//     to; to's packets and dials to from still work, and the streams to
//     dials stay open both ways (a firewall lets established connections
//     through). One-way loss drops from's packets to to with its own
//     probability, on top of SetLoss; streams are not affected.
//   - A stalled node (Stall) accepts streams but never reads them: a dial to
//     it succeeds, but the stream is never handed to its memberlist, and
//     the streams it accepted before stop being read until Unstall (a
//     long-lived peer stream included), so the dialler's writes block until
//     their deadline. Its packets, both ways, and its own dials are
//     unaffected, so memberlist keeps it alive: a process that answers
//     pings but whose stream handling is stuck.
//   - Addresses look like "10.0.0.N:7946". They are map keys, never dialled
//     on a real network. A node keeps its address for the network's lifetime,
//     so a node restarted with NewTransport(name) comes back where it was.
//
// Determinism: the fault decisions come from the seeded source in the order
// packets are sent. Goroutine scheduling still varies that order between runs,
// so a seed makes a run's faults statistically, not bit-for-bit, repeatable.
//
// Concurrency: every method is safe for concurrent use. One mutex guards the
// network's state; it is never held while a packet is delivered, a stream is
// handed over or a connection is closed.

package memnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Errors returned by Network transports.
var (
	// ErrUnreachable is wrapped by a dial that fails because of a fault
	// (partition, crash) or because nothing is listening at the address.
	ErrUnreachable = errors.New("memnet: unreachable")
	// ErrTransportClosed is returned by a transport after its Shutdown.
	ErrTransportClosed = errors.New("memnet: transport shut down")
)

// memPacketQueue is the capacity of a transport's packet queue; packets
// arriving at a full queue are dropped like datagrams at a full socket.
const memPacketQueue = 4096

// memPort is the port of every Network address.
const memPort = 7946 // memberlist's (and cluster's) default gossip port

// NetStats counts what one node (or, from TotalStats, all nodes) sent.
type NetStats struct {
	// PacketsSent and PacketBytes count the packets the node handed to the
	// network and their bytes, delivered or not: the node's wire cost.
	PacketsSent uint64
	PacketBytes uint64
	// PacketsDropped counts the node's packets lost to a fault or a full
	// queue.
	PacketsDropped uint64
	// PacketsReceived counts the packets delivered to the node.
	PacketsReceived uint64
	// StreamsOpened counts the streams the node dialled successfully.
	StreamsOpened uint64
	// StreamsStalled counts those of them that went to a stalled node and
	// so are never read (see Stall).
	StreamsStalled uint64
	// StreamBytes counts the bytes the node wrote on streams, at either end.
	StreamBytes uint64
}

// BytesSent returns the node's packet and stream bytes together.
func (s NetStats) BytesSent() uint64 { return s.PacketBytes + s.StreamBytes }

func (s *NetStats) add(o NetStats) {
	s.PacketsSent += o.PacketsSent
	s.PacketBytes += o.PacketBytes
	s.PacketsDropped += o.PacketsDropped
	s.PacketsReceived += o.PacketsReceived
	s.StreamsOpened += o.StreamsOpened
	s.StreamsStalled += o.StreamsStalled
	s.StreamBytes += o.StreamBytes
}

// counters is the live, atomic form of NetStats for one node.
type counters struct {
	packetsSent, packetBytes, packetsDropped, packetsReceived atomic.Uint64
	streamsOpened, streamsStalled, streamBytes                atomic.Uint64
}

func (c *counters) snapshot() NetStats {
	return NetStats{
		PacketsSent:     c.packetsSent.Load(),
		PacketBytes:     c.packetBytes.Load(),
		PacketsDropped:  c.packetsDropped.Load(),
		PacketsReceived: c.packetsReceived.Load(),
		StreamsOpened:   c.streamsOpened.Load(),
		StreamsStalled:  c.streamsStalled.Load(),
		StreamBytes:     c.streamBytes.Load(),
	}
}

func (c *counters) reset() {
	for _, a := range []*atomic.Uint64{&c.packetsSent, &c.packetBytes, &c.packetsDropped, &c.packetsReceived, &c.streamsOpened, &c.streamsStalled, &c.streamBytes} {
		a.Store(0)
	}
}

// arc is an ordered pair of node names: the direction from → to.
type arc struct{ from, to string }

// link is an unordered pair of node names.
type link struct{ a, b string }

func makeLink(a, b string) link {
	if a > b {
		a, b = b, a
	}
	return link{a, b}
}

// Network is an in-memory network of memberlist transports with injectable
// faults. Create it with New; see the file comment for its model.
type Network struct {
	mu       sync.Mutex
	rng      *rand.Rand
	closed   bool
	hosts    int                      // host numbers handed out
	addrs    map[string]string        // node name → address, for good
	byAddr   map[string]*memTransport // address → current transport
	counters map[string]*counters     // node name → counters, for good
	cut      map[link]struct{}        // partitioned pairs
	blocked  map[arc]struct{}         // one-way blocked directions
	arcLoss  map[arc]float64          // one-way packet loss
	crashed  map[string]bool          // node name → crashed
	stalled  map[string]bool          // node name → stalled
	loss     float64                  // packet drop probability
	delayMin time.Duration            // packet and dial latency bounds
	delayMax time.Duration
	conns    map[*memConn]struct{}    // open stream ends
	timers   map[*time.Timer]struct{} // delayed packets in flight
}

// New returns an empty network whose faults draw on a random source
// seeded with seed.
func New(seed int64) *Network {
	return &Network{
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)),
		addrs:    make(map[string]string),
		byAddr:   make(map[string]*memTransport),
		counters: make(map[string]*counters),
		cut:      make(map[link]struct{}),
		blocked:  make(map[arc]struct{}),
		arcLoss:  make(map[arc]float64),
		crashed:  make(map[string]bool),
		stalled:  make(map[string]bool),
		conns:    make(map[*memConn]struct{}),
		timers:   make(map[*time.Timer]struct{}),
	}
}

// NewTransport returns a transport for the node called name, to pass as
// Config.Transport. The first transport of a name gets the next free address
// ("10.0.0.1:7946", "10.0.0.2:7946", …); a later one, after the previous one
// was shut down, gets the same address, which models a process restart. It
// panics if name already has an open transport or the network is shut down:
// both are bugs in the caller.
func (n *Network) NewTransport(name string) memberlist.NodeAwareTransport {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		panic("memnet: NewTransport on a shut down network")
	}
	addr, ok := n.addrs[name]
	if !ok {
		n.hosts++
		h := n.hosts
		ip := net.IPv4(10, byte(h>>16), byte(h>>8), byte(h))
		addr = net.JoinHostPort(ip.String(), strconv.Itoa(memPort))
		n.addrs[name] = addr
		n.counters[name] = new(counters)
	}
	if old := n.byAddr[addr]; old != nil && !old.closed {
		panic(fmt.Sprintf("memnet: node %q already has an open transport", name))
	}
	t := &memTransport{
		net:      n,
		name:     name,
		addr:     memAddr(addr),
		ctr:      n.counters[name],
		packetCh: make(chan *memberlist.Packet, memPacketQueue),
		streamCh: make(chan net.Conn, 16),
		done:     make(chan struct{}),
	}
	n.byAddr[addr] = t
	return t
}

// Addr returns the address of the node called name, or "" if it never had a
// transport.
func (n *Network) Addr(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addrs[name]
}

// Resolve is a Resolver that maps node names to their addresses: with
// Config.Resolver = n.Resolve, Join can list node names. Unknown names fail
// like an NXDOMAIN.
func (n *Network) Resolve(_ context.Context, host string) ([]string, error) {
	if a := n.Addr(host); a != "" {
		h, _, _ := net.SplitHostPort(a)
		return []string{h}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Partition cuts every link between a node of groupA and a node of groupB, in
// both directions, and closes the streams open across the cut. Links within a
// group, and to nodes in neither group, are untouched. Partitions add up
// until Heal.
func (n *Network) Partition(groupA, groupB []string) {
	n.mu.Lock()
	for _, a := range groupA {
		for _, b := range groupB {
			if a != b {
				n.cut[makeLink(a, b)] = struct{}{}
			}
		}
	}
	doomed := n.collectConnsLocked(func(c *memConn) bool {
		_, cut := n.cut[makeLink(c.owner, c.peer)]
		return cut
	})
	n.mu.Unlock()
	closeConns(doomed)
}

// Heal removes every partition and every one-way block. Crashed nodes stay
// crashed until Restart; one-way loss stays until SetOneWayLoss(…, 0).
func (n *Network) Heal() {
	n.mu.Lock()
	clear(n.cut)
	clear(n.blocked)
	n.mu.Unlock()
}

// BlockOneWay blocks the direction from → to for every node of from and
// every node of to: from's packets to to are dropped and from's dials to to
// fail, while to still reaches from (an asymmetric partition: to can talk
// to from, from cannot answer on a new connection). Streams that to dialled
// to from stay open and work both ways; streams that from dialled to to are
// closed. Blocks add up until Heal or UnblockOneWay.
func (n *Network) BlockOneWay(from, to []string) {
	n.mu.Lock()
	for _, a := range from {
		for _, b := range to {
			if a != b {
				n.blocked[arc{a, b}] = struct{}{}
			}
		}
	}
	doomed := n.collectConnsLocked(func(c *memConn) bool {
		// Both ends of every stream a blocked side dialled.
		if c.dialled {
			_, b := n.blocked[arc{c.owner, c.peer}]
			return b
		}
		_, b := n.blocked[arc{c.peer, c.owner}]
		return b
	})
	n.mu.Unlock()
	closeConns(doomed)
}

// UnblockOneWay lifts BlockOneWay(from, to).
func (n *Network) UnblockOneWay(from, to []string) {
	n.mu.Lock()
	for _, a := range from {
		for _, b := range to {
			delete(n.blocked, arc{a, b})
		}
	}
	n.mu.Unlock()
}

// SetOneWayLoss drops each packet that the node from sends to the node to
// with probability p (clamped to [0, 1]), on top of SetLoss; 0 removes it.
// The other direction and streams are not affected.
func (n *Network) SetOneWayLoss(from, to string, p float64) {
	n.mu.Lock()
	if p = min(max(p, 0), 1); p == 0 {
		delete(n.arcLoss, arc{from, to})
	} else {
		n.arcLoss[arc{from, to}] = p
	}
	n.mu.Unlock()
}

// SetLoss makes the network drop each packet with probability p (clamped to
// [0, 1]). Streams are not affected.
func (n *Network) SetLoss(p float64) {
	n.mu.Lock()
	n.loss = min(max(p, 0), 1)
	n.mu.Unlock()
}

// SetDelay delays each packet, and the set-up of each stream, by a uniformly
// random duration in [lo, hi]. Zero values remove the delay. A negative lo
// counts as 0 and hi below lo as lo.
func (n *Network) SetDelay(lo, hi time.Duration) {
	lo = max(lo, 0)
	n.mu.Lock()
	n.delayMin, n.delayMax = lo, max(hi, lo)
	n.mu.Unlock()
}

// Crash takes the node called name off the network, as if its host lost
// power: from now on its packets and those sent to it are dropped, dials to
// and from it fail, and its open streams are closed. The node's process (its
// memberlist) keeps running, unaware. Restart puts it back.
func (n *Network) Crash(name string) {
	n.mu.Lock()
	n.crashed[name] = true
	doomed := n.collectConnsLocked(func(c *memConn) bool { return c.owner == name || c.peer == name })
	n.mu.Unlock()
	closeConns(doomed)
}

// Stall makes the node called name a peer that accepts streams but never
// reads them: from now on a dial to it succeeds, but the stream is never
// handed to the node, so whatever is written to it blocks until the
// writer's deadline (or until Unstall, Crash or Shutdown closes it); the
// streams it accepted before are no longer read either, until Unstall (a
// peer's long-lived stream blocks as a new one would). Packets to and from
// the node and its own dials are unaffected, so its memberlist keeps
// answering probes and peers keep it alive. Unstall ends it; a stall
// survives Crash, Restart and a new transport for the name.
func (n *Network) Stall(name string) {
	n.mu.Lock()
	n.stalled[name] = true
	n.mu.Unlock()
}

// isStalled reports whether the node called name is stalled.
func (n *Network) isStalled(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stalled[name]
}

// Unstall ends a Stall of the node called name: streams dialled to it from
// now on reach it again. The streams it accepted while stalled were never
// read and never will be: they are closed, so their writers fail at once if
// still writing.
func (n *Network) Unstall(name string) {
	n.mu.Lock()
	delete(n.stalled, name)
	doomed := n.collectConnsLocked(func(c *memConn) bool { return c.unread && c.owner == name })
	n.mu.Unlock()
	closeConns(doomed)
}

// Restart puts a crashed node back on the network, at the same address. Its
// memberlist resumes where it was: peers that declared it dead see it refute
// and rejoin. To model a fresh process instead, shut down its Membership, then
// call NewTransport(name) again and start a new one.
func (n *Network) Restart(name string) {
	n.mu.Lock()
	delete(n.crashed, name)
	n.mu.Unlock()
}

// Stats returns what the node called name has sent since the network was
// created or ResetStats was called, across restarts.
func (n *Network) Stats(name string) NetStats {
	n.mu.Lock()
	c := n.counters[name]
	n.mu.Unlock()
	if c == nil {
		return NetStats{}
	}
	return c.snapshot()
}

// TotalStats returns the sum of every node's Stats.
func (n *Network) TotalStats() NetStats {
	n.mu.Lock()
	cs := make([]*counters, 0, len(n.counters))
	for _, c := range n.counters {
		cs = append(cs, c)
	}
	n.mu.Unlock()
	var s NetStats
	for _, c := range cs {
		s.add(c.snapshot())
	}
	return s
}

// ResetStats sets every node's counters to zero, for example after a warm-up.
func (n *Network) ResetStats() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.counters {
		c.reset()
	}
}

// Shutdown shuts down every transport, closes every stream and drops the
// packets still in flight. It starts no goroutine and leaves none behind. It
// is idempotent; afterwards NewTransport panics.
func (n *Network) Shutdown() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	for tm := range n.timers {
		tm.Stop()
	}
	clear(n.timers)
	var ts []*memTransport
	for _, t := range n.byAddr {
		ts = append(ts, t)
	}
	n.mu.Unlock()
	for _, t := range ts {
		_ = t.Shutdown()
	}
}

// delayLocked draws a latency from the configured bounds. n.mu must be held.
func (n *Network) delayLocked() time.Duration {
	if n.delayMax <= 0 {
		return 0
	}
	if n.delayMax == n.delayMin {
		return n.delayMin
	}
	return n.delayMin + time.Duration(n.rng.Int64N(int64(n.delayMax-n.delayMin)+1))
}

// reachableLocked returns the open transport at addr if from may reach it now,
// or the reason it may not. n.mu must be held.
func (n *Network) reachableLocked(from *memTransport, addr string) (*memTransport, string) {
	switch {
	case n.closed:
		return nil, "network shut down"
	case from.closed:
		return nil, "sender shut down"
	case n.crashed[from.name]:
		return nil, "sender crashed"
	}
	to := n.byAddr[addr]
	switch {
	case to == nil:
		return nil, "no host"
	case to.closed:
		return nil, "connection refused"
	case n.crashed[to.name]:
		return nil, "host crashed"
	}
	if _, cut := n.cut[makeLink(from.name, to.name)]; cut {
		return nil, "partitioned"
	}
	if _, blocked := n.blocked[arc{from.name, to.name}]; blocked {
		return nil, "blocked one way"
	}
	return to, ""
}

// sendPacket routes one packet from t to addr, now or after a delay.
func (n *Network) sendPacket(from *memTransport, addr string, b []byte) {
	from.ctr.packetsSent.Add(1)
	from.ctr.packetBytes.Add(uint64(len(b)))
	// Copy: the caller may reuse b, and a real network would have copied it.
	pkt := &memberlist.Packet{Buf: append([]byte(nil), b...), From: from.addr}

	n.mu.Lock()
	to, why := n.reachableLocked(from, addr)
	if why == "" && n.loss > 0 && n.rng.Float64() < n.loss {
		why = "lost"
	}
	if why == "" {
		if p := n.arcLoss[arc{from.name, to.name}]; p > 0 && n.rng.Float64() < p {
			why = "lost one way"
		}
	}
	if why != "" {
		n.mu.Unlock()
		from.ctr.packetsDropped.Add(1)
		return
	}
	d := n.delayLocked()
	if d > 0 {
		// The callback takes n.mu first, so it cannot run before tm is
		// registered below.
		var tm *time.Timer
		tm = time.AfterFunc(d, func() {
			n.mu.Lock()
			delete(n.timers, tm)
			to, why := n.reachableLocked(from, addr)
			n.mu.Unlock()
			if why != "" {
				from.ctr.packetsDropped.Add(1)
				return
			}
			to.deliver(from, pkt)
		})
		n.timers[tm] = struct{}{}
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	to.deliver(from, pkt)
}

// dial opens a stream from t to addr and hands the far end to its listener.
func (n *Network) dial(from *memTransport, addr string, timeout time.Duration) (net.Conn, error) {
	n.mu.Lock()
	to, why := n.reachableLocked(from, addr)
	if why != "" {
		closed := from.closed
		n.mu.Unlock()
		if closed {
			return nil, ErrTransportClosed
		}
		return nil, fmt.Errorf("%w: dial %s: %s", ErrUnreachable, addr, why)
	}
	d := n.delayLocked()
	p1, p2 := net.Pipe()
	near := &memConn{Conn: p1, net: n, owner: from.name, peer: to.name, local: from.addr, remote: to.addr, ctr: from.ctr,
		dialled: true, closed: make(chan struct{})}
	far := &memConn{Conn: p2, net: n, owner: to.name, peer: from.name, local: to.addr, remote: from.addr, ctr: to.ctr,
		closed: make(chan struct{})}
	n.conns[near] = struct{}{}
	n.conns[far] = struct{}{}
	n.mu.Unlock()

	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	fail := func(err error) (net.Conn, error) {
		_ = near.Close()
		_ = far.Close()
		return nil, err
	}
	if d > 0 {
		wait := time.NewTimer(d)
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-expire:
			return fail(fmt.Errorf("%w: dial %s: i/o timeout", ErrUnreachable, addr))
		case <-from.done:
			return fail(ErrTransportClosed)
		}
		// Faults may have struck while the connection was being set up.
		n.mu.Lock()
		_, why = n.reachableLocked(from, addr)
		n.mu.Unlock()
		if why != "" {
			return fail(fmt.Errorf("%w: dial %s: %s", ErrUnreachable, addr, why))
		}
	}
	n.mu.Lock()
	stalled := n.stalled[to.name]
	if stalled {
		far.unread = true // left open, and tracked, until Unstall
	}
	n.mu.Unlock()
	if stalled {
		from.ctr.streamsOpened.Add(1)
		from.ctr.streamsStalled.Add(1)
		return near, nil
	}
	select {
	case to.streamCh <- far:
		from.ctr.streamsOpened.Add(1)
		return near, nil
	case <-to.done:
		return fail(fmt.Errorf("%w: dial %s: connection refused", ErrUnreachable, addr))
	case <-from.done:
		return fail(ErrTransportClosed)
	case <-expire:
		return fail(fmt.Errorf("%w: dial %s: i/o timeout", ErrUnreachable, addr))
	}
}

// collectConnsLocked removes from tracking, and returns, the open stream ends
// for which doomed is true. n.mu must be held; close them after unlocking.
func (n *Network) collectConnsLocked(doomed func(*memConn) bool) []*memConn {
	var out []*memConn
	for c := range n.conns {
		if doomed(c) {
			delete(n.conns, c)
			out = append(out, c)
		}
	}
	return out
}

func closeConns(cs []*memConn) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// memAddr is a Network address, "10.0.0.N:7946".
type memAddr string

// Network returns "memnet".
func (a memAddr) Network() string { return "memnet" }

// String returns the address as "host:port".
func (a memAddr) String() string { return string(a) }

// memTransport is one node's attachment to a Network.
type memTransport struct {
	net      *Network
	name     string
	addr     memAddr
	ctr      *counters
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	done     chan struct{} // closed by Shutdown
	closed   bool          // guarded by net.mu
}

var _ memberlist.NodeAwareTransport = (*memTransport)(nil)

// FinalAdvertiseAddr returns the transport's own address, whatever is asked:
// an in-memory node has exactly one.
func (t *memTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	host, port, err := net.SplitHostPort(string(t.addr))
	if err != nil {
		return nil, 0, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, 0, err
	}
	return net.ParseIP(host), p, nil
}

// WriteTo sends a best-effort packet to addr.
func (t *memTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress sends a best-effort packet to a.Addr (the node name is not
// needed: addresses are unique). Like UDP it reports no delivery failure;
// it fails only once the transport is shut down.
func (t *memTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.isClosed() {
		return time.Time{}, ErrTransportClosed
	}
	now := time.Now()
	t.net.sendPacket(t, a.Addr, b)
	return now, nil
}

// PacketCh returns the packets delivered to this node.
func (t *memTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// DialTimeout opens a reliable stream to addr.
func (t *memTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.net.dial(t, addr, timeout)
}

// DialAddressTimeout opens a reliable stream to a.Addr.
func (t *memTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.net.dial(t, a.Addr, timeout)
}

// StreamCh returns the streams other nodes opened to this one.
func (t *memTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown detaches the transport: its streams are closed, packets to it are
// dropped and dials to it refused. It is idempotent.
func (t *memTransport) Shutdown() error {
	n := t.net
	n.mu.Lock()
	if t.closed {
		n.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.done)
	// Only one transport of a name is open at a time, so the name picks
	// exactly this transport's streams.
	doomed := n.collectConnsLocked(func(c *memConn) bool { return c.owner == t.name || c.peer == t.name })
	n.mu.Unlock()
	closeConns(doomed)
	return nil
}

func (t *memTransport) isClosed() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// deliver queues pkt at t, or drops it when t's queue is full.
func (t *memTransport) deliver(from *memTransport, pkt *memberlist.Packet) {
	pkt.Timestamp = time.Now()
	select {
	case t.packetCh <- pkt:
		t.ctr.packetsReceived.Add(1)
	default:
		from.ctr.packetsDropped.Add(1)
	}
}

// memConn is one end of an in-memory stream. It reports Network addresses
// and counts the bytes its owner writes. Reads, writes and deadlines are
// net.Pipe's.
type memConn struct {
	net.Conn
	net           *Network
	owner, peer   string // node names of this end and the other
	local, remote memAddr
	ctr           *counters
	once          sync.Once
	closed        chan struct{} // closed by Close
	unread        bool          // accepted by a stalled owner, never delivered; guarded by net.mu
	dialled       bool          // this end dialled (owner is the dialler)
}

// stallPoll is how often a read on a stalled node's stream looks again.
const stallPoll = 5 * time.Millisecond

// Read reads from the stream; on an accepted end whose owner is stalled it
// first waits, without reading, until the stall ends or the end is closed.
func (c *memConn) Read(b []byte) (int, error) {
	for !c.dialled && c.net.isStalled(c.owner) {
		select {
		case <-c.closed:
			return 0, io.ErrClosedPipe
		case <-time.After(stallPoll):
		}
	}
	return c.Conn.Read(b)
}

// Write writes to the stream and counts the bytes for the owner.
func (c *memConn) Write(b []byte) (int, error) {
	k, err := c.Conn.Write(b)
	c.ctr.streamBytes.Add(uint64(k))
	return k, err
}

// Close closes this end; the other end's reads then fail with io.EOF.
func (c *memConn) Close() error {
	c.once.Do(func() {
		c.net.mu.Lock()
		delete(c.net.conns, c)
		c.net.mu.Unlock()
		close(c.closed)
	})
	return c.Conn.Close()
}

// LocalAddr returns the owner's Network address.
func (c *memConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's Network address.
func (c *memConn) RemoteAddr() net.Addr { return c.remote }
