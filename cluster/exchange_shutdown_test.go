package cluster

import (
	"io"
	"log"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/require"
)

// TestExchangeTransportShutdownWithAStreamInHandOver: memberlist's
// NetTransport hands an accepted stream over an unbuffered channel, and its
// Shutdown waits for the listener. A stream that arrives once nobody reads
// that channel any more (sorting has stopped, as during Shutdown) must not
// block Shutdown: make test once hung 15 minutes in a node's Stop here.
func TestExchangeTransportShutdownWithAStreamInHandOver(t *testing.T) {
	require.True(t, shutdownWithAStreamInHandOver(t, 10*time.Second),
		"Shutdown hangs on a stream accepted while nobody reads")
}

// shutdownWithAStreamInHandOver parks a NetTransport listener in the
// hand-over of an accepted stream that nobody reads, then reports whether
// the exchange transport's Shutdown returns within wait.
func shutdownWithAStreamInHandOver(t *testing.T, wait time.Duration) bool {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{"127.0.0.1"},
		Logger:    log.New(io.Discard, "", 0),
	})
	require.NoError(t, err)
	xt := newExchangeTransport(newDeadlineTransport(nt, time.Second), nil, time.Second)
	// Sorting never started: nobody reads the listener's hand-over, as
	// after sortStreams has returned.

	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(nt.GetAutoBindPort())))
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, listenerBlockedInHandOver, 10*time.Second, 5*time.Millisecond,
		"the listener never accepted the stream")

	done := make(chan error, 1)
	go func() { done <- xt.Shutdown() }()
	select {
	case err := <-done:
		require.NoError(t, err)
		return true
	case <-time.After(wait):
		// Release the listener so that nothing outlives the test.
		if s := <-nt.StreamCh(); s != nil {
			_ = s.Close()
		}
		<-done
		return false
	}
}

// listenerBlockedInHandOver reports whether a NetTransport listener is
// parked sending an accepted stream on its channel.
func listenerBlockedInHandOver() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[chan send") && strings.Contains(g, "NetTransport).tcpListen") {
			return true
		}
	}
	return false
}
