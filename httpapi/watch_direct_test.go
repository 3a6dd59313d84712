package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/httpapi"
)

// next counts the requests that came on answered parked connections, by
// how they were served (watch_direct.go).
func (n *pushNode) next(how string) float64 {
	n.t.Helper()
	return n.metric("heureka_push_parked_next_requests_total", "how", how)
}

// answerTag is the ETag of an answer of watchedApp.parkAndAnswer.
func answerTag(res *http.Response, _ []byte) string { return res.Header.Get("ETag") }

// The next blocking reads on an answered parked connection are served on
// it without net/http: parked again and answered 200 by a change, then
// 304 at the end of a short wait; none is handed back.
func TestWatchDirectNextReads(t *testing.T) {
	a, rc, tag := answered(t, pushOptions{}, "direct-app")
	n, path := a.n, a.path

	res, body := a.parkAndAnswer(rc, tag)
	assert.Equal(t, float64(1), n.next("direct"))
	assert.Contains(t, string(body), "10.0.0.3:direct-app:8080")
	newTag := res.Header.Get("ETag")

	rc.send(path+"?wait=300ms", "Accept", ctJSON, "If-None-Match", newTag)
	res, body, _ = rc.receive()
	assert.Equal(t, http.StatusNotModified, res.StatusCode)
	assert.Equal(t, newTag, res.Header.Get("ETag"))
	assert.Empty(t, body)
	n.waiting(0)
	assert.Equal(t, float64(2), n.next("direct"))
	assert.Zero(t, n.next("handed_back"))
	assert.Equal(t, float64(2), n.metric("heureka_push_blocking_reads_total", "result", "changed"))
	assert.Equal(t, float64(1), n.metric("heureka_push_blocking_reads_total", "result", "not_modified"))

	// With BlockingDirect off, the same reads are handed back.
	cfg := testPushConfig()
	cfg.BlockingDirect = false
	a, rc, tag = answered(t, pushOptions{push: cfg}, "direct-app")
	off := a.n
	rc.send(path+"?wait=300ms", "Accept", ctJSON, "If-None-Match", tag)
	res, _, _ = rc.receive()
	assert.Equal(t, http.StatusNotModified, res.StatusCode)
	assert.Zero(t, off.next("direct"))
	assert.Equal(t, float64(1), off.next("handed_back"))
}

// Requests that are not blocking reads of a watchable resource go back to
// net/http, every byte of them: a plain read, a blocking read with a body,
// a blocking read whose head does not fit the direct reader's buffer, and
// a request pipelined behind a directly answered one. The connection
// serves requests after each.
func TestWatchDirectHandsBack(t *testing.T) {
	a, rc, tag := answered(t, pushOptions{}, "back-app")
	n, path := a.n, a.path

	// A plain read.
	rc.send(path, "Accept", ctJSON)
	res, body, _ := rc.receive()
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, string(body), "10.0.0.2:back-app:8080")
	assert.Equal(t, tag, res.Header.Get("ETag"))
	assert.Equal(t, float64(1), n.next("handed_back"))

	// A blocking read with a body: net/http's handler waits it out.
	tag = answerTag(a.parkAndAnswer(rc, tag))
	assert.Zero(t, n.next("direct"), "parked by net/http after the plain read")
	_, err := io.WriteString(rc.c, "GET "+path+"?wait=200ms HTTP/1.1\r\nHost: x\r\nAccept: "+ctJSON+
		"\r\nIf-None-Match: "+tag+"\r\nContent-Length: 5\r\n\r\nhello")
	require.NoError(t, err)
	res, _, _ = rc.receive()
	assert.Equal(t, http.StatusNotModified, res.StatusCode)
	assert.Equal(t, float64(2), n.next("handed_back"))
	assert.Zero(t, n.next("direct"))

	// A head larger than the direct reader's 4 KiB, within net/http's
	// limit: handed back, parked by net/http's handler, answered.
	tag = answerTag(a.parkAndAnswer(rc, tag))
	rc.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag, "X-Big", strings.Repeat("b", 8<<10))
	n.waiting(1)
	assert.Equal(t, float64(3), n.next("handed_back"))
	a.change()
	res, _, _ = rc.receive()
	require.Equal(t, http.StatusOK, res.StatusCode)
	tag = res.Header.Get("ETag")

	// Pipelined behind a read answered at once (a stale tag): the first
	// is served directly, the second handed back.
	_, err = io.WriteString(rc.c, "GET "+path+"?wait=60 HTTP/1.1\r\nHost: x\r\nAccept: "+ctJSON+
		"\r\nIf-None-Match: \"stale\"\r\n\r\nGET "+path+" HTTP/1.1\r\nHost: x\r\nAccept: "+ctJSON+"\r\n\r\n")
	require.NoError(t, err)
	res, _, _ = rc.receive()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, tag, res.Header.Get("ETag"))
	res, _, _ = rc.receive()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, tag, res.Header.Get("ETag"))
	assert.Equal(t, float64(1), n.next("direct"))
	assert.Equal(t, float64(4), n.next("handed_back"))

	// And the connection still parks blocking reads.
	a.parkAndAnswer(rc, tag)
}

// A request head over net/http's MaxHeaderBytes after a parked read is
// handed back and refused by net/http (431, or the connection closed
// while the client still writes); the direct reader holds at most its 4
// KiB of it, and the node serves on.
func TestWatchDirectOversizedHead(t *testing.T) {
	a, rc, tag := answered(t, pushOptions{}, "big-app")
	n, path := a.n, a.path
	go func() {
		req := "GET " + path + "?wait=60 HTTP/1.1\r\nHost: x\r\nIf-None-Match: " + tag + "\r\nX-Big: " +
			strings.Repeat("b", http.DefaultMaxHeaderBytes+8<<10) + "\r\n\r\n"
		_, _ = io.WriteString(rc.c, req) // the server may close before it is all written
	}()
	require.NoError(t, rc.c.SetReadDeadline(time.Now().Add(20*time.Second)))
	res, err := http.ReadResponse(rc.br, nil)
	if err == nil {
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, res.StatusCode)
	}
	require.Eventually(t, func() bool { return n.next("handed_back") == 1 }, 10*time.Second, 5*time.Millisecond)
	assert.Zero(t, n.next("direct"))
	assert.Equal(t, http.StatusOK, n.get(path, ctJSON).code)
}

// With authentication on, a blocking read served directly is checked as
// any other: without credentials, 401 (the same bytes net/http's handler
// writes); with them, parked.
func TestWatchDirectAuth(t *testing.T) {
	auth := testAuth(t)
	n := startPush(t, pushOptions{mutate: func(c *httpapi.Config) { c.Auth = auth }})
	reader := []string{"Authorization", basic("reader", readerPass)}
	a := &watchedApp{n: n, name: "auth-direct-app", path: "/eureka/apps/AUTH-DIRECT-APP"}
	a.register = func(i int) {
		res := n.do(http.MethodPost, a.path, javaInstance(a.name, i).json(),
			"Content-Type", ctJSON, "Authorization", basic("writer", writerPass))
		require.Equal(t, http.StatusNoContent, res.code, "%s", res)
	}
	a.change()
	path := a.path
	rc := dialRaw(t, n)
	tag := answerTag(a.parkAndAnswer(rc, a.tag(reader...), reader...))

	rc.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	got, _, raw := rc.receive()
	assert.Equal(t, http.StatusUnauthorized, got.StatusCode)
	assert.Equal(t, float64(1), n.next("direct"))
	fresh := dialRaw(t, n)
	fresh.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	_, _, want := fresh.receive()
	assert.Equal(t, withoutDate(want), withoutDate(raw))

	rc.send(path+"?wait=60", append([]string{"Accept", ctJSON, "If-None-Match", tag}, reader...)...)
	n.waiting(1)
	assert.Equal(t, float64(2), n.next("direct"))
	a.change()
	got, _, _ = rc.receive()
	assert.Equal(t, http.StatusOK, got.StatusCode)
}

// The answers a blocking read served directly gets at once are, byte for
// byte but the Date, those net/http's handler writes: a new document
// (JSON, gzip, XML), 304 for wait=0, 404 for an unknown application, 400
// for a bad wait, 403 when the node is not ready; and a read parked
// directly is answered as one parked by net/http's handler.
func TestWatchDirectAnswersAsTheHandler(t *testing.T) {
	clock := actors.NewManualClock(time.UnixMilli(1754500000000))
	var ready atomic.Bool
	ready.Store(true)
	nodes := map[bool]*pushNode{}
	for _, direct := range []bool{true, false} {
		cfg := testPushConfig()
		cfg.BlockingHijack = direct // off: every answer from net/http's handler
		nodes[direct] = startPush(t, pushOptions{name: "same-node", clock: clock, push: cfg,
			mutate: func(c *httpapi.Config) { c.Ready = ready.Load }})
	}
	const path = "/eureka/apps/DBYTE-APP"
	conns := map[bool]*rawConn{}
	apps := map[bool]*watchedApp{}
	var tag string
	for direct, n := range nodes {
		apps[direct] = watchApp(n, "dbyte-app")
		conns[direct] = dialRaw(t, n)
		tag = answerTag(apps[direct].parkAndAnswer(conns[direct], apps[direct].tag()))
	}
	tagXML := nodes[true].get(path, "").header.Get("ETag")
	ask := func(direct bool, hdr []string) string {
		rc := conns[direct]
		rc.send(hdr[0], hdr[1:]...)
		_, _, raw := rc.receive()
		return withoutDate(raw)
	}
	reads := [][]string{
		{path + "?wait=60", "Accept", ctJSON, "If-None-Match", `"stale"`},
		{path + "?wait=60", "Accept", ctJSON, "Accept-Encoding", "gzip", "If-None-Match", `"stale"`},
		{path + "/?wait=60", "If-None-Match", `"stale"`},
		{path + "?wait=0", "If-None-Match", tagXML},
		{"/eureka/apps/NO-SUCH-APP?wait=60", "Accept", ctJSON, "If-None-Match", tag},
		{path + "?wait=soon", "Accept", ctJSON, "If-None-Match", tag},
		{"/eureka/v2/apps/delta?wait=60", "Accept", ctJSON, "If-None-Match", `"stale"`},
		{"/eureka/vips/dbyte-app?wait=60", "Accept", ctJSON, "If-None-Match", `"stale"`},
	}
	for i, hdr := range reads {
		assert.Equal(t, ask(false, hdr), ask(true, hdr), "read %d: %s", i, hdr[0])
	}
	ready.Store(false)
	notReady := []string{path + "?wait=60", "Accept", ctJSON, "If-None-Match", tag}
	got := ask(true, notReady)
	assert.Equal(t, ask(false, notReady), got, "not ready")
	assert.Contains(t, got, "HTTP/1.1 403 Forbidden\r\n")
	ready.Store(true)
	assert.Equal(t, float64(len(reads)+1), nodes[true].next("direct"))
	assert.Zero(t, nodes[true].next("handed_back"))

	// Parked directly, answered by a change.
	out := map[bool]string{}
	for direct, n := range nodes {
		conns[direct].send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag)
		n.waiting(1)
	}
	for direct := range nodes {
		apps[direct].change()
		_, _, raw := conns[direct].receive()
		out[direct] = withoutDate(raw)
	}
	assert.Equal(t, out[false], out[true], "a change")
	assert.Contains(t, out[true], "HTTP/1.1 200 OK\r\n")
	assert.Equal(t, float64(len(reads)+2), nodes[true].next("direct"))
}

// A next request whose head stalls after a parked read is bounded by the
// server's header timeout (net/http's rule): the connection is closed,
// and nothing is served or handed back.
func TestWatchDirectHeadTimeout(t *testing.T) {
	for _, idle := range []time.Duration{0, 30 * time.Second} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			a, rc, _ := answered(t, pushOptions{server: func(s *http.Server) {
				s.ReadHeaderTimeout = 300 * time.Millisecond
				s.IdleTimeout = idle
			}}, "slow-app")
			n, path := a.n, a.path
			_, err := io.WriteString(rc.c, "GET "+path+"?wa")
			require.NoError(t, err)
			time.Sleep(50 * time.Millisecond)
			_, err = io.WriteString(rc.c, "it=60 HTTP/1.1\r\n")
			require.NoError(t, err)
			start := time.Now()
			require.NoError(t, rc.c.SetReadDeadline(time.Now().Add(10*time.Second)))
			_, err = rc.br.ReadByte()
			assert.ErrorIs(t, err, io.EOF)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.Zero(t, n.next("direct"))
			assert.Zero(t, n.next("handed_back"))
		})
	}
}

// The rate limit applies to a blocking read served directly as to any
// read: once the bucket is empty, 503 with Retry-After (Eureka's answer), the same bytes
// net/http's handler writes.
func TestWatchDirectRateLimit(t *testing.T) {
	// The first token: the plain read of the tag; the second: the read
	// answered; the third: the next one, served directly.
	a, rc, tag := answered(t, pushOptions{mutate: func(c *httpapi.Config) {
		c.RateLimit = &httpapi.RateLimitConfig{BurstSize: 3, FetchAverageRate: 0.001, FullFetchAverageRate: 0.001}
	}}, "limit-app")
	n, path := a.n, a.path
	tag = answerTag(a.parkAndAnswer(rc, tag))
	assert.Equal(t, float64(1), n.next("direct"))

	rc.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	res, _, raw := rc.receive()
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	assert.Equal(t, "1", res.Header.Get("Retry-After"))
	assert.Equal(t, float64(2), n.next("direct"))
	fresh := dialRaw(t, n)
	fresh.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	_, _, want := fresh.receive()
	assert.Equal(t, withoutDate(want), withoutDate(raw))
}

// A panic in a request served directly is recovered as net/http recovers
// a handler's: logged (http.ErrAbortHandler silently), its connection
// closed without an answer and its goroutine ended; the node goes on
// serving the other connections' next reads, parked and answered, and
// plain reads.
func TestWatchDirectPanic(t *testing.T) {
	undo := httpapi.SetDirectHook(func(r *http.Request) {
		switch r.Header.Get("X-Panic") {
		case "boom":
			panic("boom")
		case "abort":
			panic(http.ErrAbortHandler)
		}
	})
	defer undo()
	a, boom, tag := answered(t, pushOptions{}, "panic-app")
	n, path := a.n, a.path
	abort, other := dialRaw(t, n), dialRaw(t, n)
	a.parkAndAnswer(abort, a.tag())
	otherTag := answerTag(a.parkAndAnswer(other, a.tag()))
	before := runtime.NumGoroutine() // the three connections' readers among them, if they have any
	readers := httpapi.WaitingReaderGoroutines()

	closed := func(rc *rawConn, name string) {
		t.Helper()
		rc.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag, "X-Panic", name)
		require.NoError(t, rc.c.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := rc.br.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "%s: closed without an answer", name)
	}
	closed(boom, "boom")
	logs := n.logs.String()
	assert.Contains(t, logs, "panic serving a blocking read")
	assert.Contains(t, logs, "boom")
	closed(abort, "abort")
	assert.Equal(t, logs, n.logs.String(), "http.ErrAbortHandler is not logged")
	assert.Equal(t, float64(2), n.next("direct"))
	// The closed connections' goroutines end (polled here: Eventually's
	// own goroutines would be counted).
	for end := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before-2*readers && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before-2*readers, "goroutines")

	_, body := a.parkAndAnswer(other, otherTag)
	assert.Equal(t, float64(3), n.next("direct"))
	assert.Contains(t, string(body), fmt.Sprintf("10.0.0.%d:panic-app:8080", a.last))
	assert.Equal(t, http.StatusOK, n.get(path, ctJSON).code)
	assert.Zero(t, n.next("handed_back"))
}
