package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
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

// rawConn is a client's HTTP/1.1 connection, read response by response,
// every byte of each kept.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	rec *bytes.Buffer
	br  *bufio.Reader
}

// recordingReader keeps what it reads.
type recordingReader struct {
	r   io.Reader
	rec *bytes.Buffer
}

func (r recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.rec.Write(p[:n])
	return n, err
}

func dialRaw(t *testing.T, n *pushNode) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	rec := &bytes.Buffer{}
	return &rawConn{t: t, c: c, rec: rec, br: bufio.NewReader(recordingReader{c, rec})}
}

// send writes a GET of path with the header lines given.
func (rc *rawConn) send(path string, hdr ...string) {
	rc.t.Helper()
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	_, err := io.WriteString(rc.c, req+"\r\n")
	require.NoError(rc.t, err)
}

// receive reads one response; raw is its bytes as they came.
func (rc *rawConn) receive() (res *http.Response, body []byte, raw string) {
	rc.t.Helper()
	require.NoError(rc.t, rc.c.SetReadDeadline(time.Now().Add(20*time.Second)))
	res, err := http.ReadResponse(rc.br, nil)
	require.NoError(rc.t, err)
	body, err = io.ReadAll(res.Body)
	require.NoError(rc.t, err)
	raw = rc.rec.String()
	rc.rec.Reset()
	return res, body, raw
}

// waiting waits until the node counts want waiting blocking reads.
func (n *pushNode) waiting(want float64) {
	n.t.Helper()
	require.Eventually(n.t, func() bool { return n.metric("heureka_push_watchers", "kind", "blocking") == want },
		20*time.Second, 5*time.Millisecond, "blocking reads waiting")
}

// watchedApp is an application of a test node that blocking reads watch:
// each instance registered is a change of its document.
type watchedApp struct {
	n    *pushNode
	name string // lower case, as javaInstance takes it
	path string // GET path of the application
	last int    // instances registered
	// register registers instance i (default: n.register).
	register func(i int)
}

// watchApp registers the first instance of the application name on n.
func watchApp(n *pushNode, name string) *watchedApp {
	a := &watchedApp{n: n, name: name, path: "/eureka/apps/" + strings.ToUpper(name)}
	a.register = func(i int) { n.register(javaInstance(name, i)) }
	a.change()
	return a
}

// change registers the application's next instance.
func (a *watchedApp) change() {
	a.last++
	a.register(a.last)
}

// tag reads the application's ETag (JSON).
func (a *watchedApp) tag(hdr ...string) string {
	a.n.t.Helper()
	res := a.n.do(http.MethodGet, a.path, nil, append([]string{"Accept", ctJSON}, hdr...)...)
	require.Equal(a.n.t, http.StatusOK, res.code, "%s", res)
	return res.header.Get("ETag")
}

// parkAndAnswer sends a blocking read of the application with tag on rc
// (hdr: more header lines), has a change answer it once it is parked,
// and returns the 200 and its body: rc's connection is then an answered
// parked one, idle.
func (a *watchedApp) parkAndAnswer(rc *rawConn, tag string, hdr ...string) (*http.Response, []byte) {
	a.n.t.Helper()
	rc.send(a.path+"?wait=60", append([]string{"Accept", ctJSON, "If-None-Match", tag}, hdr...)...)
	a.n.waiting(1)
	a.change()
	res, body, _ := rc.receive()
	require.Equal(a.n.t, http.StatusOK, res.StatusCode)
	require.NotEqual(a.n.t, tag, res.Header.Get("ETag"))
	a.n.waiting(0)
	return res, body
}

// answered starts a node with o watching the application name, and
// returns it with a connection whose parked read a change answered, and
// the tag that answer gave.
func answered(t *testing.T, o pushOptions, name string) (*watchedApp, *rawConn, string) {
	t.Helper()
	a := watchApp(startPush(t, o), name)
	rc := dialRaw(t, a.n)
	res, _ := a.parkAndAnswer(rc, a.tag())
	return a, rc, res.Header.Get("ETag")
}

// dateLine is the Date header of a response, which withoutDate blanks.
var dateLine = regexp.MustCompile(`(?m)^Date: [^\r]*\r$`)

// withoutDate is a raw response with its Date blanked, to compare bytes.
func withoutDate(raw string) string { return dateLine.ReplaceAllString(raw, "Date: -\r") }

// Over HTTP/1.1 a parked blocking read keeps no goroutine on Linux (its
// connection waits in the parker's poller) and one elsewhere (the one
// that sees its client leave), not the handler and net/http's reader;
// one change answers them all, in one timed fan-out; a client that leaves
// is uncounted at once. With BlockingHijack off the handler's wait holds two per read.
func TestWatchParkedGoroutines(t *testing.T) {
	const reads = 200
	for _, hijack := range []bool{true, false} {
		t.Run(fmt.Sprintf("hijack=%t", hijack), func(t *testing.T) {
			cfg := testPushConfig()
			cfg.BlockingHijack = hijack
			n := startPush(t, pushOptions{push: cfg})
			n.register(javaInstance("park-app", 1))
			tag := n.get("/eureka/apps/PARK-APP", ctJSON).header.Get("ETag")
			before := runtime.NumGoroutine()
			conns := make([]*rawConn, reads)
			for i := range conns {
				conns[i] = dialRaw(t, n)
				conns[i].send("/eureka/apps/PARK-APP?wait=60", "Accept", ctJSON, "If-None-Match", tag)
			}
			n.waiting(reads)
			per := float64(runtime.NumGoroutine()-before) / reads
			if hijack {
				assert.Less(t, per, float64(httpapi.WaitingReaderGoroutines())+0.2, "goroutines per waiting read")
			} else {
				assert.Greater(t, per, 1.8, "goroutines per waiting read")
			}
			// Half the clients leave; the other half get the change.
			for _, rc := range conns[reads/2:] {
				_ = rc.c.Close()
			}
			n.waiting(reads / 2)
			n.register(javaInstance("park-app", 2))
			var newTag string
			for _, rc := range conns[:reads/2] {
				res, body, _ := rc.receive()
				require.Equal(t, http.StatusOK, res.StatusCode)
				assert.Contains(t, string(body), "10.0.0.2:park-app:8080")
				if newTag == "" {
					newTag = res.Header.Get("ETag")
				}
				assert.Equal(t, newTag, res.Header.Get("ETag"))
			}
			assert.NotEqual(t, tag, newTag)
			n.waiting(0)
			assert.Equal(t, float64(reads/2), n.metric("heureka_push_blocking_reads_total", "result", "changed"))
			// One fan-out answered the parked reads, and was timed; the
			// handlers' waits are not fan-outs.
			fanouts := 0.0
			if hijack {
				fanouts = 1
			}
			assert.Equal(t, fanouts, n.metric("heureka_push_blocking_fanout_seconds"))
		})
	}
}

// An answered connection whose client asks nothing more is closed at the
// server's idle timeout, as net/http closes an idle connection (where the
// poller runs, by its sweep, within about a second of it); a client that
// asks again at once is served.
func TestWatchParkedIdleTimeout(t *testing.T) {
	a, rc, tag := answered(t, pushOptions{server: func(s *http.Server) { s.IdleTimeout = 300 * time.Millisecond }}, "idle-app")
	res, body := a.parkAndAnswer(rc, tag)
	assert.Contains(t, string(body), fmt.Sprintf("10.0.0.%d:idle-app:8080", a.last))
	assert.NotEqual(t, tag, res.Header.Get("ETag"))

	start := time.Now()
	require.NoError(t, rc.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := rc.br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "closed by the server, not by the test's deadline")
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "not before the idle timeout")
	a.n.waiting(0)
}

// After a parked read is answered, the connection goes back to the
// server: the client's next request on it (a second blocking read, here
// one that ends with 304, then a plain read) is served like any other.
// A request pipelined behind a parked read is kept and served after it.
func TestWatchParkedKeepAlive(t *testing.T) {
	a := watchApp(startPush(t, pushOptions{}), "alive-app")
	n, path := a.n, a.path
	rc := dialRaw(t, n)
	res, body := a.parkAndAnswer(rc, a.tag())
	assert.Contains(t, string(body), "10.0.0.2:alive-app:8080")
	newTag := res.Header.Get("ETag")

	rc.send(path+"?wait=300ms", "Accept", ctJSON, "If-None-Match", newTag)
	res, body, _ = rc.receive()
	assert.Equal(t, http.StatusNotModified, res.StatusCode)
	assert.Equal(t, newTag, res.Header.Get("ETag"))
	assert.Empty(t, body)

	rc.send(path, "Accept", ctJSON)
	res, _, _ = rc.receive()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, newTag, res.Header.Get("ETag"))

	// Pipelined: a blocking read, then a plain read behind it.
	rc.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", newTag)
	n.waiting(1)
	rc.send(path, "Accept", ctJSON)
	a.change()
	res, body, _ = rc.receive()
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, string(body), "10.0.0.3:alive-app:8080")
	third := res.Header.Get("ETag")
	res, _, _ = rc.receive()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, third, res.Header.Get("ETag"))
	assert.Equal(t, float64(2), n.metric("heureka_push_blocking_reads_total", "result", "changed"))
	assert.Equal(t, float64(1), n.metric("heureka_push_blocking_reads_total", "result", "not_modified"))
	n.waiting(0)
}

// The answers a parked read gets are, byte for byte but the Date, those a
// waiting handler writes: a new document (gzip or not, JSON or XML), 404
// for an application gone, 304 at the end of the wait, and 403 when the
// node stops being ready.
func TestWatchParkedAnswersAsTheHandler(t *testing.T) {
	clock := actors.NewManualClock(time.UnixMilli(1754500000000))
	var ready atomic.Bool
	ready.Store(true)
	nodes := map[bool]*pushNode{}
	for _, hijack := range []bool{true, false} {
		cfg := testPushConfig()
		cfg.BlockingHijack = hijack
		nodes[hijack] = startPush(t, pushOptions{name: "same-node", clock: clock, push: cfg,
			mutate: func(c *httpapi.Config) { c.Ready = ready.Load }})
	}
	// answers makes the same blocking reads on both nodes, then changes
	// both, and returns each node's answers.
	answers := func(reads [][]string, change func(n *pushNode)) map[bool][]string {
		conns := map[bool][]*rawConn{}
		for hijack, n := range nodes {
			for _, hdr := range reads {
				rc := dialRaw(t, n)
				rc.send(hdr[0], hdr[1:]...)
				conns[hijack] = append(conns[hijack], rc)
			}
		}
		for _, n := range nodes {
			n.waiting(float64(len(reads)))
		}
		for _, n := range nodes {
			change(n)
		}
		out := map[bool][]string{}
		for hijack, n := range nodes {
			for _, rc := range conns[hijack] {
				_, _, raw := rc.receive()
				out[hijack] = append(out[hijack], withoutDate(raw))
			}
			n.waiting(0)
		}
		return out
	}
	for _, n := range nodes {
		n.register(javaInstance("byte-app", 1))
	}
	const path = "/eureka/apps/BYTE-APP"
	tagJSON := nodes[true].get(path, ctJSON).header.Get("ETag")
	tagXML := nodes[true].get(path, "").header.Get("ETag")
	require.Equal(t, tagJSON, nodes[false].get(path, ctJSON).header.Get("ETag"))
	reads := [][]string{
		{path + "?wait=60", "Accept", ctJSON, "If-None-Match", tagJSON},
		{path + "?wait=60", "Accept", ctJSON, "Accept-Encoding", "gzip", "If-None-Match", tagJSON},
		{path + "?wait=60", "If-None-Match", tagXML},
	}
	got := answers(reads, func(n *pushNode) { n.register(javaInstance("byte-app", 2)) })
	assert.Equal(t, got[false], got[true], "a change")
	assert.Contains(t, got[true][0], "HTTP/1.1 200 OK\r\n")

	tagJSON = nodes[true].get(path, ctJSON).header.Get("ETag")
	short := [][]string{{path + "?wait=200ms", "Accept", ctJSON, "If-None-Match", tagJSON}}
	got = answers(short, func(*pushNode) {})
	assert.Equal(t, got[false], got[true], "the end of the wait")
	assert.Contains(t, got[true][0], "HTTP/1.1 304 Not Modified\r\n")

	const gonePath = "/eureka/apps/GONE-BYTE-APP"
	gone := javaInstance("gone-byte-app", 1)
	for _, n := range nodes {
		n.register(gone)
	}
	goneTag := nodes[true].get(gonePath, ctJSON).header.Get("ETag")
	got = answers([][]string{{gonePath + "?wait=60", "Accept", ctJSON, "If-None-Match", goneTag}}, func(n *pushNode) {
		require.Equal(t, http.StatusOK, n.do(http.MethodDelete, gonePath+"/"+gone.id(), nil).code)
	})
	assert.Equal(t, got[false], got[true], "the application gone")
	assert.Contains(t, got[true][0], "HTTP/1.1 404 Not Found\r\n")

	got = answers([][]string{{path + "?wait=60", "Accept", ctJSON, "If-None-Match", tagJSON}}, func(n *pushNode) {
		ready.Store(false)
		n.register(javaInstance("byte-app", 3)) // a change makes the waiters look
	})
	ready.Store(true)
	assert.Equal(t, got[false], got[true], "not ready")
	assert.Contains(t, got[true][0], "HTTP/1.1 403 Forbidden\r\n")
	assert.Contains(t, got[true][0], "not ready")
}

// The server's Shutdown answers parked reads 304 with "Connection: close"
// and closes the connections of answered ones that wait for their
// client's next request at once, as net/http closes its idle ones.
func TestWatchParkedShutdown(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("down-app", 1))
	const path = "/eureka/apps/DOWN-APP"
	tag := n.get(path, ctJSON).header.Get("ETag")
	idle, parked := dialRaw(t, n), dialRaw(t, n)
	idle.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	n.waiting(1)
	n.register(javaInstance("down-app", 2))
	res, _, _ := idle.receive()
	require.Equal(t, http.StatusOK, res.StatusCode)
	parked.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", res.Header.Get("ETag"))
	n.waiting(1)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, n.srv.Config.Shutdown(ctx))
	assert.Less(t, time.Since(start), 4*time.Second, "Shutdown waited (net/http takes a new connection for idle after 5s)")
	res, _, raw := parked.receive()
	assert.Equal(t, http.StatusNotModified, res.StatusCode)
	assert.Contains(t, raw, "\r\nConnection: close\r\n")
	for name, rc := range map[string]*rawConn{"idle": idle, "parked": parked} {
		require.NoError(t, rc.c.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := rc.br.ReadByte()
		assert.ErrorIs(t, err, io.EOF, name)
	}
}

// Over TLS (HTTP/1.1) parked reads are answered and their connections go
// back to the server as over plain TCP.
func TestWatchParkedOverTLS(t *testing.T) {
	n := startPush(t, pushOptions{tls: true})
	n.register(javaInstance("tls-app", 1))
	const path = "/eureka/apps/TLS-APP"
	tag := n.get(path, ctJSON).header.Get("ETag")
	require.NotEmpty(t, tag)
	ch := n.blockingGet(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	n.waiting(1)
	assert.Zero(t, n.metric("heureka_http_requests_in_flight"), "parked: no handler runs")
	n.register(javaInstance("tls-app", 2))
	res := await(t, ch)
	require.Equal(t, http.StatusOK, res.code, "%s", res)
	assert.Contains(t, string(res.body), "10.0.0.2:tls-app:8080")
	newTag := res.header.Get("ETag")
	require.NotEqual(t, tag, newTag)
	res = await(t, n.blockingGet(path+"?wait=300ms", "Accept", ctJSON, "If-None-Match", newTag))
	assert.Equal(t, http.StatusNotModified, res.code, "%s", res)
	assert.Equal(t, newTag, res.header.Get("ETag"))
	res = n.get(path, ctJSON)
	assert.Equal(t, http.StatusOK, res.code)
	assert.Equal(t, float64(1), n.metric("heureka_push_blocking_reads_total", "result", "changed"))
	assert.Equal(t, float64(1), n.metric("heureka_push_blocking_reads_total", "result", "not_modified"))
	n.waiting(0)
}

// An answer the kernel does not take at once (a client that does not
// read, a large document) is finished by its connection's goroutine: the
// writers answer the other parked reads meanwhile, and the slow client,
// once it reads, gets the whole answer, and its connection serves its
// next read.
func TestWatchParkedSlowClientGetsTheWholeAnswer(t *testing.T) {
	n := startPush(t, pushOptions{sndBuf: 4096})
	const path = "/eureka/apps/HEAVY-APP"
	big := strings.Repeat("x", 32<<10)
	for i := 1; i <= 40; i++ { // a document of about 1.3 MB
		n.register(javaInstance("heavy-app", i).with("metadata", map[string]any{"blob": big}))
	}
	tag := n.get(path, ctJSON).header.Get("ETag")
	slow, fast := dialRaw(t, n), dialRaw(t, n)
	for _, rc := range []*rawConn{slow, fast} {
		rc.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	}
	n.waiting(2)
	n.register(javaInstance("heavy-app", 41))
	res, body, _ := fast.receive()
	require.Equal(t, http.StatusOK, res.StatusCode)
	newTag := res.Header.Get("ETag")
	require.Greater(t, len(body), 1<<20)

	time.Sleep(100 * time.Millisecond) // the slow client reads only now
	got, gotBody, _ := slow.receive()
	require.Equal(t, http.StatusOK, got.StatusCode)
	assert.Equal(t, newTag, got.Header.Get("ETag"))
	assert.Equal(t, body, gotBody, "the same bytes")
	n.waiting(0)

	slow.send(path+"?wait=60", "Accept", ctJSON, "If-None-Match", newTag)
	n.waiting(1)
	n.register(javaInstance("heavy-app", 42))
	got, gotBody, _ = slow.receive()
	require.Equal(t, http.StatusOK, got.StatusCode)
	assert.Contains(t, string(gotBody), "10.0.0.42:heavy-app:8080")
}
