package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/httpapi"
)

// streamDoc decodes an event's data, a Eureka applications document.
func streamDoc(t *testing.T, ev sseEvent) *wireApps {
	t.Helper()
	return decodeApps(t, []byte(ev.data))
}

// hashcodeOf is the apps__hashcode of an event's document.
func hashcodeOf(t *testing.T, ev sseEvent) string {
	t.Helper()
	var d struct {
		Applications struct {
			Hashcode string `json:"apps__hashcode"`
		} `json:"applications"`
	}
	require.NoError(t, json.Unmarshal([]byte(ev.data), &d))
	return d.Applications.Hashcode
}

// actionOf is the actionType of instance id of app in an event's
// document, "" when it is not there.
func actionOf(t *testing.T, ev sseEvent, app, id string) string {
	t.Helper()
	var d struct {
		Applications struct {
			Application []struct {
				Name     string `json:"name"`
				Instance []struct {
					InstanceID string `json:"instanceId"`
					ActionType string `json:"actionType"`
				} `json:"instance"`
			} `json:"application"`
		} `json:"applications"`
	}
	require.NoError(t, json.Unmarshal([]byte(ev.data), &d), ev.data)
	for _, a := range d.Applications.Application {
		for _, i := range a.Instance {
			if a.Name == app && i.InstanceID == id {
				return i.ActionType
			}
		}
	}
	return ""
}

// A new stream starts with a snapshot (the /apps document); a
// registration then arrives as a delta event with its own id, the
// instance ADDED and the full registry's hashcode.
func TestStreamSnapshotThenDelta(t *testing.T) {
	n := startPush(t, pushOptions{})
	first := javaInstance("stream-app", 1)
	n.register(first)
	s := n.openStream("/eureka/stream")
	snap := s.next()
	require.Equal(t, "snapshot", snap.typ)
	require.NotEmpty(t, snap.id)
	assert.Equal(t, string(n.get("/eureka/apps", ctJSON).body), snap.data)
	assert.NotNil(t, streamDoc(t, snap).find("STREAM-APP", first.id()))

	second := javaInstance("stream-app", 2)
	n.register(second)
	ev := s.next()
	require.Equal(t, "delta", ev.typ)
	assert.NotEqual(t, snap.id, ev.id)
	assert.Equal(t, "ADDED", actionOf(t, ev, "STREAM-APP", second.id()))
	assert.Empty(t, actionOf(t, ev, "STREAM-APP", first.id()), "an unchanged instance is not in the event")
	assert.Equal(t, "UP_2_", hashcodeOf(t, ev))

	require.Equal(t, http.StatusOK, n.do(http.MethodDelete, "/eureka/apps/STREAM-APP/"+first.id(), nil).code)
	ev = s.next()
	assert.Equal(t, "DELETED", actionOf(t, ev, "STREAM-APP", first.id()))
	assert.Equal(t, "UP_1_", hashcodeOf(t, ev))

	// The same stream under the other base path.
	s2 := n.openStream("/eureka/v2/stream")
	assert.Equal(t, "snapshot", s2.next().typ)

	assert.Equal(t, float64(2), n.metric("heureka_push_watchers", "kind", "stream"))
	assert.GreaterOrEqual(t, n.metric("heureka_push_events_sent_total"), float64(2))
	assert.GreaterOrEqual(t, n.metric("heureka_push_snapshots_sent_total"), float64(2))
}

// A client that reconnects with the Last-Event-ID it saw last gets the
// changes it missed, without a snapshot.
func TestStreamResumeReplaysMissedEvents(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("resume-app", 1))
	s := n.openStream("/eureka/stream")
	require.Equal(t, "snapshot", s.next().typ)
	n.register(javaInstance("resume-app", 2))
	last := s.next()
	require.Equal(t, "delta", last.typ)
	// Another watcher keeps the hub running, so the missed changes are
	// separate events in its window.
	keep := n.openStream("/eureka/stream")
	require.Equal(t, "snapshot", keep.next().typ)
	s.close()

	missed := []instance{javaInstance("resume-app", 3), javaInstance("resume-app", 4)}
	for _, i := range missed {
		n.register(i)
		require.Equal(t, "delta", keep.next().typ)
	}

	r := n.openStream("/eureka/stream", "Last-Event-ID", last.id)
	seen := map[string]string{}
	for len(seen) < len(missed) {
		ev := r.next()
		require.Equal(t, "delta", ev.typ, "a resumed stream replays, it does not start over")
		for _, i := range missed {
			if a := actionOf(t, ev, "RESUME-APP", i.id()); a != "" {
				seen[i.id()] = a
			}
		}
	}
	for _, i := range missed {
		assert.Equal(t, "ADDED", seen[i.id()])
	}
	assert.Equal(t, float64(2), n.metric("heureka_push_snapshots_sent_total"), "only the two first connections")
}

// When every watcher left, the changes made meanwhile still reach a
// resuming client (as one diff).
func TestStreamResumeAfterIdle(t *testing.T) {
	n := startPush(t, pushOptions{})
	s := n.openStream("/eureka/stream")
	require.Equal(t, "snapshot", s.next().typ)
	n.register(javaInstance("idle-app", 1))
	last := s.next()
	s.close()
	require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "stream") == 0 },
		20*time.Second, 5*time.Millisecond)
	gone := javaInstance("idle-app", 2)
	n.register(gone)
	n.register(javaInstance("idle-app", 3))

	r := n.openStream("/eureka/stream", "Last-Event-ID", last.id)
	ev := r.next()
	require.Equal(t, "delta", ev.typ)
	assert.Equal(t, "ADDED", actionOf(t, ev, "IDLE-APP", gone.id()))
	assert.Equal(t, "ADDED", actionOf(t, ev, "IDLE-APP", "10.0.0.3:idle-app:8080"))
}

// An id this node did not issue (another node's, an earlier process's,
// garbage, or one older than the window) gets a snapshot.
func TestStreamUnknownIDGetsSnapshot(t *testing.T) {
	win := testPushConfig()
	win.StreamWindow = 1
	n := startPush(t, pushOptions{push: win})
	other := startPush(t, pushOptions{name: "other-node"})
	n.register(javaInstance("id-app", 1))
	s := other.openStream("/eureka/stream")
	foreign := s.next().id

	local := n.openStream("/eureka/stream")
	require.Equal(t, "snapshot", local.next().typ)
	n.register(javaInstance("id-app", 2))
	old := local.next().id
	for i := 3; i <= 4; i++ {
		n.register(javaInstance("id-app", i))
		require.Equal(t, "delta", local.next().typ)
	}
	// The event after old has left the one-event window.

	for _, id := range []string{foreign, "garbage", "0123456789abcdef-1", old} {
		c := n.openStream("/eureka/stream", "Last-Event-ID", id)
		ev := c.next()
		assert.Equal(t, "snapshot", ev.typ, "Last-Event-ID %q", id)
		assert.Len(t, streamDoc(t, ev).find("ID-APP", "10.0.0.3:id-app:8080").InstanceID, len("10.0.0.3:id-app:8080"))
		c.close()
	}
}

// app= and vip= restrict what a stream shows.
func TestStreamFilters(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("alpha", 1))
	n.register(javaInstance("beta", 2))
	byApp := n.openStream("/eureka/stream?app=alpha,gamma")
	byVIP := n.openStream("/eureka/stream?vip=beta")
	snapA, snapV := streamDoc(t, byApp.next()), streamDoc(t, byVIP.next())
	assert.Equal(t, []string{"ALPHA/10.0.0.1:alpha:8080"}, snapA.ids())
	assert.Equal(t, []string{"BETA/10.0.0.2:beta:8080"}, snapV.ids())

	n.register(javaInstance("beta", 3))
	n.register(javaInstance("alpha", 4))
	evA := byApp.next()
	assert.Equal(t, "ADDED", actionOf(t, evA, "ALPHA", "10.0.0.4:alpha:8080"))
	assert.Empty(t, actionOf(t, evA, "BETA", "10.0.0.3:beta:8080"))
	evV := byVIP.next()
	assert.Equal(t, "ADDED", actionOf(t, evV, "BETA", "10.0.0.3:beta:8080"))
	assert.Empty(t, actionOf(t, evV, "ALPHA", "10.0.0.4:alpha:8080"))

	res := n.get("/eureka/stream?app=a,,b", "")
	assert.Equal(t, http.StatusBadRequest, res.code)
}

// A client that does not read is cut (its backlog dropped, then its
// connection closed) while another one receives every change.
func TestStreamSlowWatcherCut(t *testing.T) {
	cfg := testPushConfig()
	cfg.StreamBacklog = 2
	cfg.StreamWriteTimeout = 300 * time.Millisecond
	n := startPush(t, pushOptions{push: cfg, sndBuf: 4096})

	// The slow client: a raw connection with a small receive buffer that
	// never reads after the request.
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
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /eureka/stream HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)

	fast := n.openStream("/eureka/stream")
	require.Equal(t, "snapshot", fast.next().typ)
	require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "stream") == 2 },
		20*time.Second, 5*time.Millisecond)

	// Big instances fill the slow client's buffers quickly.
	big := strings.Repeat("x", 32<<10)
	var last instance
	for i := 1; n.metric("heureka_push_slow_watchers_cut_total", "reason", "write_timeout") == 0; i++ {
		require.Less(t, i, 250, "the slow client was never cut")
		last = javaInstance("slow-app", i).with("metadata", map[string]any{"blob": big})
		n.register(last)
		ev := fast.next()
		require.Equal(t, "delta", ev.typ)
		require.Equal(t, "ADDED", actionOf(t, ev, "SLOW-APP", last.id()), "the fast client sees every change")
	}
	require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "stream") == 1 },
		20*time.Second, 5*time.Millisecond, "the slow client's stream is over")
	assert.GreaterOrEqual(t, n.metric("heureka_push_slow_watchers_cut_total", "reason", "backlog")+
		n.metric("heureka_push_slow_watchers_cut_total", "reason", "write_timeout"), float64(1))

	// The fast client still gets the next change.
	next := javaInstance("slow-app", 999)
	n.register(next)
	assert.Equal(t, "ADDED", actionOf(t, fast.next(), "SLOW-APP", next.id()))
}

// The stream needs the read role, is gated on readiness, and is capped.
func TestStreamAuthGateAndCap(t *testing.T) {
	cfg := testPushConfig()
	cfg.MaxStreams = 1
	n := startPush(t, pushOptions{push: cfg, mutate: func(c *httpapi.Config) { c.Auth = testAuth(t) }})
	res := n.get("/eureka/stream", "")
	assert.Equal(t, http.StatusUnauthorized, res.code)
	res = n.do(http.MethodGet, "/eureka/stream", nil, "Authorization", basic("writer", writerPass))
	assert.Equal(t, http.StatusForbidden, res.code)
	s := n.openStream("/eureka/stream", "Authorization", basic("reader", readerPass))
	assert.Equal(t, "snapshot", s.next().typ)
	res = n.do(http.MethodGet, "/eureka/stream", nil, "Authorization", basic("reader", readerPass))
	assert.Equal(t, http.StatusServiceUnavailable, res.code, "over MaxStreams")

	gated := startPush(t, pushOptions{mutate: func(c *httpapi.Config) { c.Ready = func() bool { return false } }})
	res = gated.get("/eureka/stream", "")
	assert.Equal(t, http.StatusForbidden, res.code)
	assert.Contains(t, string(res.body), "not ready")
}

// An idle stream gets keep-alive comments.
func TestStreamKeepAlive(t *testing.T) {
	cfg := testPushConfig()
	cfg.StreamKeepAlive = 20 * time.Millisecond
	n := startPush(t, pushOptions{push: cfg})
	res, cancel := n.streamRequest("/eureka/stream")
	defer cancel()
	defer res.Body.Close()
	buf := make([]byte, 0, 1<<16)
	require.Eventually(t, func() bool {
		b := make([]byte, 4096)
		k, _ := res.Body.Read(b)
		buf = append(buf, b[:k]...)
		return strings.Contains(string(buf), "\n: keep-alive\n\n")
	}, 20*time.Second, time.Millisecond)
}

// A stream connection takes a full fetch's tokens from the rate limiter.
func TestStreamRateLimited(t *testing.T) {
	n := startPush(t, pushOptions{mutate: func(c *httpapi.Config) {
		c.RateLimit = &httpapi.RateLimitConfig{BurstSize: 1, FetchAverageRate: 0.001, FullFetchAverageRate: 0.001}
	}})
	s := n.openStream("/eureka/stream")
	assert.Equal(t, "snapshot", s.next().typ)
	res := n.get("/eureka/stream", "")
	assert.Equal(t, http.StatusServiceUnavailable, res.code, "%s", res)
	assert.Contains(t, string(res.body), "rate limited")
}

// A watcher that asks for keep-alives more often than StreamKeepAlive gets
// them (here: every second, the floor, against an hour configured); a
// value that is not a positive duration is a 400.
func TestStreamKeepAliveAskedFor(t *testing.T) {
	cfg := testPushConfig()
	cfg.StreamKeepAlive = time.Hour
	n := startPush(t, pushOptions{push: cfg})
	res, cancel := n.streamRequest("/eureka/stream?keepalive=100ms")
	defer cancel()
	defer res.Body.Close()
	buf := make([]byte, 0, 1<<16)
	require.Eventually(t, func() bool {
		b := make([]byte, 4096)
		k, _ := res.Body.Read(b)
		buf = append(buf, b[:k]...)
		return strings.Contains(string(buf), "\n: keep-alive\n\n")
	}, 20*time.Second, time.Millisecond, "a keep-alive comes long before the configured hour")
	for _, v := range []string{"soon", "0s", "-1s"} {
		res := n.get("/eureka/stream?keepalive="+v, "")
		assert.Equal(t, http.StatusBadRequest, res.code, "keepalive=%s: %s", v, res)
		assert.Contains(t, string(res.body), "must be a positive duration")
	}
}

// rawStreams opens n streams over raw connections (no client goroutine)
// and reads each one's response head and snapshot.
func rawStreams(t *testing.T, n *pushNode, count int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range count {
		c, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = fmt.Fprintf(c, "GET /eureka/stream HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			if strings.HasPrefix(line, "event: snapshot") {
				break
			}
		}
		conns = append(conns, c)
	}
	return conns
}

// Over HTTP/1.1 a stream keeps no goroutine of its own on Linux (its
// connection waits in the streamer's poller) and one elsewhere (the one
// that sees its client leave), not the handler and net/http's reader: the
// memory of an idle watcher (BENCHMARKS.md). A client that leaves is seen
// at once either way. With StreamHijack off the handler's loop holds two
// per stream.
func TestStreamHijackedGoroutines(t *testing.T) {
	const streams = 200
	for _, hijack := range []bool{true, false} {
		t.Run(fmt.Sprintf("hijack=%t", hijack), func(t *testing.T) {
			cfg := testPushConfig()
			cfg.StreamHijack = hijack
			n := startPush(t, pushOptions{push: cfg})
			n.register(javaInstance("goroutine-app", 1))
			before := runtime.NumGoroutine()
			conns := rawStreams(t, n, streams)
			require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "stream") == streams },
				20*time.Second, 5*time.Millisecond)
			per := float64(runtime.NumGoroutine()-before) / streams
			if hijack {
				assert.Less(t, per, float64(httpapi.WaitingReaderGoroutines())+0.2, "goroutines per stream")
			} else {
				assert.Greater(t, per, 1.8, "goroutines per stream")
			}
			for _, c := range conns {
				_ = c.Close()
			}
			require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "stream") == 0 },
				20*time.Second, 5*time.Millisecond, "a client that leaves is seen at once")
		})
	}
}

// Bytes a stream's client sends are ignored: the stream goes on and the
// next change still arrives; the client's leaving afterwards is seen at
// once (where the poller runs, its connection waits in it again after the
// bytes are drained).
func TestStreamIgnoresClientBytes(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("bytes-app", 1))
	c, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "GET /eureka/stream HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	readUntil := func(prefix string) string {
		t.Helper()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		for {
			line, err := br.ReadString('\n')
			require.NoError(t, err, "the stream is still open")
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
	}
	readUntil("event: snapshot")
	streams := func() float64 { return n.metric("heureka_push_watchers", "kind", "stream") }
	require.Eventually(t, func() bool { return streams() == 1 }, 10*time.Second, 5*time.Millisecond)

	for i := range 2 {
		_, err = fmt.Fprintf(c, "unexpected %d\r\n", i)
		require.NoError(t, err)
		assert.Never(t, func() bool { return streams() != 1 }, 200*time.Millisecond, 10*time.Millisecond,
			"the stream is not closed by its client's bytes")
		n.register(javaInstance("bytes-app", 2+i))
		readUntil("event: delta")
		assert.Contains(t, readUntil("data:"), fmt.Sprintf("10.0.0.%d:bytes-app:8080", 2+i))
	}

	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return streams() == 0 }, 10*time.Second, 5*time.Millisecond,
		"a client that leaves is seen at once")
}

// A stream event's way to every stream it is queued for is timed once:
// one change read on every stream, one sample of
// heureka_push_stream_fanout_seconds; a change no stream watches, none.
func TestStreamFanoutTimed(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("fan-app", 1))
	type stream struct {
		c  net.Conn
		br *bufio.Reader
	}
	readUntil := func(s stream, prefix string) string {
		t.Helper()
		require.NoError(t, s.c.SetReadDeadline(time.Now().Add(10*time.Second)))
		for {
			line, err := s.br.ReadString('\n')
			require.NoError(t, err)
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
	}
	var streams []stream
	for range 20 {
		c, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
		require.NoError(t, err)
		defer c.Close()
		_, err = fmt.Fprintf(c, "GET /eureka/stream?app=FAN-APP HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		s := stream{c: c, br: bufio.NewReader(c)}
		readUntil(s, "event: snapshot")
		streams = append(streams, s)
	}
	require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "stream") == 20 },
		10*time.Second, 5*time.Millisecond)
	fanouts := func() float64 { return n.metric("heureka_push_stream_fanout_seconds") }
	before := fanouts()

	n.register(javaInstance("fan-app", 2))
	for _, s := range streams {
		readUntil(s, "event: delta")
		assert.Contains(t, readUntil(s, "data:"), "10.0.0.2:fan-app:8080")
	}
	require.Eventually(t, func() bool { return fanouts() == before+1 }, 10*time.Second, 5*time.Millisecond,
		"one fan-out timed for the change")

	n.register(javaInstance("other-app", 1)) // no stream watches it
	n.register(javaInstance("fan-app", 3))
	for _, s := range streams {
		readUntil(s, "event: delta")
		assert.Contains(t, readUntil(s, "data:"), "10.0.0.3:fan-app:8080")
	}
	require.Eventually(t, func() bool { return fanouts() == before+2 }, 10*time.Second, 5*time.Millisecond)
	assert.Never(t, func() bool { return fanouts() > before+2 }, 200*time.Millisecond, 10*time.Millisecond,
		"the change no stream watches is not a fan-out")
}
