package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/httpapi"
)

// blockingGet starts a GET in the background and returns the channel its
// response comes on.
func (h *harness) blockingGet(path string, hdr ...string) <-chan response {
	out := make(chan response, 1)
	go func() {
		req, err := http.NewRequest(http.MethodGet, h.base+path, nil)
		if err != nil {
			out <- response{code: -1, body: []byte(err.Error())}
			return
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := h.client.Do(req)
		if err != nil {
			out <- response{code: -1, body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		out <- response{code: res.StatusCode, header: res.Header, body: b}
	}()
	return out
}

// await returns the response of a blockingGet, failing if it does not come
// in a generous time.
func await(t *testing.T, ch <-chan response) response {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(25 * time.Second):
		require.FailNow(t, "the blocking read did not answer")
	}
	return response{}
}

// The watchable reads answer with a weak ETag; plain reads are the view's
// prepared bytes as before; a matching If-None-Match without wait is 304.
func TestWatchETagOnPlainReads(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("etag-app", 1))
	snap := n.view.Snapshot()
	for _, tc := range []struct {
		path string
		doc  []byte
	}{
		{"/eureka/apps/ETAG-APP", mustDoc(snap.AppDocument("ETAG-APP", view.FormatJSON, false))},
		{"/eureka/v2/apps/etag-app", mustDoc(snap.AppDocument("ETAG-APP", view.FormatJSON, false))},
		{"/eureka/apps/delta", snap.Delta(view.FormatJSON, false)},
		{"/eureka/vips/etag-app", snap.VIP("etag-app", view.FormatJSON, false)},
		{"/eureka/svips/etag-app", snap.SVIP("etag-app", view.FormatJSON, false)},
	} {
		res := n.get(tc.path, ctJSON)
		require.Equal(t, http.StatusOK, res.code, tc.path)
		assert.Equal(t, string(tc.doc), string(res.body), tc.path)
		tag := res.header.Get("ETag")
		require.True(t, strings.HasPrefix(tag, `W/"`), "%s: ETag %q", tc.path, tag)

		// The gzip representation shares the tag.
		gz := n.do(http.MethodGet, tc.path, nil, "Accept", ctJSON, "Accept-Encoding", "gzip")
		assert.Equal(t, tag, gz.header.Get("ETag"), tc.path)

		nm := n.do(http.MethodGet, tc.path, nil, "Accept", ctJSON, "If-None-Match", tag)
		assert.Equal(t, http.StatusNotModified, nm.code, tc.path)
		assert.Equal(t, tag, nm.header.Get("ETag"), tc.path)
		assert.Empty(t, nm.body, tc.path)

		// Another format is another document: no match.
		xml := n.do(http.MethodGet, tc.path, nil, "If-None-Match", tag)
		assert.Equal(t, http.StatusOK, xml.code, tc.path)
		assert.NotEqual(t, tag, xml.header.Get("ETag"), tc.path)
	}
	// An unknown application is still Eureka's empty 404, without a tag.
	res := n.get("/eureka/apps/NO-SUCH-APP", ctJSON)
	assert.Equal(t, http.StatusNotFound, res.code)
	assert.Empty(t, res.body)
	assert.Empty(t, res.header.Get("ETag"))
}

func mustDoc(b []byte, ok bool) []byte {
	if !ok {
		panic("no such document")
	}
	return b
}

// A blocking read of unchanged content ends with 304 and the same tag.
func TestWatchBlockingReadTimesOutWith304(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("quiet-app", 1))
	for _, path := range []string{"/eureka/apps/QUIET-APP", "/eureka/apps/delta", "/eureka/vips/quiet-app"} {
		tag := n.get(path, ctJSON).header.Get("ETag")
		require.NotEmpty(t, tag)
		for _, wait := range []string{"1", "300ms"} {
			res := await(t, n.blockingGet(path+"?wait="+wait, "Accept", ctJSON, "If-None-Match", tag))
			assert.Equal(t, http.StatusNotModified, res.code, "%s wait=%s: %s", path, wait, res)
			assert.Equal(t, tag, res.header.Get("ETag"), path)
		}
	}
	assert.Equal(t, float64(6), n.metric("heureka_push_blocking_reads_total", "result", "not_modified"))
	assert.Equal(t, float64(0), n.metric("heureka_push_watchers", "kind", "blocking"))
}

// A blocking read answers 200 with the new document and tag as soon as
// what it serves changes, for each watchable resource.
func TestWatchBlockingReadWakesOnChange(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("busy-app", 1))
	cases := []struct{ path, wantInBody string }{
		{"/eureka/apps/BUSY-APP", "10.0.0.2:busy-app:8080"},
		{"/eureka/apps/delta", "10.0.0.3:busy-app:8080"},
		{"/eureka/vips/busy-app", "10.0.0.4:busy-app:8080"},
	}
	for i, tc := range cases {
		first := n.get(tc.path, ctJSON)
		tag := first.header.Get("ETag")
		// The wait is far longer than the test allows for: only the change
		// can answer it in time.
		ch := n.blockingGet(tc.path+"?wait=60s", "Accept", ctJSON, "If-None-Match", tag)
		require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "blocking") == 1 },
			20*time.Second, 5*time.Millisecond, "the read is not waiting")
		n.register(javaInstance("busy-app", i+2))
		res := await(t, ch)
		require.Equal(t, http.StatusOK, res.code, "%s: %s", tc.path, res)
		assert.Contains(t, string(res.body), tc.wantInBody, tc.path)
		assert.NotEqual(t, tag, res.header.Get("ETag"), tc.path)
		assert.Equal(t, n.get(tc.path, ctJSON).header.Get("ETag"), res.header.Get("ETag"), tc.path)
	}
	assert.Equal(t, float64(3), n.metric("heureka_push_blocking_reads_total", "result", "changed"))
}

// An application that goes while a read waits on it answers 404.
func TestWatchBlockingReadSeesApplicationGo(t *testing.T) {
	n := startPush(t, pushOptions{})
	inst := javaInstance("gone-app", 1)
	n.register(inst)
	tag := n.get("/eureka/apps/GONE-APP", ctJSON).header.Get("ETag")
	ch := n.blockingGet("/eureka/apps/GONE-APP?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "blocking") == 1 },
		20*time.Second, 5*time.Millisecond)
	require.Equal(t, http.StatusOK, n.do(http.MethodDelete, "/eureka/apps/GONE-APP/"+inst.id(), nil).code)
	res := await(t, ch)
	assert.Equal(t, http.StatusNotFound, res.code, "%s", res)
}

// Bad wait values are refused with 400 and say why; a wait above the cap
// is cut to it, not refused.
func TestWatchBadWait(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("wait-app", 1))
	for _, wait := range []string{"abc", "-1", "-5s", "", "10parsecs", "1e3"} {
		res := n.get("/eureka/apps/delta?wait="+wait, ctJSON)
		assert.Equal(t, http.StatusBadRequest, res.code, "wait=%q: %s", wait, res)
		assert.Contains(t, string(res.body), "wait", "wait=%q", wait)
	}
	// Without If-None-Match, a wait has nothing to wait for.
	res := n.get("/eureka/apps/delta?wait=3600", ctJSON)
	assert.Equal(t, http.StatusOK, res.code)
}

// Two independent nodes that hold the same content give the same tags,
// even when their delta versions (node-local) differ.
func TestWatchETagSameOnTwoNodes(t *testing.T) {
	a, b := twoNodeETags(t)
	assert.Equal(t, a, b)
}

// twoNodeETags builds two nodes with the same content but different
// histories and returns the tags each gives for the same reads.
func twoNodeETags(t *testing.T) (a, b []string) {
	t.Helper()
	clock := actors.NewManualClock(time.UnixMilli(1754500000000))
	na := startPush(t, pushOptions{name: "node-a", clock: clock})
	nb := startPush(t, pushOptions{name: "node-b", clock: clock})
	// nb has a history na has not: an instance that came and went, then
	// its delta cleared (as after a node's initial sync).
	other := javaInstance("other-app", 9)
	nb.register(other)
	require.Equal(t, http.StatusOK, nb.do(http.MethodDelete, "/eureka/apps/OTHER-APP/"+other.id(), nil).code)
	nb.view.ClearDelta()
	for _, n := range []*pushNode{na, nb} {
		n.register(javaInstance("same-app", 1))
		n.register(javaInstance("same-app", 2))
	}
	require.NotEqual(t, na.view.Snapshot().Version(), nb.view.Snapshot().Version(), "the histories should differ")
	for _, path := range []string{"/eureka/apps/SAME-APP", "/eureka/apps/delta", "/eureka/vips/same-app"} {
		for _, accept := range []string{ctJSON, ""} {
			ra, rb := na.get(path, accept), nb.get(path, accept)
			require.Equal(t, http.StatusOK, ra.code)
			require.Equal(t, http.StatusOK, rb.code)
			a = append(a, path+" "+ra.header.Get("ETag"))
			b = append(b, path+" "+rb.header.Get("ETag"))
		}
	}
	return a, b
}

// Auth and the readiness gate run before a blocking read.
func TestWatchBlockingReadAuthAndGate(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	n := startPush(t, pushOptions{mutate: func(c *httpapi.Config) {
		c.Auth = testAuth(t)
		c.Ready = ready.Load
	}})
	as := []string{"Authorization", basic("reader", readerPass), "Accept", ctJSON}
	tag := n.do(http.MethodGet, "/eureka/apps/delta", nil, as...).header.Get("ETag")
	require.NotEmpty(t, tag)
	res := n.do(http.MethodGet, "/eureka/apps/delta?wait=30", nil, "If-None-Match", tag)
	assert.Equal(t, http.StatusUnauthorized, res.code)
	res = n.do(http.MethodGet, "/eureka/apps/delta?wait=30", nil, "Authorization", basic("writer", writerPass), "If-None-Match", tag)
	assert.Equal(t, http.StatusForbidden, res.code)

	ready.Store(false)
	res = n.do(http.MethodGet, "/eureka/apps/delta?wait=30", nil, append(as, "If-None-Match", tag)...)
	assert.Equal(t, http.StatusForbidden, res.code)
	assert.Contains(t, string(res.body), "not ready")
}

// The server's Shutdown answers waiting reads (304) and ends streams
// instead of waiting for them.
func TestWatchShutdownEndsWaits(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("stop-app", 1))
	tag := n.get("/eureka/apps/STOP-APP", ctJSON).header.Get("ETag")
	s := n.openStream("/eureka/stream")
	require.Equal(t, "snapshot", s.next().typ)
	ch := n.blockingGet("/eureka/apps/STOP-APP?wait=60", "Accept", ctJSON, "If-None-Match", tag)
	require.Eventually(t, func() bool { return n.metric("heureka_push_watchers", "kind", "blocking") == 1 },
		20*time.Second, 5*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, n.srv.Config.Shutdown(ctx), "Shutdown waited for the long requests")
	res := await(t, ch)
	assert.Equal(t, http.StatusNotModified, res.code, "%s", res)
	select {
	case _, ok := <-s.events:
		assert.False(t, ok, "no event after the shutdown")
	case <-time.After(20 * time.Second):
		require.FailNow(t, "the stream did not end")
	}
}
