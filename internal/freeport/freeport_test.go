package freeport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ports handed out are distinct and free for TCP and UDP.
func TestPortsAreDistinctAndFree(t *testing.T) {
	seen := map[int]bool{}
	for range 100 {
		p, err := Port("127.0.0.1", true)
		require.NoError(t, err)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		assert.Less(t, p, ephemeralLow(), "below the ephemeral range, which outgoing connections take from")
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		pc, err := net.ListenPacket("udp", addr)
		require.NoError(t, err)
		_ = pc.Close()
		_ = l.Close()
	}
}

// When the kernel offers a port again, Port skips it.
func TestPortSkipsWhatItHandedOut(t *testing.T) {
	real := listen
	defer func() { listen = real }()
	fixed := 0
	for fixed == 0 || handedOut.ports[fixed] { // one not handed out by the test before
		l, err := real("127.0.0.1")
		require.NoError(t, err)
		fixed = l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
	}
	offers := 0
	listen = func(host string) (net.Listener, error) {
		offers++
		if offers <= 2 {
			return net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(fixed)))
		}
		return real(host)
	}
	first, err := Port("127.0.0.1", false)
	require.NoError(t, err)
	assert.Equal(t, fixed, first)
	second, err := Port("127.0.0.1", false)
	require.NoError(t, err)
	assert.NotEqual(t, fixed, second, "the port offered again is skipped")
	assert.GreaterOrEqual(t, offers, 3, "offered twice, then a new one (or more, past ports handed out before)")
}
