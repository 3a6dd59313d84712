package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors/view"
)

// Concurrency is the number of client connections (one request in flight on
// each) the throughput scenarios use: 8 per CPU, enough to keep the server
// busy while a response is on the wire.
func Concurrency() int { return 8 * runtime.GOMAXPROCS(0) }

// NewClient returns a keep-alive client for conns concurrent requests to one
// host. It never asks for or decompresses gzip on its own: a scenario that
// wants gzip sets Accept-Encoding itself and counts compressed bytes.
func NewClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
	}}
}

// Load is a request stream. New returns the request function of one worker
// (each worker has its own position in the stream); the function sends one
// request, reads the whole response and returns the number of body bytes.
type Load struct {
	Name string
	New  func(c *http.Client, worker int) func() (int64, error)
	// Kept is the queue a registering load pushes its instances onto (nil:
	// none), so that its ceiling can be checked to do the same.
	Kept *Queue
}

// javaHeaders are the headers the Java Eureka client sends (spec §3.7).
func javaHeaders(accept string, gz bool) http.Header {
	h := http.Header{
		"Accept":                    {accept},
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

func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	return u.Host
}

// newRequest builds a client request without parsing a URL. hdr is shared
// and must not be modified.
func newRequest(method, host, path, query string, hdr http.Header, body []byte) *http.Request {
	r := &http.Request{
		Method: method,
		URL:    &url.URL{Scheme: "http", Host: host, Path: path, RawQuery: query},
		Host:   host,
		Header: hdr,
	}
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	return r
}

// do sends req, reads and discards the whole body and checks the status.
func do(c *http.Client, req *http.Request, want int) (int64, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return n, err
	}
	if resp.StatusCode != want {
		return n, fmt.Errorf("%s %s: status %d, want %d", req.Method, req.URL.Path, resp.StatusCode, want)
	}
	return n, nil
}

// RenewLoad is the Java client's heartbeat, PUT
// /eureka/apps/{app}/{id}?status=UP&lastDirtyTimestamp=…, cycling over the
// size loaded instances; 200 expected.
func RenewLoad(base string, size int) Load {
	host := hostOf(base)
	paths := make([]string, size)
	for i := range paths {
		in := InstanceAt(i)
		paths[i] = "/eureka/apps/" + in.App + "/" + in.ID
	}
	hdr := javaHeaders("application/json", true)
	query := "status=UP&lastDirtyTimestamp=" + lastDirtyStr
	return Load{Name: "renew", New: func(c *http.Client, worker int) func() (int64, error) {
		i := worker * 7919
		return func() (int64, error) {
			i++
			return do(c, newRequest(http.MethodPut, host, paths[i%size], query, hdr, nil), http.StatusOK)
		}
	}}
}

// RegisterLoad is the Java client's registration, POST /eureka/apps/{app}
// with the §3.7 JSON body, cycling over the size loaded instances (so each
// request re-registers an existing instance and the registry keeps its
// size); want is the expected status (204 from Heureka).
func RegisterLoad(base string, size, want int) Load {
	host := hostOf(base)
	hdr := javaHeaders("application/json", true)
	hdr["Content-Type"] = []string{"application/json"}
	return Load{Name: "register", New: func(c *http.Client, worker int) func() (int64, error) {
		i := worker * 7919
		return func() (int64, error) {
			i++
			in := InstanceAt(i % size)
			body := AppendRegisterBody(make([]byte, 0, 1400), in)
			return do(c, newRequest(http.MethodPost, host, "/eureka/apps/"+in.App, "", hdr, body), want)
		}
	}}
}

// GetLoad is GET of paths (cycled over by the workers) with the Accept
// header accept and, if gz, Accept-Encoding: gzip; 200 expected.
func GetLoad(name, base string, paths []string, accept string, gz bool) Load {
	host := hostOf(base)
	hdr := javaHeaders(accept, gz)
	return Load{Name: name, New: func(c *http.Client, worker int) func() (int64, error) {
		i := worker * 7919
		return func() (int64, error) {
			i++
			return do(c, newRequest(http.MethodGet, host, paths[i%len(paths)], "", hdr, nil), http.StatusOK)
		}
	}}
}

// Doc names a cached document the read scenarios fetch.
type Doc struct {
	Name   string
	Format view.Format
	Gzip   bool
}

// The documents of the read scenarios: the full registry in JSON, XML and
// gzipped JSON (what the Java client fetches), one application (JSON) and
// the delta (gzipped JSON, as the Java client fetches it).
var (
	FullJSON = Doc{"full-json", view.FormatJSON, false}
	FullXML  = Doc{"full-xml", view.FormatXML, false}
	FullGzip = Doc{"full-gzip", view.FormatJSON, true}
	OneApp   = Doc{"app", view.FormatJSON, false}
	Delta    = Doc{"delta", view.FormatJSON, true}
)

// Accept returns the Accept header that selects d's format.
func (d Doc) Accept() string {
	if d.Format == view.FormatXML {
		return "application/xml"
	}
	return "application/json"
}

func (d Doc) contentType() string { return d.Accept() }

// Paths returns the request paths of d on f: every application for OneApp.
func (d Doc) Paths(f *Fixture) []string { return d.PathsFor(f.Apps) }

// PathsFor returns the request paths of d on a registry of apps
// applications: every application for OneApp.
func (d Doc) PathsFor(apps int) []string {
	switch d.Name {
	case OneApp.Name:
		paths := make([]string, apps)
		for a := range paths {
			paths[a] = "/eureka/apps/" + AppName(a)
		}
		return paths
	case Delta.Name:
		return []string{"/eureka/apps/delta"}
	}
	return []string{"/eureka/apps"}
}

// Bodies maps each request path of a document to the bytes served there.
type Bodies map[string][]byte

// Bytes returns the prepared bytes Heureka serves for d now (application 0
// for OneApp).
func (d Doc) Bytes(f *Fixture) []byte {
	return d.bytesOf(f.Node.View().Snapshot(), 0)
}

// Bodies returns the prepared bytes Heureka serves now at each of d's paths
// on a registry of apps applications (for OneApp, each application's own
// document). The slices are Heureka's own: nothing is copied.
func (d Doc) Bodies(f *Fixture, apps int) Bodies {
	s := f.Node.View().Snapshot()
	paths := d.PathsFor(apps)
	b := make(Bodies, len(paths))
	for a, p := range paths {
		b[p] = d.bytesOf(s, a)
	}
	return b
}

// bytesOf returns the bytes s serves for d (application a for OneApp).
func (d Doc) bytesOf(s *view.Snapshot, a int) []byte {
	switch d.Name {
	case OneApp.Name:
		b, _ := s.AppDocument(AppName(a), d.Format, d.Gzip)
		return b
	case Delta.Name:
		return s.Delta(d.Format, d.Gzip)
	}
	return s.Full(d.Format, d.Gzip)
}

// Load returns the load that fetches d from base (Heureka or the static
// server: the paths are the same).
func (d Doc) Load(f *Fixture, base string) Load {
	return GetLoad(d.Name, base, d.Paths(f), d.Accept(), d.Gzip)
}

// LoadFor returns the load that fetches d from base, a registry of apps
// applications.
func (d Doc) LoadFor(apps int, base string) Load {
	return GetLoad(d.Name, base, d.PathsFor(apps), d.Accept(), d.Gzip)
}

// Fetch returns the body base serves for d (application 0 for OneApp) as it
// came over the wire (gzipped if d asks for gzip).
func (d Doc) Fetch(c *http.Client, base string) ([]byte, error) {
	return d.fetch(c, base, d.PathsFor(1)[0])
}

// FetchBodies returns what base serves at each of d's paths on a registry
// of apps applications, as it came over the wire: what a static ceiling
// for a server in another process writes.
func (d Doc) FetchBodies(c *http.Client, base string, apps int) (Bodies, error) {
	paths := d.PathsFor(apps)
	b := make(Bodies, len(paths))
	for _, p := range paths {
		body, err := d.fetch(c, base, p)
		if err != nil {
			return nil, err
		}
		b[p] = body
	}
	return b, nil
}

func (d Doc) fetch(c *http.Client, base, path string) ([]byte, error) {
	resp, err := c.Do(newRequest(http.MethodGet, hostOf(base), path, "", javaHeaders(d.Accept(), d.Gzip), nil))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
	}
	if d.Gzip && resp.Header.Get("Content-Encoding") != "gzip" {
		return nil, fmt.Errorf("GET %s with Accept-Encoding gzip: not gzipped", path)
	}
	return b, nil
}

// Trivial is the ceiling for requests that need no answer: an empty 200.
// net/http drains an unread request body itself.
func Trivial() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
}

// Static is the ceiling for a cached read: at each path of bodies it writes
// that path's bytes with the headers Heureka sends with them, prepared once,
// and 404 elsewhere. It holds the same bytes as the server it bounds, each
// document at its own path, so that a read of many documents (OneApp over
// every application) pays the same memory traffic on both sides.
func Static(d Doc, bodies Bodies) http.Handler {
	type entry struct {
		body   []byte
		length []string
	}
	ct := []string{d.contentType()}
	vary := []string{"Accept, Accept-Encoding, X-Eureka-Accept"}
	gz := []string{"gzip"}
	entries := make(map[string]entry, len(bodies))
	for p, b := range bodies {
		entries[p] = entry{b, []string{strconv.Itoa(len(b))}}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, ok := entries[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h["Content-Type"] = ct
		h["Vary"] = vary
		if d.Gzip {
			h["Content-Encoding"] = gz
		}
		h["Content-Length"] = e.length
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(e.body)
	})
}

// Server is a baseline handler served by net/http on loopback with the
// node's server settings.
type Server struct {
	Base string
	srv  *http.Server
	done chan struct{}
}

// Serve serves h on a free loopback port.
func Serve(h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Base: "http://" + ln.Addr().String(), done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: log.New(io.Discard, "", 0)}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
}

// ErrExhausted ends a worker of a bounded load (cancels of a finite list,
// a deploy of a fixed number of instances) without counting as a failure.
var ErrExhausted = errors.New("bench: load exhausted")

// Result is what a measurement counted.
type Result struct {
	Requests int64
	Bytes    int64
	Elapsed  time.Duration
	// CPU is the CPU time this whole process (load generator, and the
	// server when it runs in this process) used meanwhile: getrusage.
	CPU time.Duration
	// ServerCPU is the CPU time an external server process used meanwhile
	// (/proc/PID/stat); zero when the server runs in this process.
	ServerCPU time.Duration
	// External is set when ServerCPU was measured.
	External bool
}

// Rate returns requests per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// CPUPerRequest returns the process CPU time per request, client and
// server together. Unlike Rate it does not depend on what else the machine
// runs.
func (r Result) CPUPerRequest() time.Duration {
	if r.Requests == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Requests)
}

// ServerCPUPerRequest returns an external server's CPU time per request
// (zero for a server in this process).
func (r Result) ServerCPUPerRequest() time.Duration {
	if r.Requests == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Requests)
}

// Measure runs l with conc workers for about d and counts the completed
// requests. It stops at the first error.
func Measure(c *http.Client, l Load, conc int, d time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return MeasureCtx(ctx, c, l, conc, 0)
}

// MeasureCtx runs l with conc workers until ctx is done, every worker's
// load returns ErrExhausted, or a request fails (the first error is
// returned). If serverPID is not 0 the CPU time of that process is
// measured too (Result.ServerCPU).
func MeasureCtx(ctx context.Context, c *http.Client, l Load, conc int, serverPID int) (Result, error) {
	var stop atomic.Bool
	var reqs, nbytes atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	var srv0 time.Duration
	if serverPID != 0 {
		var err error
		if srv0, err = ProcCPU(serverPID); err != nil {
			return Result{}, err
		}
	}
	cpu0 := cpuTime()
	start := time.Now()
	unwatch := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer unwatch()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := l.New(c, w)
			var n, b int64
			for !stop.Load() {
				got, err := next()
				if errors.Is(err, ErrExhausted) {
					break
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					stop.Store(true)
					break
				}
				n++
				b += got
			}
			reqs.Add(n)
			nbytes.Add(b)
		}()
	}
	wg.Wait()
	res := Result{Requests: reqs.Load(), Bytes: nbytes.Load(), Elapsed: time.Since(start), CPU: cpuTime() - cpu0}
	if serverPID != 0 {
		srv1, err := ProcCPU(serverPID)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		res.ServerCPU, res.External = srv1-srv0, true
	}
	return res, firstErr
}

// Latencies are register-to-readable samples.
type Latencies struct {
	// FromAck is the time from receiving the register's 204 to the first
	// GET /eureka/apps/{app} whose body holds the instance.
	FromAck []time.Duration
	// FromSend is the same from sending the register request.
	FromSend []time.Duration
	// Polls is the number of GETs that did not show the instance yet.
	Polls int
	// Floor is, per sample, one GET of the same kind of document from a
	// static server right after the instance became readable: what a
	// single round trip costs at that moment.
	Floor []time.Duration
}

// RegisterToReadable registers samples new instances one after another, each
// into the next application, over HTTP. After each 204 it polls GET
// /eureka/apps/{app} (the cached read path, JSON) until the body holds the
// instance, then cancels the instance again (not timed) so the registry
// keeps its size. If floorBase is not empty, each sample also times one GET
// of floorBase's /eureka/apps/{app of instance 0} (a static server).
func (f *Fixture) RegisterToReadable(c *http.Client, samples int, floorBase string) (Latencies, error) {
	host := hostOf(f.Base)
	floorHost := ""
	if floorBase != "" {
		floorHost = hostOf(floorBase)
	}
	postHdr := javaHeaders("application/json", true)
	postHdr["Content-Type"] = []string{"application/json"}
	getHdr := javaHeaders("application/json", false)
	lat := Latencies{FromAck: make([]time.Duration, 0, samples), FromSend: make([]time.Duration, 0, samples)}
	var body, page []byte
	for s := 0; s < samples; s++ {
		in := NextFresh(f.Apps)
		body = AppendRegisterBody(body[:0], in)
		appPath := "/eureka/apps/" + in.App
		needle := []byte(`"instanceId":"` + in.ID + `"`)

		sent := time.Now()
		if _, err := do(c, newRequest(http.MethodPost, host, appPath, "", postHdr, body), http.StatusNoContent); err != nil {
			return lat, err
		}
		acked := time.Now()
		for {
			resp, err := c.Do(newRequest(http.MethodGet, host, appPath, "", getHdr, nil))
			if err != nil {
				return lat, err
			}
			buf := bytes.NewBuffer(page[:0])
			_, err = buf.ReadFrom(resp.Body)
			resp.Body.Close()
			page = buf.Bytes()
			if err != nil {
				return lat, err
			}
			if resp.StatusCode == http.StatusOK && bytes.Contains(page, needle) {
				break
			}
			lat.Polls++
			if time.Since(acked) > 10*time.Second {
				return lat, errors.New("bench: registered instance not readable after 10s")
			}
		}
		readable := time.Now()
		lat.FromAck = append(lat.FromAck, readable.Sub(acked))
		lat.FromSend = append(lat.FromSend, readable.Sub(sent))
		if floorHost != "" {
			t0 := time.Now()
			if _, err := do(c, newRequest(http.MethodGet, floorHost, "/eureka/apps/"+AppName(0), "", getHdr, nil), http.StatusOK); err != nil {
				return lat, err
			}
			lat.Floor = append(lat.Floor, time.Since(t0))
		}
		if _, err := do(c, newRequest(http.MethodDelete, host, appPath+"/"+in.ID, "", getHdr, nil), http.StatusOK); err != nil {
			return lat, err
		}
	}
	return lat, nil
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of ds by the
// nearest-rank method; ds is sorted in place.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	rank := int(float64(len(ds))*p/100+0.999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(ds) {
		rank = len(ds) - 1
	}
	return ds[rank]
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// RoundTrips times n sequential GETs of path from base: the floor of
// register-to-readable on this machine, which needs one such round trip.
func RoundTrips(c *http.Client, base, path, accept string, n int) ([]time.Duration, error) {
	host := hostOf(base)
	hdr := javaHeaders(accept, false)
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := do(c, newRequest(http.MethodGet, host, path, "", hdr, nil), http.StatusOK); err != nil {
			return out, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}
