package wanlink_test

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/wanlink"
)

// echo is a server that answers each line with itself.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// The proxy forwards both ways and counts each; a cut closes the open
// connection and refuses new ones; a heal lets them in again.
func TestProxyCountsCutsAndHeals(t *testing.T) {
	p, err := wanlink.Listen(echo(t))
	require.NoError(t, err)
	defer p.Close()

	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("hello\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "hello\n", line)
	assert.EqualValues(t, 6, p.Up.Load())
	assert.EqualValues(t, 6, p.Down.Load())

	p.Cut()
	_, err = c.Read(make([]byte, 1))
	assert.Error(t, err, "the open connection is closed by the cut")
	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	_, err = c2.Read(make([]byte, 1))
	assert.Error(t, err, "a new connection is refused while cut")
	c2.Close()

	p.Heal()
	c3, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c3.Close()
	_, err = c3.Write([]byte("again\n"))
	require.NoError(t, err)
	line, err = bufio.NewReader(c3).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "again\n", line)
}
