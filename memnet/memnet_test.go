package memnet

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recvPacket waits for one packet on tr.
func recvPacket(t *testing.T, tr memberlist.Transport) *memberlist.Packet {
	t.Helper()
	select {
	case p := <-tr.PacketCh():
		return p
	case <-time.After(5 * time.Second):
		require.FailNow(t, "no packet arrived")
		return nil
	}
}

// requireNoPacket checks that nothing is queued at tr. Undelayed packets are
// queued synchronously by WriteTo, so there is nothing to wait for.
func requireNoPacket(t *testing.T, tr memberlist.Transport) {
	t.Helper()
	select {
	case p := <-tr.PacketCh():
		require.FailNow(t, "unexpected packet", "%q from %s", p.Buf, p.From)
	default:
	}
}

// acceptStream waits for one incoming stream on tr.
func acceptStream(t *testing.T, tr memberlist.Transport) net.Conn {
	t.Helper()
	select {
	case c := <-tr.StreamCh():
		return c
	case <-time.After(5 * time.Second):
		require.FailNow(t, "no stream arrived")
		return nil
	}
}

func newNet(t *testing.T, names ...string) (*Network, map[string]memberlist.NodeAwareTransport) {
	n := New(1)
	t.Cleanup(n.Shutdown)
	ts := make(map[string]memberlist.NodeAwareTransport)
	for _, name := range names {
		ts[name] = n.NewTransport(name)
	}
	return n, ts
}

func TestMemNetworkAddressesAndPackets(t *testing.T) {
	n, ts := newNet(t, "a", "b")
	a, b := ts["a"], ts["b"]
	assert.Equal(t, "10.0.0.1:7946", n.Addr("a"))
	assert.Equal(t, "10.0.0.2:7946", n.Addr("b"))
	assert.Empty(t, n.Addr("nobody"))

	ip, port, err := a.FinalAdvertiseAddr("1.2.3.4", 99)
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1", ip.String())
	assert.Equal(t, 7946, port)

	buf := []byte("hello")
	_, err = a.WriteToAddress(buf, memberlist.Address{Addr: n.Addr("b"), Name: "b"})
	require.NoError(t, err)
	buf[0] = 'X' // the network copied it
	p := recvPacket(t, b)
	assert.Equal(t, "hello", string(p.Buf))
	assert.Equal(t, "10.0.0.1:7946", p.From.String())
	assert.False(t, p.Timestamp.IsZero())

	// To an unknown address: silently lost, like UDP.
	_, err = a.WriteTo([]byte("x"), "10.9.9.9:7946")
	require.NoError(t, err)

	sa := n.Stats("a")
	assert.Equal(t, uint64(2), sa.PacketsSent)
	assert.Equal(t, uint64(6), sa.PacketBytes)
	assert.Equal(t, uint64(1), sa.PacketsDropped)
	assert.Equal(t, uint64(1), n.Stats("b").PacketsReceived)
	assert.Equal(t, uint64(2), n.TotalStats().PacketsSent)
	n.ResetStats()
	assert.Equal(t, NetStats{}, n.TotalStats())

	addrs, err := n.Resolve(context.Background(), "b")
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.2"}, addrs)
	_, err = n.Resolve(context.Background(), "nobody")
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	assert.True(t, dnsErr.IsNotFound)
}

func TestMemNetworkStreams(t *testing.T) {
	n, ts := newNet(t, "a", "b")
	a, b := ts["a"], ts["b"]

	c, err := a.DialAddressTimeout(memberlist.Address{Addr: n.Addr("b"), Name: "b"}, time.Second)
	require.NoError(t, err)
	s := acceptStream(t, b)
	assert.Equal(t, n.Addr("a"), c.LocalAddr().String())
	assert.Equal(t, n.Addr("b"), c.RemoteAddr().String())
	assert.Equal(t, n.Addr("a"), s.RemoteAddr().String())

	wrote := make(chan error, 1)
	go func() { _, err := c.Write([]byte("ping")); wrote <- err }()
	got := make([]byte, 4)
	_, err = io.ReadFull(s, got)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(got))
	require.NoError(t, <-wrote)

	require.NoError(t, c.Close())
	_, err = s.Read(got)
	assert.ErrorIs(t, err, io.EOF)
	require.NoError(t, s.Close())

	assert.Equal(t, uint64(1), n.Stats("a").StreamsOpened)
	assert.Equal(t, uint64(4), n.Stats("a").StreamBytes)
	assert.Equal(t, uint64(4), n.Stats("a").BytesSent())

	_, err = a.DialTimeout("10.9.9.9:7946", time.Second)
	assert.ErrorIs(t, err, ErrUnreachable)
}

func TestMemNetworkPartitionAndHeal(t *testing.T) {
	n, ts := newNet(t, "a", "b", "c")
	a, b, c := ts["a"], ts["b"], ts["c"]

	open, err := a.DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	far := acceptStream(t, b)

	n.Partition([]string{"a"}, []string{"b"})

	// The open stream across the cut is closed at both ends.
	_, err = open.Write([]byte("x"))
	assert.Error(t, err)
	_, err = far.Read(make([]byte, 1))
	assert.Error(t, err)

	// Both directions are cut, for packets and new streams.
	_, _ = a.WriteTo([]byte("x"), n.Addr("b"))
	_, _ = b.WriteTo([]byte("x"), n.Addr("a"))
	requireNoPacket(t, a)
	requireNoPacket(t, b)
	_, err = a.DialTimeout(n.Addr("b"), time.Second)
	assert.ErrorIs(t, err, ErrUnreachable)
	_, err = b.DialTimeout(n.Addr("a"), time.Second)
	assert.ErrorIs(t, err, ErrUnreachable)

	// Links to a node in neither group still work.
	_, _ = a.WriteTo([]byte("to c"), n.Addr("c"))
	assert.Equal(t, "to c", string(recvPacket(t, c).Buf))
	_, _ = b.WriteTo([]byte("to c"), n.Addr("c"))
	assert.Equal(t, "to c", string(recvPacket(t, c).Buf))

	n.Heal()
	_, _ = a.WriteTo([]byte("healed"), n.Addr("b"))
	assert.Equal(t, "healed", string(recvPacket(t, b).Buf))
	conn, err := a.DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.NoError(t, acceptStream(t, b).Close())
}

func TestMemNetworkCrashAndRestart(t *testing.T) {
	n, ts := newNet(t, "a", "b")
	a, b := ts["a"], ts["b"]

	open, err := a.DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	far := acceptStream(t, b)

	n.Crash("b")
	_, err = open.Read(make([]byte, 1))
	assert.Error(t, err, "streams of a crashed node fail")
	_, err = far.Write([]byte("x"))
	assert.Error(t, err)

	_, _ = a.WriteTo([]byte("x"), n.Addr("b"))
	_, _ = b.WriteTo([]byte("x"), n.Addr("a"))
	requireNoPacket(t, a)
	requireNoPacket(t, b)
	_, err = a.DialTimeout(n.Addr("b"), time.Second)
	assert.ErrorIs(t, err, ErrUnreachable)
	_, err = b.DialTimeout(n.Addr("a"), time.Second)
	assert.ErrorIs(t, err, ErrUnreachable)

	n.Heal() // does not undo a crash
	_, _ = a.WriteTo([]byte("x"), n.Addr("b"))
	requireNoPacket(t, b)

	n.Restart("b")
	_, _ = a.WriteTo([]byte("back"), n.Addr("b"))
	assert.Equal(t, "back", string(recvPacket(t, b).Buf))
}

func TestMemNetworkLossIsSeeded(t *testing.T) {
	dropped := func(seed int64) uint64 {
		n := New(seed)
		defer n.Shutdown()
		a, b := n.NewTransport("a"), n.NewTransport("b")
		n.SetLoss(0.3)
		for range 1000 {
			_, _ = a.WriteTo([]byte("x"), n.Addr("b"))
			select {
			case <-b.PacketCh():
			default:
			}
		}
		return n.Stats("a").PacketsDropped
	}
	d := dropped(7)
	assert.InDelta(t, 300, d, 60)
	assert.Equal(t, d, dropped(7), "same seed, same sends: same losses")

	n, ts := newNet(t, "a", "b")
	n.SetLoss(2) // clamped to 1
	for range 10 {
		_, _ = ts["a"].WriteTo([]byte("x"), n.Addr("b"))
	}
	requireNoPacket(t, ts["b"])
	n.SetLoss(0)
	_, _ = ts["a"].WriteTo([]byte("x"), n.Addr("b"))
	recvPacket(t, ts["b"])
}

func TestMemNetworkDelay(t *testing.T) {
	n, ts := newNet(t, "a", "b")
	a, b := ts["a"], ts["b"]
	n.SetDelay(30*time.Millisecond, 60*time.Millisecond)

	start := time.Now()
	_, _ = a.WriteTo([]byte("late"), n.Addr("b"))
	p := recvPacket(t, b)
	assert.GreaterOrEqual(t, p.Timestamp.Sub(start), 30*time.Millisecond)

	start = time.Now()
	c, err := a.DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	require.NoError(t, c.Close())
	require.NoError(t, acceptStream(t, b).Close())

	// A packet in flight when its receiver crashes is lost.
	_, _ = a.WriteTo([]byte("doomed"), n.Addr("b"))
	n.Crash("b")
	require.Eventually(t, func() bool { return n.Stats("a").PacketsDropped == 1 }, 5*time.Second, 5*time.Millisecond)
	requireNoPacket(t, b)

	// A dial whose set-up outlasts its timeout fails.
	n.Restart("b")
	n.SetDelay(time.Second, time.Second)
	_, err = a.DialTimeout(n.Addr("b"), 10*time.Millisecond)
	assert.ErrorIs(t, err, ErrUnreachable)

	// Delayed packets still in flight at Shutdown are dropped, and their
	// timers stopped (goleak checks in TestMain).
	_, _ = a.WriteTo([]byte("never"), n.Addr("b"))
	n.SetDelay(0, 0)
}

func TestMemNetworkFullQueueDrops(t *testing.T) {
	n, ts := newNet(t, "a", "b")
	for range memPacketQueue + 3 {
		_, _ = ts["a"].WriteTo([]byte("x"), n.Addr("b"))
	}
	assert.Equal(t, uint64(3), n.Stats("a").PacketsDropped)
	assert.Equal(t, uint64(memPacketQueue), n.Stats("b").PacketsReceived)
}

func TestMemNetworkTransportRestart(t *testing.T) {
	n, ts := newNet(t, "a", "b")
	a, b := ts["a"], ts["b"]
	assert.Panics(t, func() { n.NewTransport("b") }, "b's transport is still open")

	open, err := a.DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	_ = acceptStream(t, b)

	require.NoError(t, b.Shutdown())
	require.NoError(t, b.Shutdown(), "idempotent")
	_, err = open.Read(make([]byte, 1))
	assert.Error(t, err, "streams closed with the transport")
	_, err = a.DialTimeout(n.Addr("b"), time.Second)
	assert.ErrorIs(t, err, ErrUnreachable)
	_, err = b.WriteTo([]byte("x"), n.Addr("a"))
	assert.ErrorIs(t, err, ErrTransportClosed)
	_, err = b.DialTimeout(n.Addr("a"), time.Second)
	assert.ErrorIs(t, err, ErrTransportClosed)

	b2 := n.NewTransport("b")
	ip, _, err := b2.FinalAdvertiseAddr("", 0)
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.2", ip.String(), "a restarted node keeps its address")
	_, _ = a.WriteTo([]byte("again"), n.Addr("b"))
	assert.Equal(t, "again", string(recvPacket(t, b2).Buf))
	assert.Equal(t, uint64(1), n.Stats("b").PacketsReceived, "counters survive restarts")

	n.Shutdown()
	n.Shutdown()
	assert.Panics(t, func() { n.NewTransport("c") })
	_, err = a.WriteTo([]byte("x"), n.Addr("b"))
	assert.ErrorIs(t, err, ErrTransportClosed)
}

// TestMemNetworkConcurrentUse runs traffic while faults flip, for -race.
func TestMemNetworkConcurrentUse(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	n, ts := newNet(t, names...)
	n.SetDelay(0, time.Millisecond)
	n.SetLoss(0.1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, from := range names {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				to := names[i%len(names)]
				_, _ = ts[from].WriteTo([]byte(from), n.Addr(to))
				if c, err := ts[from].DialTimeout(n.Addr(to), 10*time.Millisecond); err == nil {
					_ = c.Close()
				}
			}
		})
		wg.Go(func() { // drain
			for {
				select {
				case <-stop:
					return
				case <-ts[from].PacketCh():
				case c := <-ts[from].StreamCh():
					_ = c.Close()
				}
			}
		})
	}
	for i := 0; i < 50 || n.TotalStats().PacketsSent < 2000; i++ {
		n.Partition(names[:2], names[2:])
		n.Crash(names[i%4])
		n.Heal()
		n.Restart(names[i%4])
		_ = n.TotalStats()
	}
	close(stop)
	wg.Wait()
	assert.NotZero(t, n.TotalStats().PacketsSent)
}

// requireTimeout checks that err is a deadline error, as from a TCP conn.
func requireTimeout(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
}

// TestMemNetworkConnDeadlines: stream ends honour read, write and combined
// deadlines like TCP conns, and clearing a deadline unblocks them again.
func TestMemNetworkConnDeadlines(t *testing.T) {
	n, ts := newNet(t, "a", "b")
	c, err := ts["a"].DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	s := acceptStream(t, ts["b"])

	// Nobody writes: a read blocks until its deadline.
	require.NoError(t, s.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = s.Read(make([]byte, 1))
	requireTimeout(t, err)

	// Nobody reads: a write blocks until its deadline.
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
	k, err := c.Write([]byte("unread"))
	requireTimeout(t, err)
	assert.Zero(t, k)

	// SetDeadline sets both; a deadline already past fails at once.
	require.NoError(t, c.SetDeadline(time.Now().Add(-time.Second)))
	_, err = c.Read(make([]byte, 1))
	requireTimeout(t, err)
	_, err = c.Write([]byte("x"))
	requireTimeout(t, err)

	// Cleared deadlines: the stream works again.
	require.NoError(t, c.SetDeadline(time.Time{}))
	require.NoError(t, s.SetReadDeadline(time.Time{}))
	wrote := make(chan error, 1)
	go func() { _, err := c.Write([]byte("ok")); wrote <- err }()
	got := make([]byte, 2)
	_, err = io.ReadFull(s, got)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(got))
	require.NoError(t, <-wrote)
	require.NoError(t, c.Close())
	require.NoError(t, s.Close())
}

// TestMemNetworkStall: a stalled node accepts streams but never reads
// them, while its packets and its own dials work; Unstall closes the
// streams it never read and delivers new ones again.
func TestMemNetworkStall(t *testing.T) {
	n, ts := newNet(t, "a", "b", "c")
	a, b, c := ts["a"], ts["b"], ts["c"]
	n.Stall("b")

	conn, err := a.DialAddressTimeout(memberlist.Address{Addr: n.Addr("b"), Name: "b"}, time.Second)
	require.NoError(t, err, "a stalled node accepts")
	select {
	case s := <-b.StreamCh():
		require.FailNow(t, "a stalled node got a stream", "from %s", s.RemoteAddr())
	default: // delivery is synchronous: nothing will come
	}
	assert.Equal(t, uint64(1), n.Stats("a").StreamsOpened)
	assert.Equal(t, uint64(1), n.Stats("a").StreamsStalled)
	require.NoError(t, conn.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = conn.Write([]byte("never read"))
	requireTimeout(t, err)

	// Packets both ways, and b's own dials, are unaffected.
	_, _ = a.WriteTo([]byte("ping"), n.Addr("b"))
	assert.Equal(t, "ping", string(recvPacket(t, b).Buf))
	_, _ = b.WriteTo([]byte("ack"), n.Addr("a"))
	assert.Equal(t, "ack", string(recvPacket(t, a).Buf))
	out, err := b.DialTimeout(n.Addr("c"), time.Second)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	require.NoError(t, acceptStream(t, c).Close())

	// A writer blocked without a deadline is released by Unstall.
	require.NoError(t, conn.SetWriteDeadline(time.Time{}))
	wrote := make(chan error, 1)
	go func() { _, err := conn.Write([]byte("blocked")); wrote <- err }()
	n.Unstall("b")
	select {
	case err := <-wrote:
		assert.ErrorIs(t, err, io.ErrClosedPipe)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Unstall left the writer blocked")
	}
	require.NoError(t, conn.Close())

	// Streams reach b again.
	conn, err = a.DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.NoError(t, acceptStream(t, b).Close())
	assert.Equal(t, uint64(1), n.Stats("a").StreamsStalled)
	n.Unstall("nobody") // harmless
}

// TestMemNetworkCrashMidTransfer: a node that crashes while a peer is
// writing to it fails the write, and Crash also closes the streams a
// stalled node never read.
func TestMemNetworkCrashMidTransfer(t *testing.T) {
	n, ts := newNet(t, "a", "b", "c")
	conn, err := ts["a"].DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	far := acceptStream(t, ts["b"])

	type result struct {
		k   int
		err error
	}
	wrote := make(chan result, 1)
	go func() { k, err := conn.Write([]byte("0123456789")); wrote <- result{k, err} }()
	_, err = io.ReadFull(far, make([]byte, 3)) // the transfer is under way
	require.NoError(t, err)
	n.Crash("b")
	select {
	case r := <-wrote:
		assert.Equal(t, 3, r.k, "the bytes read before the crash")
		assert.ErrorIs(t, r.err, io.ErrClosedPipe)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the write outlived the crash")
	}
	n.Restart("b")

	n.Stall("c")
	stalled, err := ts["a"].DialTimeout(n.Addr("c"), time.Second)
	require.NoError(t, err)
	go func() { _, err := stalled.Write([]byte("x")); wrote <- result{0, err} }()
	n.Crash("c")
	select {
	case r := <-wrote:
		assert.ErrorIs(t, r.err, io.ErrClosedPipe)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the write to a stalled node outlived its crash")
	}
}

func TestMemNetworkOneWayBlock(t *testing.T) {
	n, ts := newNet(t, "a", "b", "c")
	a, b, c := ts["a"], ts["b"], ts["c"]

	// A stream a dialled to b, and one b dialled to a, before the block.
	fromA, err := a.DialTimeout(n.Addr("b"), time.Second)
	require.NoError(t, err)
	farB := acceptStream(t, b)
	fromB, err := b.DialTimeout(n.Addr("a"), time.Second)
	require.NoError(t, err)
	farA := acceptStream(t, a)

	n.BlockOneWay([]string{"a"}, []string{"b"})

	// a → b is blocked: packets dropped, dials fail, a's stream closed.
	_, _ = a.WriteTo([]byte("x"), n.Addr("b"))
	requireNoPacket(t, b)
	_, err = a.DialTimeout(n.Addr("b"), time.Second)
	assert.ErrorIs(t, err, ErrUnreachable)
	_, err = fromA.Write([]byte("x"))
	assert.Error(t, err)
	_, err = farB.Read(make([]byte, 1))
	assert.Error(t, err)

	// b → a still works: packets, new dials, and b's open stream both ways.
	_, _ = b.WriteTo([]byte("b to a"), n.Addr("a"))
	assert.Equal(t, "b to a", string(recvPacket(t, a).Buf))
	go func() { _, _ = fromB.Write([]byte("q")) }()
	buf := make([]byte, 1)
	_, err = io.ReadFull(farA, buf)
	require.NoError(t, err)
	go func() { _, _ = farA.Write([]byte("r")) }()
	_, err = io.ReadFull(fromB, buf)
	require.NoError(t, err)
	assert.Equal(t, "r", string(buf))
	conn, err := b.DialTimeout(n.Addr("a"), time.Second)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.NoError(t, acceptStream(t, a).Close())

	// Other links are untouched.
	_, _ = a.WriteTo([]byte("to c"), n.Addr("c"))
	assert.Equal(t, "to c", string(recvPacket(t, c).Buf))

	n.UnblockOneWay([]string{"a"}, []string{"b"})
	_, _ = a.WriteTo([]byte("again"), n.Addr("b"))
	assert.Equal(t, "again", string(recvPacket(t, b).Buf))

	n.BlockOneWay([]string{"a"}, []string{"b"})
	n.Heal()
	_, _ = a.WriteTo([]byte("healed"), n.Addr("b"))
	assert.Equal(t, "healed", string(recvPacket(t, b).Buf))
}

func TestMemNetworkOneWayLoss(t *testing.T) {
	n, ts := newNet(t, "a", "b")
	a, b := ts["a"], ts["b"]
	n.SetOneWayLoss("a", "b", 1)
	for range 10 {
		_, _ = a.WriteTo([]byte("x"), n.Addr("b"))
	}
	requireNoPacket(t, b)
	assert.Equal(t, uint64(10), n.Stats("a").PacketsDropped)
	// The other direction is untouched.
	_, _ = b.WriteTo([]byte("back"), n.Addr("a"))
	assert.Equal(t, "back", string(recvPacket(t, a).Buf))

	n.SetOneWayLoss("a", "b", 0.3)
	got := 0
	for range 1000 {
		_, _ = a.WriteTo([]byte("x"), n.Addr("b"))
		select {
		case <-b.PacketCh():
			got++
		default:
		}
	}
	assert.InDelta(t, 700, got, 60)
	n.SetOneWayLoss("a", "b", 0)
	_, _ = a.WriteTo([]byte("x"), n.Addr("b"))
	recvPacket(t, b)
}
