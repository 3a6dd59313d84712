package cluster

import (
	"io"
	"log"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
)

// TestTransportDeadlineOnTCP: over memberlist's real NetTransport, a stream
// to a peer that accepts but never reads fails once the kernel buffers are
// full and the deadline passes, instead of blocking forever.
func TestTransportDeadlineOnTCP(t *testing.T) {
	t.Parallel()
	// A peer that accepts connections and never reads them.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for c := range accepted {
			_ = c.Close()
		}
	})

	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{"127.0.0.1"},
		Logger:    log.New(io.Discard, "", 0),
	})
	require.NoError(t, err)
	const timeout = 300 * time.Millisecond
	tr := newDeadlineTransport(nt, timeout)

	big := make([]byte, 64<<20) // far more than loopback socket buffers hold
	for name, dial := range map[string]func() (net.Conn, error){
		"DialAddressTimeout": func() (net.Conn, error) {
			return tr.DialAddressTimeout(memberlist.Address{Addr: ln.Addr().String(), Name: "peer"}, time.Second)
		},
		"DialTimeout": func() (net.Conn, error) { return tr.DialTimeout(ln.Addr().String(), time.Second) },
	} {
		conn, err := dial()
		require.NoError(t, err, name)
		start := time.Now()
		k, err := conn.Write(big)
		requireTimeout(t, err)
		assert.Less(t, k, len(big), name)
		assert.GreaterOrEqual(t, time.Since(start), timeout/2, name) // the buffers took some
		assert.Less(t, time.Since(start), waitFor, name)
		require.NoError(t, conn.Close())
	}

	_, err = tr.DialTimeout("127.0.0.1:1", 100*time.Millisecond)
	assert.Error(t, err, "dial errors pass through")
	require.NoError(t, tr.Shutdown())
	require.NoError(t, tr.Shutdown(), "idempotent")
}

// TestTransportDeadlineOnMemNetwork: the wrapper bounds memnet.Network streams
// too, and memberlist may still replace the deadline with its own.
func TestTransportDeadlineOnMemNetwork(t *testing.T) {
	t.Parallel()
	n, ts := newNet(t, "a", "b")
	tr := newDeadlineTransport(ts["a"], 50*time.Millisecond)

	conn, err := tr.DialAddressTimeout(memberlist.Address{Addr: n.Addr("b"), Name: "b"}, time.Second)
	require.NoError(t, err)
	far := acceptStream(t, ts["b"])
	_, err = conn.Write([]byte("nobody reads"))
	requireTimeout(t, err)

	// What memberlist does for push/pull: its own deadline replaces ours.
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
	wrote := make(chan error, 1)
	go func() { _, err := conn.Write([]byte("read")); wrote <- err }()
	got := make([]byte, 4)
	_, err = io.ReadFull(far, got)
	require.NoError(t, err)
	require.NoError(t, <-wrote)
	assert.Equal(t, "read", string(got))
	require.NoError(t, conn.Close())
	require.NoError(t, far.Close())

	_, err = tr.DialTimeout("10.9.9.9:7946", time.Second)
	assert.ErrorIs(t, err, memnet.ErrUnreachable)
	require.NoError(t, tr.Shutdown())
	require.NoError(t, tr.Shutdown())
	_, err = ts["a"].DialTimeout(n.Addr("b"), time.Second)
	assert.ErrorIs(t, err, memnet.ErrTransportClosed, "Shutdown reaches the wrapped transport")
}

// newNet is a memnet.Network with a transport per name.
func newNet(t *testing.T, names ...string) (*memnet.Network, map[string]memberlist.NodeAwareTransport) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	ts := make(map[string]memberlist.NodeAwareTransport)
	for _, name := range names {
		ts[name] = n.NewTransport(name)
	}
	return n, ts
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

// requireTimeout checks that err is a deadline error, as from a TCP conn.
func requireTimeout(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
}
