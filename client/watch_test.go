package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/client"
)

// ids returns the sorted instance ids of list.
func ids(list []client.Instance) []string {
	out := []string{}
	for _, in := range list {
		out = append(out, in.InstanceID)
	}
	sort.Strings(out)
	return out
}

// waitFor receives lists from ch until one has the ids want.
func waitFor(t *testing.T, ch <-chan []client.Instance, want ...string) []client.Instance {
	t.Helper()
	var got []client.Instance
	require.Eventually(t, func() bool {
		select {
		case list, ok := <-ch:
			require.True(t, ok, "the watch channel is open")
			got = list
		default:
		}
		return assert.ObjectsAreEqual(want, ids(got))
	}, 10*time.Second, 10*time.Millisecond, "a list with %v", want)
	return got
}

// blockingConfig is testConfig with a poll interval far longer than the
// tests: only blocking reads can deliver their changes in time.
func blockingConfig(t *testing.T, app, id string, urls ...string) client.Config {
	cfg := testConfig(t, app, id, urls...)
	cfg.PollInterval = time.Hour
	return cfg
}

func TestWatchDeliversChanges(t *testing.T) {
	n := startNode(t)
	a, err := client.New(blockingConfig(t, "orders", "orders-1", eurekaURL(n)))
	require.NoError(t, err)
	require.NoError(t, a.Register(t.Context()))
	requireIDs(t, n, "ORDERS", "orders-1") // the app exists: no 404 to poll after

	ctx, stop := context.WithCancel(t.Context())
	ch := a.Watch(ctx, "orders")
	first := waitFor(t, ch, "orders-1")
	assert.Equal(t, "ORDERS", first[0].App)
	assert.Equal(t, 8080, first[0].Port)
	assert.Equal(t, "10.0.0.1", first[0].IPAddr)
	assert.Equal(t, client.StatusUp, first[0].Status)
	assert.Equal(t, map[string]string{"zone": "a"}, first[0].Metadata)

	b, err := client.New(testConfig(t, "orders", "orders-2", eurekaURL(n)))
	require.NoError(t, err)
	require.NoError(t, b.Register(t.Context()))
	waitFor(t, ch, "orders-1", "orders-2")

	require.NoError(t, b.Cancel(t.Context()))
	waitFor(t, ch, "orders-1")

	stop()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	}, 10*time.Second, 10*time.Millisecond, "the channel is closed after the context ends")
}

func TestWatchVIP(t *testing.T) {
	n := startNode(t)
	a, err := client.New(blockingConfig(t, "orders", "orders-1", eurekaURL(n)))
	require.NoError(t, err)
	require.NoError(t, a.Register(t.Context()))
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	ch := a.WatchVIP(ctx, "orders")
	waitFor(t, ch, "orders-1")
	b, err := client.New(testConfig(t, "orders", "orders-2", eurekaURL(n)))
	require.NoError(t, err)
	require.NoError(t, b.Register(t.Context()))
	waitFor(t, ch, "orders-1", "orders-2")
}

func TestWatchOfAnAppThatAppearsLater(t *testing.T) {
	n := startNode(t)
	a, err := client.New(testConfig(t, "orders", "orders-1", eurekaURL(n)))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	ch := a.Watch(ctx, "orders")
	assert.Empty(t, receive(t, ch), "an unknown application is an empty list")
	require.NoError(t, a.Register(t.Context()))
	waitFor(t, ch, "orders-1")
}

// pollServer is a server without blocking reads: it answers every read
// with the current document and no ETag, and records what it was asked.
type pollServer struct {
	mu    sync.Mutex
	doc   string
	reads int
	bad   []string // requests that tried a blocking read
}

func (p *pollServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	if r.Header.Get("If-None-Match") != "" || r.URL.Query().Has("wait") {
		p.bad = append(p.bad, r.URL.String())
	}
	if r.URL.Path != "/eureka/apps/ORDERS" || r.Header.Get("Accept") != "application/json" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(p.doc))
}

func (p *pollServer) set(doc string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doc = doc
}

func (p *pollServer) stats() (int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads, append([]string(nil), p.bad...)
}

// Stock Eureka writes a single instance as an object, and numbers as strings.
const (
	pollDoc1 = `{"application":{"name":"ORDERS","instance":{"instanceId":"o-1","hostName":"h1","app":"ORDERS",` +
		`"ipAddr":"10.0.0.1","status":"UP","port":{"$":"8080","@enabled":"true"},"securePort":{"$":443,"@enabled":false},` +
		`"metadata":{"@class":"java.util.Collections$EmptyMap"}}}}`
	pollDoc2 = `{"application":{"name":"ORDERS","instance":[{"instanceId":"o-1","hostName":"h1","app":"ORDERS",` +
		`"ipAddr":"10.0.0.1","status":"UP","port":{"$":8080,"@enabled":"true"}},` +
		`{"instanceId":"o-2","hostName":"h2","app":"ORDERS","ipAddr":"10.0.0.2","status":"UP",` +
		`"port":{"$":8081,"@enabled":"true"},"securePort":{"$":8443,"@enabled":"true"}}]}}`
)

func TestWatchPollsWithoutETag(t *testing.T) {
	p := &pollServer{doc: pollDoc1}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	c, err := client.New(testConfig(t, "orders", "x-1", srv.URL+"/eureka"))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	ch := c.Watch(ctx, "orders")
	first := receive(t, ch)
	require.Len(t, first, 1)
	assert.Equal(t, 8080, first[0].Port)
	assert.Equal(t, 0, first[0].SecurePort, "a disabled secure port is 0")
	assert.Nil(t, first[0].Metadata, "Jackson's empty-map marker is not metadata")

	// The watch keeps reading (polling), and delivers nothing new while
	// the document stays the same.
	require.Eventually(t, func() bool { r, _ := p.stats(); return r >= 3 }, 10*time.Second, 10*time.Millisecond)
	select {
	case list := <-ch:
		t.Fatalf("an unchanged document was delivered again: %v", list)
	default:
	}

	p.set(pollDoc2)
	second := waitFor(t, ch, "o-1", "o-2")
	assert.Equal(t, 8443, second[1].SecurePort)
	_, bad := p.stats()
	assert.Empty(t, bad, "no blocking read without an ETag")
}

func TestWatchBacksOffAndRecovers(t *testing.T) {
	var mu sync.Mutex
	failing, failed := true, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			failed++
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(pollDoc1))
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(testConfig(t, "orders", "x-1", srv.URL+"/eureka/"))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	ch := c.Watch(ctx, "orders")
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return failed >= 3 }, 10*time.Second, 10*time.Millisecond,
		"the watch retries after errors")
	mu.Lock()
	failing = false
	mu.Unlock()
	waitFor(t, ch, "o-1")
}

func TestBasicAuth(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // server → user:password
	handler := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			mu.Lock()
			seen[name] = u + ":" + p
			mu.Unlock()
			if !ok {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusServiceUnavailable) // on to the next server
		}
	}
	a := httptest.NewServer(handler("a"))
	t.Cleanup(a.Close)
	b := httptest.NewServer(handler("b"))
	t.Cleanup(b.Close)

	cfg := testConfig(t, "orders", "x-1", "http://own:secret@"+a.Listener.Addr().String()+"/eureka/", b.URL+"/eureka/")
	cfg.Username, cfg.Password = "svc", "pw"
	c, err := client.New(cfg)
	require.NoError(t, err)
	require.Error(t, c.Register(t.Context()))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]string{"a": "own:secret", "b": "svc:pw"}, seen)
}
