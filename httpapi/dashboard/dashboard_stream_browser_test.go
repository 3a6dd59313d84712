package dashboard_test

// The dashboard's updates through the change stream, in a real browser:
// the page is served by the full API (httpapi.New with the dashboard
// mounted, over a real registry and view) with a polling interval of an
// hour, so a registration that shows up on the page within the test came
// through the stream; a page that had silently gone back to polling would
// show it an hour late and fail the test. A stream the server refuses (too
// many streams open) makes the page poll instead.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/httpapi/dashboard"
)

// noPoll is a polling interval far longer than any test: only the stream
// can bring a change in time.
const noPoll = time.Hour

// apiServer is the Eureka API with the dashboard mounted, on loopback.
type apiServer struct {
	url     string
	streams atomic.Int64 // GET /eureka/stream requests received
	states  atomic.Int64 // GET /dashboard/api/state requests received
	// drop closes every client connection, the page's stream included.
	drop func()
}

// startAPIServer serves the API and the dashboard (polling every refresh)
// over a real registry and view; mutate changes the API's config.
func startAPIServer(t *testing.T, refresh time.Duration, mutate func(*httpapi.Config)) *apiServer {
	t.Helper()
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	rc := actors.DefaultConfig("dash-stream")
	rc.Logger = slog.New(slog.DiscardHandler)
	rc.Sinks = []actors.Sink{v}
	reg, err := actors.NewRegistry(rc)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	viewDone := make(chan struct{})
	go func() {
		defer close(viewDone)
		v.Run(ctx)
	}()
	push := httpapi.DefaultPushConfig()
	push.StreamCoalesce = 5 * time.Millisecond
	cfg := httpapi.Config{Registry: reg, View: v, NodeName: "dash-stream", Version: "1.0.0-test",
		Logger: slog.New(slog.DiscardHandler), Metrics: prometheus.NewRegistry(), Push: &push,
		Dashboard: dashboard.New(dashboard.Config{View: v, Registry: reg, NodeName: "dash-stream",
			Version: "1.0.0-test", Refresh: refresh})}
	if mutate != nil {
		mutate(&cfg)
	}
	api := httpapi.New(cfg)
	s := &apiServer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/eureka/stream":
			s.streams.Add(1)
		case "/dashboard/api/state":
			s.states.Add(1)
		}
		api.ServeHTTP(w, r)
	}))
	// Every connection the server accepted, the hijacked stream's too
	// (httptest forgets a connection once hijacked): dropping them all is
	// what a proxy that restarts does.
	var connsMu sync.Mutex
	conns := map[net.Conn]bool{}
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		connsMu.Lock()
		defer connsMu.Unlock()
		if st == http.StateNew {
			conns[c] = true
		} else if st == http.StateClosed {
			delete(conns, c)
		}
	}
	srv.Start()
	dropAll := func() {
		connsMu.Lock()
		defer connsMu.Unlock()
		for c := range conns {
			_ = c.Close()
			delete(conns, c)
		}
	}
	s.url, s.drop = srv.URL, dropAll
	t.Cleanup(func() {
		dropAll() // the page's stream
		srv.Close()
		cancel()
		<-viewDone
		reg.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return s
}

// streamEvents is how many stream events the page has received.
func (b *browser) streamEvents() int {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.dataset.streamEvents || '0'`))
	if err != nil {
		b.failed("reading data-stream-events", err)
	}
	n, err := strconv.Atoi(s)
	require.NoError(b.t, err)
	return n
}

// The page learns of registrations and cancellations through the stream.
func TestDashboardInBrowserUpdatesThroughStream(t *testing.T) {
	s := startAPIServer(t, noPoll, nil)
	register(t, s.url, instance{app: "GREETER", id: "greeter-1", zone: "zone-a"})

	b := openBrowser(t)
	b.open(s.url)
	b.waitFor("greeter-1 is listed", `!!document.querySelector('#apps tr[data-id="greeter-1"]')`)
	b.waitFor("the page is updated through the stream", `document.documentElement.dataset.updates === 'stream'`)
	b.waitFor("the stream's first event arrived", `Number(document.documentElement.dataset.streamEvents) >= 1`)
	assert.Contains(t, b.text("#refreshed"), "registry changes live")
	before := b.streamEvents()
	states := s.states.Load()

	// A registration after the page has loaded: no poll is due for an
	// hour, so only the stream can bring it.
	register(t, s.url, instance{app: "BILLING", id: "billing-1", zone: "zone-b", metadata: map[string]string{"team": "payments"}})
	b.waitFor("billing-1 appears", `(() => {
		const row = document.querySelector('#apps tr[data-id="billing-1"]');
		return !!row && row.innerText.includes('team=payments');
	})()`)
	assert.Greater(t, b.streamEvents(), before, "the change came as a stream event")
	assert.Greater(t, s.states.Load(), states, "the event made the page read the state")
	assert.Contains(t, b.text("#app-count"), "2 instances")

	// A cancellation: the row goes.
	code, body := call(t, http.MethodDelete, s.url+"/eureka/apps/GREETER/greeter-1", "")
	require.Equal(t, http.StatusOK, code, body)
	b.waitFor("greeter-1's row is gone", `!document.querySelector('#apps tr[data-id="greeter-1"]')`)
	assert.Equal(t, "stream", b.updates(), "the page is still on the stream")
	assert.Equal(t, int64(1), s.streams.Load(), "one stream so far: no reconnection")

	// The connection drops (a proxy restarts): the browser reconnects by
	// itself, resuming with Last-Event-ID, and changes come through the
	// new stream.
	s.drop()
	require.Eventually(t, func() bool { return s.streams.Load() >= 2 }, time.Minute, 20*time.Millisecond,
		"the page opened the stream again")
	b.waitFor("the page is on the stream again", `document.documentElement.dataset.updates === 'stream'`)
	before = b.streamEvents()
	register(t, s.url, instance{app: "GREETER", id: "greeter-2", zone: "zone-a"})
	b.waitFor("greeter-2 appears", `!!document.querySelector('#apps tr[data-id="greeter-2"]')`)
	assert.Greater(t, b.streamEvents(), before, "the change came as an event of the new stream")

	b.mu.Lock()
	assert.Empty(t, b.errors, "uncaught JavaScript exceptions")
	b.mu.Unlock()
}

// updates is the page's data-updates: "stream" or "polling".
func (b *browser) updates() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.dataset.updates || ''`))
	if err != nil {
		b.failed("reading data-updates", err)
	}
	return s
}

// With basic auth on, a page opened with credentials in its URL holds the
// stream too (the browser sends them with it), and a read-only user sees
// changes live.
func TestDashboardInBrowserStreamWithAuth(t *testing.T) {
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		require.NoError(t, err)
		return string(h)
	}
	s := startAPIServer(t, noPoll, func(c *httpapi.Config) {
		c.Auth = &httpapi.AuthConfig{Users: []httpapi.User{
			{Name: "operator", PasswordHash: hash("op-secret"), Roles: httpapi.RoleRead | httpapi.RoleWrite},
			{Name: "viewer", PasswordHash: hash("view-secret"), Roles: httpapi.RoleRead},
		}}
	})
	host := s.url[len("http://"):]
	operator := "http://operator:op-secret@" + host
	code, _ := call(t, http.MethodGet, s.url+"/eureka/stream", "")
	require.Equal(t, http.StatusUnauthorized, code, "the stream needs credentials")

	b := openBrowser(t)
	b.open("http://viewer:view-secret@" + host)
	b.waitFor("the page is updated through the stream", `document.documentElement.dataset.updates === 'stream'`)
	b.waitFor("the stream's first event arrived", `Number(document.documentElement.dataset.streamEvents) >= 1`)
	before := b.streamEvents()

	register(t, operator, instance{app: "GREETER", id: "greeter-1", zone: "zone-a"})
	b.waitFor("greeter-1 appears", `!!document.querySelector('#apps tr[data-id="greeter-1"]')`)
	assert.Greater(t, b.streamEvents(), before, "the change came as a stream event")
	assert.Equal(t, "stream", b.updates())

	b.mu.Lock()
	assert.Empty(t, b.errors, "uncaught JavaScript exceptions")
	b.mu.Unlock()
}

// A server that refuses the stream (its one stream is taken) leaves the
// page polling, and changes still show, at the polling interval.
func TestDashboardInBrowserFallsBackToPolling(t *testing.T) {
	s := startAPIServer(t, 200*time.Millisecond, func(c *httpapi.Config) {
		c.Push.MaxStreams = 1
	})
	// Another client holds the only stream.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/eureka/stream", nil)
	require.NoError(t, err)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	b := openBrowser(t)
	b.open(s.url)
	b.waitFor("the page has rendered", `document.querySelector('#node-name').innerText === 'dash-stream'`)
	require.Eventually(t, func() bool { return s.streams.Load() >= 2 }, time.Minute, 20*time.Millisecond,
		"the page asked for the stream")
	assert.Equal(t, "polling", b.updates(), "the stream was refused")
	assert.NotContains(t, b.text("#refreshed"), "live")

	register(t, s.url, instance{app: "GREETER", id: "greeter-1", zone: "zone-a"})
	b.waitFor("greeter-1 appears", `!!document.querySelector('#apps tr[data-id="greeter-1"]')`)
	assert.Equal(t, "polling", b.updates())
	assert.Equal(t, 0, b.streamEvents(), fmt.Sprintf("no stream event on a refused stream (%d stream requests)", s.streams.Load()))

	b.mu.Lock()
	assert.Empty(t, b.errors, "uncaught JavaScript exceptions")
	b.mu.Unlock()
}
