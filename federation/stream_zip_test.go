package federation

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eureka"
)

// previousReleaseStream is what a Heureka server of the release before the
// compressed stream answered this release's follower: the response head
// and first event of GET /eureka/stream?encoding=gzip&keepalive=20s with
// Accept-Encoding: gzip, byte for byte as it came on the connection
// (captured from a heureka built at abb8647, holding its own instance and
// two ORDERS instances). It does not know the parameter: plain.
func previousReleaseStream(t *testing.T) []byte {
	b, err := os.ReadFile("testdata/stream_previous_release.http")
	require.NoError(t, err)
	require.NotContains(t, string(b), "Content-Encoding")
	return b
}

// A follower of this release asks for a compressed stream, and reads the
// plain one a remote of the previous release answers (the golden above,
// replayed on a TCP connection as that server's hijacked stream sent it,
// then its keep-alives): the region loads from its snapshot, the only
// way in (the remote's polls answer 503), and stays ok.
func TestStreamFollowsPreviousReleasePlain(t *testing.T) {
	golden := previousReleaseStream(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu   sync.Mutex
		asks []*http.Request
	)
	done := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				if !strings.HasSuffix(req.URL.Path, "/stream") {
					_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
					return
				}
				mu.Lock()
				asks = append(asks, req)
				mu.Unlock()
				if _, err := c.Write(golden); err != nil {
					return
				}
				for {
					select {
					case <-done:
						return
					case <-time.After(20 * time.Millisecond):
					}
					if _, err := io.WriteString(c, ": keep-alive\n\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	defer func() { ln.Close(); close(done); wg.Wait() }()

	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.Remotes = []Remote{{Name: "dc2", URL: "http://" + ln.Addr().String() + "/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	f.Start()
	defer f.Stop()

	require.Eventually(t, func() bool {
		s := f.Status()[0]
		return s.State == StateOK && s.Instances == 3
	}, 3*time.Second, 5*time.Millisecond, "the region loads from the plain stream")
	time.Sleep(2 * c.StaleAfter)
	s := f.Status()[0]
	assert.Equal(t, StateOK, s.State, "kept ok by the plain keep-alives")
	assert.Equal(t, 3, s.Instances)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, asks)
	assert.Equal(t, "gzip", asks[0].URL.Query().Get("encoding"), "the follower asked for the compressed stream")
	assert.Equal(t, "gzip", asks[0].Header.Get("Accept-Encoding"))
	assert.Len(t, asks, 1, "one connection: the plain answer was read, not refused")
}

// receivedBytes reads heureka_region_received_bytes_total{region, from}
// from reg.
func receivedBytes(t *testing.T, reg *prometheus.Registry, region, from string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "heureka_region_received_bytes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["region"] == region && labels["from"] == from {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// headerRecorder keeps the status and headers a handler answered.
type headerRecorder struct {
	http.ResponseWriter
	mu     *sync.Mutex
	header *http.Header
}

func (h headerRecorder) WriteHeader(code int) {
	h.mu.Lock()
	*h.header = h.ResponseWriter.Header().Clone()
	h.mu.Unlock()
	h.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (h headerRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// A relay compresses the stream of a follower that asks (this release's),
// and serves a follower of the previous release, which does not ask,
// plain. The follower counts the bytes as they came
// (heureka_region_received_bytes_total{from="relay"}): the compressed
// ones.
func TestRelayGzip(t *testing.T) {
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		insts := make([]string, 50)
		for i := range insts {
			insts[i] = sseInstance("a"+strings.Repeat("1", i+1), "UP", "ADDED")
		}
		_, _ = io.WriteString(w, sseDoc("UP_50_", insts...))
	}))
	defer remote.Close()
	c := relayDropConfig(remote.URL + "/eureka/")
	relay, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	relay.Start()
	defer relay.Stop()
	var (
		mu     sync.Mutex
		header http.Header
	)
	relaySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		relay.ServeRelay(headerRecorder{ResponseWriter: w, mu: &mu, header: &header}, r, "dc2")
	}))
	defer relaySrv.Close()
	defer relay.CloseRelays()
	require.Eventually(t, func() bool { return relay.Status()[0].State == StateOK }, 3*time.Second, 5*time.Millisecond)

	reg := prometheus.NewRegistry()
	fc := c
	fc.Metrics = reg
	follower := startRelayFollower(t, fc, relaySrv.URL)
	defer follower.Stop() // before relaySrv.Close
	require.Eventually(t, func() bool {
		s := follower.Status()[0]
		return s.Via == ViaRelay && s.State == StateOK && s.Instances == 50
	}, 3*time.Second, 5*time.Millisecond, "the follower loads the region from its relay")
	mu.Lock()
	assert.Equal(t, "gzip", header.Get("Content-Encoding"), "this release's follower gets the compressed relay")
	mu.Unlock()
	got := receivedBytes(t, reg, "dc2", "relay")
	snapshot := len(relay.pullers[0].hub.snapshotFrame(relay.regions["dc2"].Load()))
	t.Logf("%.0f bytes received from the relay; its snapshot frame alone is %d bytes plain", got, snapshot)
	assert.Positive(t, got)
	assert.Less(t, got, float64(snapshot)/2, "counted as they came: compressed")

	// A follower of the previous release: no encoding parameter, its Go
	// transport's own Accept-Encoding.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, relaySrv.URL+"/admin/regions/dc2/relay?keepalive="+url.QueryEscape("333ms"), nil)
	require.NoError(t, err)
	res, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Empty(t, res.Header.Get("Content-Encoding"))
	assert.False(t, res.Uncompressed)
	first := make([]byte, len("event: state\n"))
	_, err = io.ReadFull(res.Body, first)
	require.NoError(t, err)
	assert.Equal(t, "event: state\n", string(first), "plain frames")
}
