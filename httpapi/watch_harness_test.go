package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/httpapi"
)

// pushNode is a real registry, view and API on a loopback port, with the
// handles the push tests need.
type pushNode struct {
	*harness
	view    *view.View
	reg     *actors.Registry
	metrics *prometheus.Registry
	srv     *httptest.Server
}

// pushOptions change what startPush builds.
type pushOptions struct {
	name   string              // node name; default "push-node"
	clock  *actors.ManualClock // shared by registry and view; nil: the system clock
	push   *httpapi.PushConfig // nil: testPushConfig
	mutate func(*httpapi.Config)
	// sndBuf, if positive, is the send buffer of every connection the
	// server accepts (to make a client that does not read block the
	// server's writes soon).
	sndBuf int
	// tls serves HTTPS (HTTP/1.1: the test server offers no HTTP/2).
	tls bool
	// server, if set, changes the http.Server before it starts.
	server func(*http.Server)
}

// testPushConfig is DefaultPushConfig with timers shrunk for tests.
func testPushConfig() *httpapi.PushConfig {
	c := httpapi.DefaultPushConfig()
	c.ChangeCheckInterval = 2 * time.Millisecond
	c.StreamCoalesce = 5 * time.Millisecond
	return &c
}

// startPush serves the API over a real registry and view, like startAPI,
// with the options of o; everything stops when the test ends.
func startPush(t *testing.T, o pushOptions) *pushNode {
	t.Helper()
	if o.name == "" {
		o.name = "push-node"
	}
	if o.push == nil {
		o.push = testPushConfig()
	}
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	vc := view.DefaultConfig(eureka.Encoders())
	rc := actors.DefaultConfig(o.name)
	if o.clock != nil {
		vc.Clock = o.clock
		rc.Clock = o.clock
	}
	v := view.New(vc)
	rc.Logger = log
	rc.Sinks = []actors.Sink{v}
	reg, err := actors.NewRegistry(rc)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	viewDone := make(chan struct{})
	go func() {
		defer close(viewDone)
		v.Run(ctx)
	}()
	metrics := prometheus.NewRegistry()
	cfg := httpapi.Config{Registry: reg, View: v, NodeName: o.name, Version: "test", Logger: log,
		Metrics: metrics, Push: o.push}
	if o.mutate != nil {
		o.mutate(&cfg)
	}
	srv := httptest.NewUnstartedServer(httpapi.New(cfg))
	if o.server != nil {
		o.server(srv.Config)
	}
	if o.sndBuf > 0 {
		srv.Listener = smallBufListener{Listener: srv.Listener, size: o.sndBuf}
	}
	tr := &http.Transport{DisableCompression: true}
	if o.tls {
		srv.StartTLS()
		tr = srv.Client().Transport.(*http.Transport).Clone()
		tr.DisableCompression = true
	} else {
		srv.Start()
	}
	h := &harness{t: t, base: srv.URL, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, logs: logs}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-viewDone
		reg.Close()
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	return &pushNode{harness: h, view: v, reg: reg, metrics: metrics, srv: srv}
}

// smallBufListener sets the send buffer of every accepted connection.
type smallBufListener struct {
	net.Listener
	size int
}

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(l.size)
	}
	return c, err
}

// metric returns the value of a gauge or counter family's series whose
// labels include labels (name, value pairs), a histogram's sample count;
// 0 when absent.
func (n *pushNode) metric(name string, labels ...string) float64 {
	n.t.Helper()
	mfs, err := n.metrics.Gather()
	require.NoError(n.t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// sseEvent is one Server-Sent Event as a client parses it.
type sseEvent struct {
	id, typ, data string
}

// sseClient is an open stream whose events a goroutine parses.
type sseClient struct {
	t      *testing.T
	res    *http.Response
	events chan sseEvent
	cancel context.CancelFunc
	done   chan struct{}
}

// openStream GETs path as an event stream; hdr holds header name/value
// pairs. It requires 200 and closes the stream when the test ends.
func (h *harness) openStream(path string, hdr ...string) *sseClient {
	h.t.Helper()
	return h.openStreamWith(http.MethodGet, path, nil, hdr...)
}

// openStreamWith is openStream with another method and a request body
// (POST …/stream: a repair digest).
func (h *harness) openStreamWith(method, path string, body []byte, hdr ...string) *sseClient {
	h.t.Helper()
	res, cancel := h.streamRequestWith(method, path, body, hdr...)
	require.Equal(h.t, http.StatusOK, res.StatusCode)
	require.Equal(h.t, "text/event-stream", res.Header.Get("Content-Type"))
	c := &sseClient{t: h.t, res: res, events: make(chan sseEvent, 1024), cancel: cancel, done: make(chan struct{})}
	go c.read()
	h.t.Cleanup(c.close)
	return c
}

// streamRequest sends a GET without a client timeout (a stream lasts).
func (h *harness) streamRequest(path string, hdr ...string) (*http.Response, context.CancelFunc) {
	h.t.Helper()
	return h.streamRequestWith(http.MethodGet, path, nil, hdr...)
}

// streamRequestWith is streamRequest with another method and a body.
func (h *harness) streamRequestWith(method, path string, body []byte, hdr ...string) (*http.Response, context.CancelFunc) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, bytes.NewReader(body))
	require.NoError(h.t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := h.client.Transport.RoundTrip(req)
	require.NoError(h.t, err)
	return res, cancel
}

// read parses events (comments are skipped) until the stream ends.
func (c *sseClient) read() {
	defer close(c.done)
	defer close(c.events)
	br := bufio.NewReaderSize(c.res.Body, 1<<20)
	var ev sseEvent
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data != nil || ev.typ != "" {
				ev.data = strings.Join(data, "\n")
				c.events <- ev
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		}
	}
}

// next returns the next event, failing the test if none comes in a
// generous time.
func (c *sseClient) next() sseEvent {
	c.t.Helper()
	select {
	case ev, ok := <-c.events:
		require.True(c.t, ok, "the stream ended")
		return ev
	case <-time.After(20 * time.Second):
		require.FailNow(c.t, "no event")
	}
	return sseEvent{}
}

// close ends the stream and waits for its reader.
func (c *sseClient) close() {
	c.cancel()
	_ = c.res.Body.Close()
	<-c.done
}

// drain discards whatever is left of r.
func drain(r io.Reader) { _, _ = io.Copy(io.Discard, r) }
