package httpapi_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingBody counts the bytes read of a body as they came.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// gzipBody inflates a body from its first Read on (the server sends the
// gzip header with its first batch).
type gzipBody struct {
	src io.ReadCloser
	zr  *gzip.Reader
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.zr == nil {
		zr, err := gzip.NewReader(g.src)
		if err != nil {
			return 0, err
		}
		g.zr = zr
	}
	return g.zr.Read(p)
}

func (g *gzipBody) Close() error { return g.src.Close() }

// openGzipStream opens path as a follower of this release does (the
// encoding parameter and Accept-Encoding: gzip) and reads its events
// through gzip; the counter sees the bytes as they came.
func (h *harness) openGzipStream(path string) (*sseClient, *countingBody) {
	h.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	res, cancel := h.streamRequest(path+sep+"encoding=gzip", "Accept", "text/event-stream", "Accept-Encoding", "gzip")
	require.Equal(h.t, http.StatusOK, res.StatusCode)
	require.Equal(h.t, "text/event-stream", res.Header.Get("Content-Type"))
	require.Equal(h.t, "gzip", res.Header.Get("Content-Encoding"), "the stream is compressed when asked")
	require.Contains(h.t, res.Header.Values("Vary"), "Accept-Encoding")
	raw := &countingBody{ReadCloser: res.Body}
	res.Body = &gzipBody{src: raw}
	c := &sseClient{t: h.t, res: res, events: make(chan sseEvent, 1024), cancel: cancel, done: make(chan struct{})}
	go c.read()
	h.t.Cleanup(c.close)
	return c, raw
}

// A reader that asks gets the stream gzip-compressed, each batch flushed
// whole: the snapshot and every delta arrive as they are published, not
// when more bytes come, on both of the stream's writers (the shared
// writers of hijacked connections, and the handler's own loop). The
// events are those of the plain stream, in fewer bytes.
func TestStreamGzipWhenAsked(t *testing.T) {
	for _, hijack := range []bool{true, false} {
		t.Run(map[bool]string{true: "hijacked", false: "handler"}[hijack], func(t *testing.T) {
			pc := testPushConfig()
			pc.StreamHijack = hijack
			n := startPush(t, pushOptions{push: pc})
			for i := range 100 { // a snapshot over 64 KB: compressed by its connection's goroutine
				n.register(javaInstance("zip-app", i))
			}
			plain := n.openStream("/eureka/stream")
			s, raw := n.openGzipStream("/eureka/stream")
			snap := s.next()
			require.Equal(t, "snapshot", snap.typ)
			assert.Equal(t, string(n.get("/eureka/apps", ctJSON).body), snap.data)
			assert.Equal(t, plain.next(), snap, "the same event as the plain stream's")
			data := len(snap.data)

			for i := 100; i < 105; i++ {
				added := javaInstance("zip-app", i)
				n.register(added)
				ev := s.next() // no later write needed to decode it
				require.Equal(t, "delta", ev.typ)
				assert.Equal(t, "ADDED", actionOf(t, ev, "ZIP-APP", added.id()))
				assert.Equal(t, plain.next(), ev, "the same event as the plain stream's")
				data += len(ev.data)
			}
			wire := raw.n.Load()
			t.Logf("%d bytes on the wire for a snapshot of 100 instances and 5 deltas of %d bytes of data", wire, data)
			assert.Less(t, 3*wire, int64(data), "compressed")
		})
	}
}

// Every other reader gets the plain stream, the frames shared by every
// watcher, whatever its Accept-Encoding says: a follower of the previous
// release (it sends no encoding parameter; Go's transport adds
// Accept-Encoding: gzip by itself and would inflate a gzip answer behind
// its back), a browser's EventSource, and a reader that asks for gzip but
// does not accept it.
func TestStreamPlainUnlessAsked(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("plain-app", 1))
	want := string(n.get("/eureka/apps", ctJSON).body)

	// The previous release's federation follower, header for header, over
	// a Go transport with its compression on.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.base+"/eureka/stream?keepalive=333ms", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", "Java-EurekaClient-RemoteRegion/heureka")
	req.Header.Set("DiscoveryIdentity-Name", "DefaultServer")
	req.Header.Set("DiscoveryIdentity-Version", "1.0")
	res, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Empty(t, res.Header.Get("Content-Encoding"))
	assert.False(t, res.Uncompressed, "the transport asked for gzip; the server answered plain")
	c := &sseClient{t: t, res: res, events: make(chan sseEvent, 16), cancel: cancel, done: make(chan struct{})}
	go c.read()
	t.Cleanup(c.close)
	ev := c.next()
	assert.Equal(t, "snapshot", ev.typ)
	assert.Equal(t, want, ev.data)

	for _, c := range []struct {
		path string
		hdr  []string
	}{
		// A browser's EventSource.
		{"/eureka/stream", []string{"Accept", "text/event-stream", "Cache-Control", "no-cache", "Accept-Encoding", "gzip, deflate, br, zstd"}},
		// Asks, but accepts no gzip.
		{"/eureka/stream?encoding=gzip", []string{"Accept-Encoding", "identity"}},
		{"/eureka/stream?encoding=gzip", []string{"Accept-Encoding", "gzip;q=0"}},
	} {
		res, cancel := n.streamRequest(c.path, c.hdr...)
		assert.Equal(t, http.StatusOK, res.StatusCode, "%s %v", c.path, c.hdr)
		assert.Empty(t, res.Header.Get("Content-Encoding"), "%s %v: plain", c.path, c.hdr)
		b := make([]byte, len("id: "))
		_, err := io.ReadFull(res.Body, b)
		assert.NoError(t, err)
		assert.Equal(t, "id: ", string(b), "%s %v: the plain frames", c.path, c.hdr)
		cancel()
		res.Body.Close()
	}

	// HEAD says what a GET would get.
	head := func(path, accept string) string {
		req, err := http.NewRequest(http.MethodHead, n.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", accept)
		res, err := n.client.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.Header.Get("Content-Encoding")
	}
	assert.Equal(t, "gzip", head("/eureka/stream?encoding=gzip", "gzip"))
	assert.Empty(t, head("/eureka/stream", "gzip"))
}

// The keep-alives of a compressed stream come compressed and flushed, so
// that a follower that judges liveness by them sees each one.
func TestStreamGzipKeepAlive(t *testing.T) {
	pc := testPushConfig()
	pc.StreamKeepAlive = 20 * time.Millisecond
	for _, hijack := range []bool{true, false} {
		pc := *pc
		pc.StreamHijack = hijack
		n := startPush(t, pushOptions{push: &pc})
		_, raw := n.openGzipStream("/eureka/stream")
		var last int64
		for range 3 {
			require.Eventually(t, func() bool { return raw.n.Load() > last }, 5*time.Second, time.Millisecond,
				"hijack %v: a keep-alive arrives", hijack)
			last = raw.n.Load()
		}
	}
}
