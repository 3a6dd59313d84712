package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/bench"
)

// The poll phase: stock Java clients with registry-fetch-interval-seconds=1
// (see the package comment). A client's copy of the registry is the full
// document it fetched last (shared, read-only, by every client that
// fetched the same bytes) and the instances the deltas since then changed
// (its own); the hashcode it reconciles with is computed from both, as
// the Java client's getReconcileHashCode counts its instances by status.
// A delta with the ETag of the one applied last is not parsed again
// (applying a delta twice changes nothing).

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// docInstance is what the client keeps of an instance.
type docInstance struct {
	ID         string `json:"instanceId"`
	Status     string `json:"status"`
	ActionType string `json:"actionType"`
}

type appsDoc struct {
	Applications struct {
		HashCode    string `json:"apps__hashcode"`
		Application []struct {
			Instance []docInstance `json:"instance"`
		} `json:"application"`
	} `json:"applications"`
}

// fullCopy is a parsed full registry.
type fullCopy struct {
	status map[string]string
	counts map[string]int
}

// deltaDoc is a parsed delta.
type deltaDoc struct {
	hash    string
	changes []docInstance
}

// docCache parses each distinct document once.
type docCache struct {
	mu     sync.Mutex
	full   map[[32]byte]*fullCopy
	deltas map[string]*deltaDoc
}

func gunzipped(body []byte, enc string) ([]byte, error) {
	if enc != "gzip" {
		return body, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func parseApps(body []byte, enc string) (*appsDoc, error) {
	raw, err := gunzipped(body, enc)
	if err != nil {
		return nil, err
	}
	var d appsDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

func (dc *docCache) fullOf(body []byte, enc string) (*fullCopy, error) {
	key := sha256.Sum256(body)
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if f, ok := dc.full[key]; ok {
		return f, nil
	}
	d, err := parseApps(body, enc)
	if err != nil {
		return nil, err
	}
	f := &fullCopy{status: map[string]string{}, counts: map[string]int{}}
	for _, a := range d.Applications.Application {
		for _, in := range a.Instance {
			f.status[in.ID] = in.Status
			f.counts[in.Status]++
		}
	}
	clear(dc.full) // keep the latest only
	dc.full[key] = f
	return f, nil
}

func (dc *docCache) deltaOf(etag string, body []byte, enc string) (*deltaDoc, error) {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if d, ok := dc.deltas[etag]; ok && etag != "" {
		return d, nil
	}
	doc, err := parseApps(body, enc)
	if err != nil {
		return nil, err
	}
	d := &deltaDoc{hash: doc.Applications.HashCode}
	for _, a := range doc.Applications.Application {
		d.changes = append(d.changes, a.Instance...)
	}
	if len(dc.deltas) > 64 {
		clear(dc.deltas)
	}
	dc.deltas[etag] = d
	return d, nil
}

// pollStats are the clients' counters.
type pollStats struct {
	bytes, deltas, fulls, mismatches, errs atomic.Int64
	deltaEntries                           atomic.Int64 // in the last delta parsed
	lastErr                                atomic.Value
}

// poller is one stock client.
type poller struct {
	c       *http.Client
	base    string
	cache   *docCache
	st      *pollStats
	full    *fullCopy
	overlay map[string]string // id → status; "" deleted
	applied string            // the ETag of the delta applied last
}

var javaHeader = http.Header{
	"Accept":                    {"application/json"},
	"Accept-Encoding":           {"gzip"},
	"Discoveryidentity-Name":    {"DefaultClient"},
	"Discoveryidentity-Version": {"1.4"},
	"Discoveryidentity-Id":      {"10.0.0.1"},
	"User-Agent":                {"Java-EurekaClient/v1.10.18"},
}

func (p *poller) get(ctx context.Context, path string) (body []byte, etag, enc string, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	req.Header = javaHeader
	resp, err := p.c.Do(req)
	if err != nil {
		return nil, "", "", err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
	}
	return body, resp.Header.Get("ETag"), resp.Header.Get("Content-Encoding"), err
}

func (p *poller) fetchFull(ctx context.Context) error {
	body, _, enc, err := p.get(ctx, "/eureka/apps/")
	if err != nil {
		return err
	}
	f, err := p.cache.fullOf(body, enc)
	if err != nil {
		return err
	}
	p.st.fulls.Add(1)
	p.full, p.overlay, p.applied = f, map[string]string{}, ""
	return nil
}

// hashCode is the reconcile hashcode of the client's copy.
func (p *poller) hashCode() string {
	counts := make(map[string]int, len(p.full.counts))
	for s, n := range p.full.counts {
		counts[s] = n
	}
	for id, s := range p.overlay {
		if old, ok := p.full.status[id]; ok {
			counts[old]--
		}
		if s != "" {
			counts[s]++
		}
	}
	var b strings.Builder
	for _, s := range actors.AllStatuses {
		if n := counts[string(s)]; n > 0 {
			b.WriteString(string(s))
			b.WriteByte('_')
			b.WriteString(strconv.Itoa(n))
			b.WriteByte('_')
		}
	}
	return b.String()
}

// pollDelta is one fetch of the delta, a full fetch if the hashcodes
// differ.
func (p *poller) pollDelta(ctx context.Context) error {
	body, etag, enc, err := p.get(ctx, "/eureka/apps/delta")
	if err != nil {
		return err
	}
	p.st.deltas.Add(1)
	if etag != "" && etag == p.applied {
		return nil
	}
	d, err := p.cache.deltaOf(etag, body, enc)
	if err != nil {
		return err
	}
	p.st.deltaEntries.Store(int64(len(d.changes)))
	for _, in := range d.changes {
		if in.ActionType == "DELETED" {
			p.overlay[in.ID] = ""
		} else {
			p.overlay[in.ID] = in.Status
		}
	}
	p.applied = etag
	if p.hashCode() != d.hash {
		p.st.mismatches.Add(1)
		return p.fetchFull(ctx)
	}
	return nil
}

func (p *poller) run(ctx context.Context, startAfter time.Duration, started *sync.WaitGroup) {
	fail := func(err error) {
		if ctx.Err() == nil {
			p.st.errs.Add(1)
			p.st.lastErr.Store(err.Error())
		}
	}
	select {
	case <-ctx.Done():
		started.Done()
		return
	case <-time.After(startAfter):
	}
	for ctx.Err() == nil {
		err := p.fetchFull(ctx)
		if err == nil {
			break
		}
		fail(err)
		time.Sleep(time.Second)
	}
	started.Done()
	// registry-fetch-interval-seconds=1: a fixed delay of 1 s between
	// fetches, as the Java client's TimedSupervisorTask schedules them.
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		if err := p.pollDelta(ctx); err != nil {
			fail(err)
		}
	}
}

// churner makes rate changes a second until ctx ends, as rolling deploys
// do: a new instance, then the cancellation of a loaded one (instances 0,
// 1, … of the size loaded), and so on; only new instances once every
// loaded one is gone. The first prefill changes are made at once.
func churner(ctx context.Context, c *http.Client, base string, size int, rate float64, prefill int, errs *atomic.Int64) {
	if rate <= 0 {
		return
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	var body []byte
	victim := 0
	for k := 0; ; k++ {
		if k >= prefill {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		var err error
		if k%2 == 0 || victim >= size {
			in := bench.NextFresh((size + 19) / 20)
			body = bench.AppendRegisterBody(body[:0], in)
			err = send(c, http.MethodPost, base+"/eureka/apps/"+in.App, body)
		} else {
			in := bench.InstanceAt(victim)
			victim++
			err = send(c, http.MethodDelete, base+"/eureka/apps/"+in.App+"/"+in.ID, nil)
		}
		if err != nil && ctx.Err() == nil {
			errs.Add(1)
		}
	}
}

// pollResult is one registry size's measurement.
type pollResult struct {
	size                 int
	aloneCPU, aloneWall  time.Duration
	cpu, wall            time.Duration
	bytes, deltas, fulls int64
	mismatches, errs     int64
	startBytes           int64
	startWall            time.Duration
	churnErrs            int64
	load                 string
	prefill              int
	deltaEntries         int64 // instances in the last delta a client parsed
}

func runPoll(c Config) error {
	fmt.Printf("\n## poll: %d stock clients, registry-fetch-interval-seconds=1, %.3g changes/s, %v per measurement\n\n", c.PollClients, c.PollChurn, c.PollFor)
	var results []pollResult
	for _, size := range c.PollSizes {
		r, err := pollSize(c, size)
		if err != nil {
			return err
		}
		results = append(results, r)
		fmt.Printf("(poll) %d instances measured, load %s\n", size, r.load)
	}
	fmt.Printf("\nThe node's CPU with the clients and with the changes alone (no client), in CPU seconds per second (cores); bytes: what the clients read from their connections (headers and gzip bodies).\n\n")
	fmt.Println("| instances | thousands of clients | node CPU s | wall s | cores = node CPU s ÷ wall s | alone CPU s | alone wall s | alone cores = alone CPU s ÷ alone wall s | for the clients = cores − alone cores | cores per 1,000 clients = for the clients ÷ thousands of clients | bytes | bytes/s = bytes ÷ wall s | bytes/s per 1,000 clients = bytes/s ÷ thousands of clients | delta fetches | full fetches | hashcode mismatches | errors | load |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range results {
		k := float64(c.PollClients) / 1000
		cores, alone := r.cpu.Seconds()/r.wall.Seconds(), r.aloneCPU.Seconds()/r.aloneWall.Seconds()
		rate := float64(r.bytes) / r.wall.Seconds()
		fmt.Printf("| %d | %.3f | %.2f | %.2f | %.4f | %.2f | %.2f | %.4f | %.4f | %.4f | %d | %.0f | %.0f | %d | %d | %d | %d | %s |\n", r.size, k,
			r.cpu.Seconds(), r.wall.Seconds(), cores, r.aloneCPU.Seconds(), r.aloneWall.Seconds(), alone, cores-alone, (cores-alone)/k,
			r.bytes, rate, rate/k, r.deltas, r.fulls, r.mismatches, r.errs+r.churnErrs, r.load)
	}
	fmt.Println("\nThe delta: changes made at once before the measurement to fill its 3-minute window (prefill), instances in the last delta a client read at the end. Start-up (not in the figures above): what the clients read until 2 s after the last client's first full fetch (the clients started at random over 10 s).")
	fmt.Println("\n| instances | prefill changes | delta instances at the end | start-up bytes | start-up bytes per client | start-up s |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Printf("| %d | %d | %d | %d | %.0f | %.1f |\n", r.size, r.prefill, r.deltaEntries, r.startBytes, float64(r.startBytes)/float64(c.PollClients), r.startWall.Seconds())
	}
	return nil
}

func pollSize(c Config, size int) (pollResult, error) {
	res := pollResult{size: size}
	// The delta holds the changes of the last 3 minutes: the window is
	// filled at once with what the churn would have left in it by the
	// start of the measurement with clients (about 15 s after the start
	// of the changes alone), so that the clients read a delta of steady
	// state.
	res.prefill = max(0, int(c.PollChurn*(180-15-c.PollFor.Seconds())))
	ch, err := startChild(c, size, 10000)
	if err != nil {
		return res, err
	}
	defer ch.stop()
	ctx, cancel := context.WithCancel(context.Background())
	ctl := newClient(2)
	defer ctl.CloseIdleConnections()
	var churnErrs atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		churner(ctx, ctl, ch.base, size, c.PollChurn, res.prefill, &churnErrs)
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()

	time.Sleep(3 * time.Second)
	c0, t0 := ch.cpu(), time.Now()
	time.Sleep(c.PollFor)
	res.aloneCPU, res.aloneWall = ch.cpu()-c0, time.Since(t0)

	st := &pollStats{}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{conn, &st.bytes}, nil
		},
		MaxIdleConns:        c.PollClients,
		MaxIdleConnsPerHost: c.PollClients,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	cache := &docCache{full: map[[32]byte]*fullCopy{}, deltas: map[string]*deltaDoc{}}
	spread := 10 * time.Second
	var started, clients sync.WaitGroup
	started.Add(c.PollClients)
	ts := time.Now()
	for i := 0; i < c.PollClients; i++ {
		p := &poller{c: hc, base: ch.base, cache: cache, st: st}
		after := time.Duration(rand.Int64N(int64(spread)))
		clients.Add(1)
		go func() {
			defer clients.Done()
			p.run(ctx, after, &started)
		}()
	}
	defer func() {
		cancel()
		clients.Wait()
	}()
	all := make(chan struct{})
	go func() {
		started.Wait()
		close(all)
	}()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		cancel() // every client stops; started.Wait returns
		return res, fmt.Errorf("not every client had its first full fetch after 5 minutes (errors %d, last %v)", st.errs.Load(), st.lastErr.Load())
	}
	res.startWall = time.Since(ts)
	time.Sleep(2 * time.Second) // every client polling at its own phase
	res.load = bench.LoadAvg()
	b0, d0, f0, m0, e0 := st.bytes.Load(), st.deltas.Load(), st.fulls.Load(), st.mismatches.Load(), st.errs.Load()
	res.startBytes = b0
	c0, t0 = ch.cpu(), time.Now()
	time.Sleep(c.PollFor)
	res.cpu, res.wall = ch.cpu()-c0, time.Since(t0)
	res.bytes, res.deltas, res.fulls = st.bytes.Load()-b0, st.deltas.Load()-d0, st.fulls.Load()-f0
	res.mismatches, res.errs = st.mismatches.Load()-m0, st.errs.Load()-e0
	res.churnErrs = churnErrs.Load()
	res.deltaEntries = st.deltaEntries.Load()
	if res.errs > 0 {
		fmt.Printf("(poll) %d client errors, last: %v\n", res.errs, st.lastErr.Load())
	}
	return res, nil
}
