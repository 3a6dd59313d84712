package httpapi_test

// Per-request cost of the hot endpoints: the whole handler chain
// (routing, metrics, negotiation, the registry call) over a real
// actors.Registry and view, without the network, so that CPU time and
// allocations per request are the server's alone. The loopback ratios
// against net/http's ceiling are bench/'s job (BENCHMARKS.md); these
// benchmarks show where a request's fixed cost goes and guard allocs/op.
//
//	go test -run '^$' -bench 'PerRequest' -benchmem ./httpapi/

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/httpapi"
)

// benchInstances is the registry size the per-request benchmarks load, and
// benchPerApp the instances per application (by default 250 applications;
// -perrequest-instances 100000 -perrequest-per-app 2 gives 50,000, the
// application count of the 1M registry).
var (
	benchInstances = flag.Int("perrequest-instances", 5000, "instances the per-request benchmarks load")
	benchPerApp    = flag.Int("perrequest-per-app", 20, "instances per application in the per-request benchmarks")
)

const benchDirty = "1754499999870"

// benchWriter is an http.ResponseWriter that keeps only the status and the
// byte count, reused across requests as net/http reuses its buffers.
type benchWriter struct {
	h     http.Header
	code  int
	bytes int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *benchWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.bytes += len(p)
	return len(p), nil
}

func (w *benchWriter) reset() {
	clear(w.h)
	w.code, w.bytes = 0, 0
}

// benchApp is application a's name.
func benchApp(a int) string { return fmt.Sprintf("SERVICE-%05d", a) }

// benchBody is the Java client's register body (spec §3.7) for instance i
// of application app.
func benchBody(app string, i int) []byte { return appendBenchBody(nil, app, i) }

// appendBenchBody appends benchBody(app, i) to dst without allocating when
// dst has room.
func appendBenchBody(dst []byte, app string, i int) []byte {
	var ipb [16]byte
	ip := strconv.AppendInt(ipb[:0], 10, 10)
	for _, shift := range []int{16, 8, 0} {
		ip = append(ip, '.')
		ip = strconv.AppendInt(ip, int64((i>>shift)&255), 10)
	}
	var lowb [32]byte
	low := append(lowb[:0], app...)
	for k, c := range low {
		if 'A' <= c && c <= 'Z' {
			low[k] = c + 'a' - 'A'
		}
	}
	url := func(dst []byte) []byte {
		dst = append(dst, "http://"...)
		dst = append(dst, ip...)
		return append(dst, ":8080/"...)
	}
	dst = append(dst, `{"instance":{"instanceId":"`...)
	dst = append(append(append(dst, ip...), ':'), low...)
	dst = append(dst, `:8080","hostName":"`...)
	dst = append(dst, ip...)
	dst = append(dst, `","app":"`...)
	dst = append(dst, app...)
	dst = append(dst, `","ipAddr":"`...)
	dst = append(dst, ip...)
	dst = append(dst, `","status":"UP","overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},`+
		`"securePort":{"$":443,"@enabled":"false"},"countryId":1,`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":0,"lastRenewalTimestamp":0,`+
		`"evictionTimestamp":0,"serviceUpTimestamp":0},`+
		`"metadata":{"management.port":"8081","zone":"zone-a"},"homePageUrl":"`...)
	dst = url(dst)
	dst = append(dst, `","statusPageUrl":"`...)
	dst = append(url(dst), `actuator/info","healthCheckUrl":"`...)
	dst = append(url(dst), `actuator/health","vipAddress":"`...)
	dst = append(dst, low...)
	dst = append(dst, `","secureVipAddress":"`...)
	dst = append(dst, low...)
	dst = append(dst, `","isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"`+benchDirty+
		`","lastDirtyTimestamp":"`+benchDirty+`"}}`...)
	return dst
}

// benchID is the instance id benchBody gives instance i.
func benchID(i int) string {
	b := benchBody(benchApp(i / *benchPerApp), i)
	const key = `"instanceId":"`
	k := bytes.Index(b, []byte(key)) + len(key)
	return string(b[k : k+bytes.IndexByte(b[k:], '"')])
}

// reusableBody is a request body that can be refilled without allocating.
type reusableBody struct{ bytes.Reader }

func (*reusableBody) Close() error { return nil }

// benchServer is the real handler over a registry loaded with
// *benchInstances instances, and its view.
type benchServer struct {
	h    http.Handler
	reg  *actors.Registry
	view *view.View
}

// benchServers are the loaded servers by benchmark name: a benchmark
// function runs once per b.N round, and loading 5000 instances each time
// would dominate its profile. stopBenchServers stops them (TestMain).
var (
	benchServersMu sync.Mutex
	benchServers   = map[string]*benchServer{}
	benchStops     []func()
)

// stopBenchServers stops every server newBenchServer started.
func stopBenchServers() {
	benchServersMu.Lock()
	defer benchServersMu.Unlock()
	for _, stop := range benchStops {
		stop()
	}
	benchStops = nil
	clear(benchServers)
}

// newBenchServer returns the loaded server of benchmark b, started on the
// benchmark's first round.
func newBenchServer(b *testing.B) *benchServer {
	b.Helper()
	benchServersMu.Lock()
	defer benchServersMu.Unlock()
	if s := benchServers[b.Name()]; s != nil {
		return s
	}
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	rc := actors.DefaultConfig("bench")
	rc.Sinks = []actors.Sink{v}
	reg, err := actors.NewRegistry(rc)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.Run(ctx)
	}()
	benchStops = append(benchStops, func() {
		cancel()
		<-done
		reg.Close()
	})
	for i := 0; i < *benchInstances; i++ {
		inst, err := eureka.DecodeInstance("application/json", benchBody(benchApp(i / *benchPerApp), i))
		require.NoError(b, err)
		inst.Normalize()
		require.NoError(b, reg.Register(context.Background(), inst, false))
	}
	h := httpapi.New(httpapi.Config{Registry: reg, View: v, NodeName: "bench", Version: "bench"})
	s := &benchServer{h: h, reg: reg, view: v}
	benchServers[b.Name()] = s
	return s
}

// javaHeader is what the Java Eureka client sends with every request.
func javaHeader(gz bool) http.Header {
	h := http.Header{
		"Accept":                    {"application/json"},
		"Discoveryidentity-Name":    {"DefaultClient"},
		"Discoveryidentity-Version": {"1.4"},
		"Discoveryidentity-Id":      {"10.0.0.1"},
		"User-Agent":                {"Java-EurekaClient/v1.10.18"},
	}
	if gz {
		h["Accept-Encoding"] = []string{"gzip"}
	}
	return h
}

// benchRequest is a server-side request as net/http builds it (parsed URL,
// RequestURI, a context), without a body.
func benchRequest(method, target string, hdr http.Header) *http.Request {
	u, err := url.ParseRequestURI(target)
	if err != nil {
		panic(err)
	}
	r := &http.Request{Method: method, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hdr, Host: "bench", Body: http.NoBody, RemoteAddr: "127.0.0.1:1"}
	return r.WithContext(context.Background())
}

// runPerRequest serves the request next(i) returns, b.N times over
// parallel goroutines, and checks every status.
func runPerRequest(b *testing.B, h http.Handler, want int, next func(i int) *http.Request) {
	b.ReportAllocs()
	var seq atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &benchWriter{h: http.Header{}}
		i := int(seq.Add(7919))
		for pb.Next() {
			i++
			r := next(i)
			w.reset()
			h.ServeHTTP(w, r)
			if w.code != want {
				b.Errorf("%s %s: status %d, want %d", r.Method, r.URL, w.code, want)
				return
			}
		}
	})
}

// BenchmarkPerRequestRenew is the Java client's heartbeat, PUT
// /eureka/apps/{app}/{id}?status=UP&lastDirtyTimestamp=…, over every
// loaded instance.
func BenchmarkPerRequestRenew(b *testing.B) {
	s := newBenchServer(b)
	hdr := javaHeader(true)
	reqs := make([]*http.Request, *benchInstances)
	for i := range reqs {
		reqs[i] = benchRequest(http.MethodPut, "/eureka/apps/"+benchApp(i / *benchPerApp)+"/"+benchID(i)+
			"?status=UP&lastDirtyTimestamp="+benchDirty, hdr)
	}
	runPerRequest(b, s.h, http.StatusOK, func(i int) *http.Request {
		r := *reqs[i%len(reqs)] // net/http makes a new request each time
		return &r
	})
}

// BenchmarkPerRequestRegister registers fresh instances (a new id every
// time, spread over the loaded applications), the Java client's POST with
// the §3.7 body. The registry grows by b.N instances.
func BenchmarkPerRequestRegister(b *testing.B) {
	s := newBenchServer(b)
	hdr := javaHeader(true)
	hdr["Content-Type"] = []string{"application/json"}
	apps := *benchInstances / *benchPerApp
	reqs := make([]*http.Request, apps)
	names := make([]string, apps)
	for a := range reqs {
		names[a] = benchApp(a)
		reqs[a] = benchRequest(http.MethodPost, "/eureka/apps/"+names[a], hdr)
	}
	var n atomic.Int64
	n.Store(1 << 20) // ids disjoint from the loaded ones
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &benchWriter{h: http.Header{}}
		var buf []byte
		for pb.Next() {
			i := int(n.Add(1))
			a := i % apps
			buf = appendBenchBody(buf[:0], names[a], i)
			body := &reusableBody{}
			body.Reset(buf)
			r := *reqs[a]
			r.Body = body
			r.ContentLength = int64(len(buf))
			w.reset()
			s.h.ServeHTTP(w, &r)
			if w.code != http.StatusNoContent {
				b.Errorf("register: status %d", w.code)
				return
			}
		}
	})
}

// BenchmarkPerRequestDelta is the Java client's delta fetch (JSON, gzip)
// of a quiet registry: an empty delta, from the cache.
func BenchmarkPerRequestDelta(b *testing.B) {
	s := newBenchServer(b)
	r0 := benchRequest(http.MethodGet, "/eureka/apps/delta", javaHeader(true))
	runPerRequest(b, s.h, http.StatusOK, func(int) *http.Request {
		r := *r0
		return &r
	})
}

// BenchmarkPerRequestApp is GET /eureka/apps/{app} (JSON) over every
// application, every document cached.
func BenchmarkPerRequestApp(b *testing.B) {
	s := newBenchServer(b)
	apps := *benchInstances / *benchPerApp
	hdr := javaHeader(false)
	reqs := make([]*http.Request, apps)
	snap := s.view.Snapshot()
	for a := range reqs {
		reqs[a] = benchRequest(http.MethodGet, "/eureka/apps/"+benchApp(a), hdr)
		_, ok := snap.AppDocument(benchApp(a), view.FormatJSON, false)
		require.True(b, ok, "app %d", a)
	}
	runPerRequest(b, s.h, http.StatusOK, func(i int) *http.Request {
		r := *reqs[i%len(reqs)]
		return &r
	})
}

// BenchmarkPerRequestTrivial is the floor the others compare with: an empty
// 200 from a bare handler, through the same harness.
func BenchmarkPerRequestTrivial(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	r0 := benchRequest(http.MethodPut, "/eureka/apps/"+benchApp(0)+"/"+benchID(0)+"?status=UP&lastDirtyTimestamp="+benchDirty, javaHeader(true))
	runPerRequest(b, h, http.StatusOK, func(int) *http.Request {
		r := *r0
		return &r
	})
}

// noRegions is a federation that is configured but never asked: what the
// plain reads pass through when a node has remote regions.
type noRegions struct{}

func (noRegions) Ready() bool               { return true }
func (noRegions) TransparentFallback() bool { return false }
func (noRegions) Apps(*view.Snapshot, []string, view.Format, bool) []byte {
	panic("a plain read asked for regions")
}
func (noRegions) Delta(*view.Snapshot, []string, view.Format, bool) []byte {
	panic("a plain read asked for regions")
}
func (noRegions) VIP(*view.Snapshot, string, bool, view.Format, bool) []byte {
	panic("a plain read asked for regions")
}
func (noRegions) App(*view.Snapshot, string, view.Format, bool) ([]byte, bool) {
	panic("a plain read asked for regions")
}
func (noRegions) Report() any { return nil }

// BenchmarkPerRequestDeltaWithRegions is BenchmarkPerRequestDelta on a
// node with remote regions configured: the plain delta must cost the same.
func BenchmarkPerRequestDeltaWithRegions(b *testing.B) {
	s := newBenchServer(b)
	h := httpapi.New(httpapi.Config{Registry: s.reg, View: s.view, NodeName: "bench", Version: "bench", Regions: noRegions{}})
	r0 := benchRequest(http.MethodGet, "/eureka/apps/delta", javaHeader(true))
	runPerRequest(b, h, http.StatusOK, func(int) *http.Request {
		r := *r0
		return &r
	})
}
