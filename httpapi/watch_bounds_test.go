package httpapi_test

// The bounds of blocking reads and the stream that stream_test.go and
// watch_test.go leave out: auth and the rate limit on every watchable
// read, the MaxWait cap on a held read, the filter bound of the stream,
// and several clients that open streams and never read while the registry
// changes a lot.

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/httpapi"
)

// watchPaths are the reads that can be held.
var watchPaths = []string{"/eureka/apps/delta", "/eureka/apps/BOUND-APP", "/eureka/vips/bound-app"}

// Every watchable read needs the read role before it waits: no
// credentials is 401, a user without the read role 403, a reader waits.
func TestWatchBlockingReadsNeedTheReadRole(t *testing.T) {
	n := startPush(t, pushOptions{mutate: func(c *httpapi.Config) { c.Auth = testAuth(t) }})
	require.Equal(t, http.StatusNoContent, n.do(http.MethodPost, "/eureka/apps/BOUND-APP",
		javaInstance("bound-app", 1).json(), "Content-Type", ctJSON, "Authorization", basic("writer", writerPass)).code)
	reader := []string{"Authorization", basic("reader", readerPass), "Accept", ctJSON}
	for _, path := range watchPaths {
		res := n.do(http.MethodGet, path, nil, reader...)
		require.Equal(t, http.StatusOK, res.code, "%s: %s", path, res)
		tag := res.header.Get("ETag")
		require.NotEmpty(t, tag, path)

		res = n.do(http.MethodGet, path+"?wait=30", nil, "If-None-Match", tag, "Accept", ctJSON)
		assert.Equal(t, http.StatusUnauthorized, res.code, "%s without credentials: %s", path, res)
		res = n.do(http.MethodGet, path+"?wait=30", nil, "If-None-Match", tag, "Accept", ctJSON,
			"Authorization", basic("writer", writerPass))
		assert.Equal(t, http.StatusForbidden, res.code, "%s as a writer: %s", path, res)
		res = n.do(http.MethodGet, path+"?wait=30", nil, "If-None-Match", tag, "Accept", ctJSON,
			"Authorization", basic("reader", "wrong"))
		assert.Equal(t, http.StatusUnauthorized, res.code, "%s with a wrong password: %s", path, res)

		// The reader's read is held (a short wait: unchanged content).
		res = await(t, n.blockingGet(path+"?wait=200ms", append(reader, "If-None-Match", tag)...))
		assert.Equal(t, http.StatusNotModified, res.code, "%s as a reader: %s", path, res)
	}
	assert.Equal(t, float64(len(watchPaths)), n.metric("heureka_push_blocking_reads_total", "result", "not_modified"),
		"only the reader's reads waited")
}

// A blocking read of the paths the rate limiter knows (Eureka's: /apps,
// /apps/delta, /apps/{app}) takes its tokens before it waits, and is
// refused 503 over the limit like a plain read.
func TestWatchBlockingReadsAreRateLimited(t *testing.T) {
	limited := func(c *httpapi.Config) {
		c.RateLimit = &httpapi.RateLimitConfig{BurstSize: 2, FetchAverageRate: 0.001, FullFetchAverageRate: 0.001}
	}
	for _, path := range []string{"/eureka/apps/delta", "/eureka/apps/BOUND-APP"} {
		t.Run(strings.TrimPrefix(path, "/eureka/apps/"), func(t *testing.T) {
			n := startPush(t, pushOptions{mutate: limited})
			n.register(javaInstance("bound-app", 1))
			tag := n.get(path, ctJSON).header.Get("ETag") // the first token
			require.NotEmpty(t, tag)
			res := await(t, n.blockingGet(path+"?wait=200ms", "Accept", ctJSON, "If-None-Match", tag)) // the second
			require.Equal(t, http.StatusNotModified, res.code, "%s", res)
			res = n.do(http.MethodGet, path+"?wait=30", nil, "Accept", ctJSON, "If-None-Match", tag)
			assert.Equal(t, http.StatusServiceUnavailable, res.code, "%s", res)
			assert.Contains(t, string(res.body), "rate limited")
			assert.Equal(t, float64(0), n.metric("heureka_push_watchers", "kind", "blocking"), "the refused read never waited")
		})
	}
	// VIP reads are outside Eureka's pattern: neither their plain nor
	// their blocking reads are limited.
	n := startPush(t, pushOptions{mutate: limited})
	n.register(javaInstance("bound-app", 1))
	tag := n.get("/eureka/vips/bound-app", ctJSON).header.Get("ETag")
	for range 3 {
		res := await(t, n.blockingGet("/eureka/vips/bound-app?wait=100ms", "Accept", ctJSON, "If-None-Match", tag))
		assert.Equal(t, http.StatusNotModified, res.code, "%s", res)
	}
}

// A wait longer than MaxWait is cut to it: the read answers 304 at
// MaxWait, not after the hour it asked for.
func TestWatchBlockingReadCappedAtMaxWait(t *testing.T) {
	cfg := testPushConfig()
	cfg.MaxWait = 300 * time.Millisecond
	cfg.WaitJitter = 0
	n := startPush(t, pushOptions{push: cfg})
	n.register(javaInstance("bound-app", 1))
	for _, path := range watchPaths {
		tag := n.get(path, ctJSON).header.Get("ETag")
		for _, wait := range []string{"3600", "1h", "10m"} {
			res := await(t, n.blockingGet(path+"?wait="+wait, "Accept", ctJSON, "If-None-Match", tag))
			assert.Equal(t, http.StatusNotModified, res.code, "%s wait=%s: %s", path, wait, res)
		}
	}
}

// A stream names at most 256 applications and VIPs in all; more is a 400
// that says so, before anything is streamed.
func TestStreamFilterBound(t *testing.T) {
	n := startPush(t, pushOptions{})
	var apps, vips []string
	for i := range 200 {
		apps = append(apps, fmt.Sprintf("app-%d", i))
		vips = append(vips, fmt.Sprintf("vip-%d", i))
	}
	res := n.get("/eureka/stream?app="+strings.Join(apps, ",")+"&vip="+strings.Join(vips, ","), "")
	assert.Equal(t, http.StatusBadRequest, res.code, "%s", res)
	assert.Contains(t, string(res.body), "at most 256 app and vip values")
	res = n.get("/eureka/stream?app="+strings.Join(append(apps, apps...), ",")+",one-more", "")
	assert.Equal(t, http.StatusBadRequest, res.code, "%s", res)
	assert.Contains(t, string(res.body), "at most 256 app values")
	assert.Equal(t, float64(0), n.metric("heureka_push_watchers", "kind", "stream"))

	s := n.openStream("/eureka/stream?app=" + strings.Join(apps, ","))
	assert.Equal(t, "snapshot", s.next().typ, "200 names are within the bound")
}

// dialNonReader opens a stream on a raw connection with a small receive
// buffer and never reads from it.
func dialNonReader(t *testing.T, n *pushNode) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "GET /eureka/stream HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	return conn
}

// Several clients open streams and never read while the registry changes
// a lot: each is cut (its backlog dropped, then its connection closed on
// the write timeout, counted in heureka_push_slow_watchers_cut_total),
// and a client that reads gets every change, in order, as deltas, never
// a snapshot in their place.
func TestStreamNonReadersAreCutOthersGetEveryChange(t *testing.T) {
	const nonReaders = 4
	cfg := testPushConfig()
	cfg.StreamBacklog = 2
	cfg.StreamWriteTimeout = 300 * time.Millisecond
	n := startPush(t, pushOptions{push: cfg, sndBuf: 4096})

	for range nonReaders {
		dialNonReader(t, n)
	}
	reader := n.openStream("/eureka/stream")
	require.Equal(t, "snapshot", reader.next().typ)
	require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "stream") == nonReaders+1 },
		20*time.Second, 5*time.Millisecond, "every stream is open")

	// Big instances fill the non-readers' buffers quickly.
	big := strings.Repeat("x", 32<<10)
	registered := 0
	for i := 1; n.metric("heureka_push_slow_watchers_cut_total", "reason", "write_timeout") < nonReaders; i++ {
		require.Less(t, i, 500, "the non-readers were not all cut (%v cut on a write timeout)",
			n.metric("heureka_push_slow_watchers_cut_total", "reason", "write_timeout"))
		inst := javaInstance("flood-app", i).with("metadata", map[string]any{"blob": big})
		n.register(inst)
		registered++
		ev := reader.next()
		require.Equal(t, "delta", ev.typ, "change %d came as a delta", i)
		require.Equal(t, "ADDED", actionOf(t, ev, "FLOOD-APP", inst.id()), "change %d is in its own event", i)
		require.Equal(t, fmt.Sprintf("UP_%d_", registered), hashcodeOf(t, ev), "no change was skipped before %d", i)
	}
	require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "stream") == 1 },
		20*time.Second, 5*time.Millisecond, "only the reader's stream is left")
	assert.Equal(t, float64(nonReaders), n.metric("heureka_push_slow_watchers_cut_total", "reason", "write_timeout"))

	// The reader still gets the next changes, and a cancellation.
	more := javaInstance("flood-app", 9999)
	n.register(more)
	assert.Equal(t, "ADDED", actionOf(t, reader.next(), "FLOOD-APP", more.id()))
	require.Equal(t, http.StatusOK, n.do(http.MethodDelete, "/eureka/apps/FLOOD-APP/"+more.id(), nil).code)
	assert.Equal(t, "DELETED", actionOf(t, reader.next(), "FLOOD-APP", more.id()))
}
