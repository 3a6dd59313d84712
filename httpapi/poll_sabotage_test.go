//go:build sabotage && linux

package httpapi_test

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With parked-idle-not-swept on, an answered parked connection whose
// client asks nothing more is still open well past the server's idle
// timeout: TestWatchParkedIdleTimeout's check (closed at the timeout)
// fails (run with -tags sabotage; Linux, where the poller runs).
func TestSabotageParkedIdleNotSwept(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ParkedIdleNotSwept))
	defer func() { require.NoError(t, sabotage.Set()) }()
	_, rc, _ := answered(t, pushOptions{server: func(s *http.Server) { s.IdleTimeout = 300 * time.Millisecond }}, "unswept-app")
	require.NoError(t, rc.c.SetReadDeadline(time.Now().Add(3*time.Second)))
	_, err := rc.br.ReadByte()
	var ne net.Error
	require.ErrorAs(t, err, &ne, "the connection outlived the idle timeout: the test's own deadline ended the read")
	assert.True(t, ne.Timeout())
}

// With stream-closed-by-client-bytes on, a stream whose client sends
// bytes is closed: TestStreamIgnoresClientBytes's check fails (run with
// -tags sabotage; Linux, where the poller runs).
func TestSabotageStreamClosedByClientBytes(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.StreamClosedByClientBytes))
	defer func() { require.NoError(t, sabotage.Set()) }()
	n := startPush(t, pushOptions{})
	n.register(javaInstance("closed-app", 1))
	conns := rawStreams(t, n, 1)
	streams := func() float64 { return n.metric("heureka_push_watchers", "kind", "stream") }
	require.Eventually(t, func() bool { return streams() == 1 }, 10*time.Second, 5*time.Millisecond)
	_, err := fmt.Fprintf(conns[0], "unexpected\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return streams() == 0 }, 10*time.Second, 5*time.Millisecond,
		"the client's bytes closed the stream")
}
