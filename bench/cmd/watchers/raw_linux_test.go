//go:build linux

package main

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/bench"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// The raw blocking watchers read a real node's answers: every change
// reaches every watcher as a 200 to its waiting read, and none errs, with
// the next request sent at once or after the change (-next-after-change).
// Each change is set beside the node's one fan-out of it.
func TestRawWatchersGetEveryChange(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(map[bool]string{false: "next at once", true: "next after the change"}[after], func(t *testing.T) {
			f, err := bench.NewFixtureWith(100, func(c *node.Config) {
				push := httpapi.DefaultPushConfig()
				c.Push = &push
			})
			require.NoError(t, err)
			defer f.Stop()
			w := newWatchers("blocking", f.Base, "SERVICE-00000", 4)
			w.raw, w.nextAfterChange = true, after
			defer w.stop()
			ctl := newClient(2)
			defer ctl.CloseIdleConnections()
			w.grow(3)
			require.NoError(t, w.waitArmed(ctl, 3))
			wr := &writer{c: ctl, base: f.Base, app: "SERVICE-00000"}
			res, err := runChanges(w, wr, ctl, 3, 4, func() time.Duration { return 0 })
			require.NoError(t, err)
			assert.Zero(t, res.missed)
			assert.Len(t, res.fromResp, 12)
			assert.Zero(t, w.errs.Load(), "%v", w.lastErr.Load())
			require.Len(t, res.perChange, 4)
			for i, c := range res.perChange {
				assert.Equal(t, 1, c.node.fanouts, "change %d: one fan-out on the node", i)
				assert.Positive(t, c.node.fanout, "change %d", i)
			}
		})
	}
}

// A response head that comes in pieces is read whole; a status other
// than 200 or 304, a 200 without ETag and a body longer than its
// Content-Length are errors.
func TestRawResponseParsing(t *testing.T) {
	w := newWatchers("blocking", "http://127.0.0.1:1", "APP", 1)
	defer w.cancel()
	l := &rawLoop{r: &rawLoops{w: w, conns: make([]atomic.Pointer[rawConn], 1)}}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	c := &rawConn{fd: fds[0], loop: l, inFlight: true, waited: true}
	w.inFlight.Add(1)
	resp := "HTTP/1.1 200 OK\r\nETag: \"abc\"\r\nContent-Length: 5\r\n\r\nhello"
	for _, piece := range []string{resp[:10], resp[10:30], resp[30:49], resp[49:]} {
		require.NoError(t, l.consume(c, []byte(piece)))
	}
	assert.Equal(t, `"abc"`, string(c.etag))
	assert.EqualValues(t, 1, w.received.Load())
	buf := make([]byte, 512)
	n, err := syscall.Read(fds[1], buf)
	require.NoError(t, err)
	assert.Equal(t, "GET /eureka/apps/APP?wait=60s HTTP/1.1\r\nHost: node\r\nAccept: application/json\r\n"+
		"If-None-Match: \"abc\"\r\n\r\n", string(buf[:n]), "the next request")

	for name, bad := range map[string]string{
		"status":       "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
		"no ETag":      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"long body":    "HTTP/1.1 200 OK\r\nETag: \"x\"\r\nContent-Length: 1\r\n\r\nab",
		"chunked":      "HTTP/1.1 200 OK\r\nETag: \"x\"\r\nTransfer-Encoding: chunked\r\n\r\n",
		"no length":    "HTTP/1.1 200 OK\r\nETag: \"x\"\r\n\r\n",
		"status line":  "HTTP/1.0 200 OK\r\n\r\n",
		"bad length":   "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
		"header line":  "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"bad status":   "HTTP/1.1 2x0 OK\r\n\r\n",
		"short status": "HTTP/1.1 20\r\n\r\n",
	} {
		c := &rawConn{fd: -1, loop: l, inFlight: true}
		errs := w.errs.Load()
		err := l.consume(c, []byte(bad))
		assert.True(t, err != nil || w.errs.Load() > errs, "%s: refused", name)
	}
}
