package node_test

// Watchers of a node that dies: on a real three-node cluster, a Go client
// watch (blocking reads with a content-hash ETag), a VIP watch and a raw
// change-stream reader all read through node n0. n0 is then killed hard:
// every connection to it is reset (a TCP proxy in front of it is torn
// down) and its gossip goes silent (the in-memory network crashes it),
// and it is stopped. Changes are made on the other nodes before and after
// the kill. Each watcher must move to another node by itself and end up
// with exactly that node's registry: the watches resume with their ETag,
// the stream reader with its Last-Event-ID, which the new node does not
// know, so it gets a snapshot.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/client"
	"github.com/heureka/heureka/node"
)

// killProxy forwards TCP connections to a target until kill resets them
// all at once, as a machine that loses power does.
type killProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []*net.TCPConn
	dead  bool
}

func startKillProxy(t *testing.T, target string) *killProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &killProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.kill)
	return p
}

func (p *killProxy) addr() string { return p.ln.Addr().String() }

func (p *killProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		down := c.(*net.TCPConn)
		upc := up.(*net.TCPConn)
		p.mu.Lock()
		if p.dead {
			p.mu.Unlock()
			_ = down.Close()
			_ = upc.Close()
			return
		}
		p.conns = append(p.conns, down, upc)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(down, upc)
		go p.pipe(upc, down)
	}
}

// pipe copies from src to dst; when src ends, both are closed.
func (p *killProxy) pipe(dst, src *net.TCPConn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// kill stops accepting and resets every connection; it returns once every
// copy has stopped. It is idempotent.
func (p *killProxy) kill() {
	p.mu.Lock()
	p.dead = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.SetLinger(0) // RST, not FIN: nothing is said goodbye
		_ = c.Close()
	}
	p.wg.Wait()
}

// registryState is the instances of an applications document, by
// "APP/id", each as "status/overriddenStatus/lastDirtyTimestamp".
type registryState map[string]string

// appsDoc is the part of a Eureka JSON applications document the test
// compares.
type appsDoc struct {
	Applications struct {
		Hashcode    string `json:"apps__hashcode"`
		Application []struct {
			Name     string          `json:"name"`
			Instance json.RawMessage `json:"instance"`
		} `json:"application"`
	} `json:"applications"`
}

// docInstance is one instance of an applications document.
type docInstance struct {
	InstanceID         string `json:"instanceId"`
	Status             string `json:"status"`
	OverriddenStatus   string `json:"overriddenStatus"`
	LastDirtyTimestamp any    `json:"lastDirtyTimestamp"`
	ActionType         string `json:"actionType"`
}

// instances decodes an application's instance field: a list, or one
// object.
func instances(raw json.RawMessage) ([]docInstance, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '{' {
		var one docInstance
		err := json.Unmarshal(raw, &one)
		return []docInstance{one}, err
	}
	var list []docInstance
	err := json.Unmarshal(raw, &list)
	return list, err
}

// apply applies a document to st: a snapshot replaces it, a delta changes
// the instances it lists. It returns the document's hashcode.
func (st registryState) apply(data []byte, snapshot bool) (string, error) {
	var d appsDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return "", fmt.Errorf("undecodable document %q: %w", data, err)
	}
	if snapshot {
		clear(st)
	}
	for _, a := range d.Applications.Application {
		list, err := instances(a.Instance)
		if err != nil {
			return "", err
		}
		for _, in := range list {
			key := a.Name + "/" + in.InstanceID
			if in.ActionType == "DELETED" {
				delete(st, key)
				continue
			}
			st[key] = fmt.Sprintf("%s/%s/%v", in.Status, in.OverriddenStatus, in.LastDirtyTimestamp)
		}
	}
	return d.Applications.Hashcode, nil
}

// hashcode is Eureka's apps__hashcode of st: each status present, in
// alphabetical order, with its count ("OUT_OF_SERVICE_1_UP_4_").
func (st registryState) hashcode() string {
	counts := map[string]int{}
	for _, v := range st {
		status, _, _ := strings.Cut(v, "/")
		counts[status]++
	}
	var b strings.Builder
	for _, status := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s_%d_", status, counts[status])
	}
	return b.String()
}

// streamWatcher reads the change stream of the first of urls, moving to
// the next one whenever the stream fails, and keeps the registry it
// describes.
type streamWatcher struct {
	urls []string
	http *http.Client

	mu        sync.Mutex
	state     registryState
	hashcode  string
	lastID    string
	on        int // index of the url it reads (or tries) now
	snapshots int
	err       error // an event the watcher could not apply
}

func (w *streamWatcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.mu.Lock()
		u, last := w.urls[w.on], w.lastID
		w.mu.Unlock()
		w.read(ctx, u, last)
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		w.on = (w.on + 1) % len(w.urls)
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// read reads one connection's events until it fails.
func (w *streamWatcher) read(ctx context.Context, u, lastID string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := w.http.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return
	}
	br := bufio.NewReader(res.Body)
	var id, typ string
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && typ != "":
			w.event(id, typ, []byte(strings.Join(data, "\n")))
			id, typ, data = "", "", nil
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		}
	}
}

// event applies one event.
func (w *streamWatcher) event(id, typ string, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	hc, err := w.state.apply(data, typ == "snapshot")
	if err != nil {
		w.err = err
		return
	}
	if typ == "snapshot" {
		w.snapshots++
	}
	// What the watcher holds after each event is the whole registry the
	// event describes (the stream is not filtered): a missed change
	// would show as a different hashcode.
	if mine := w.state.hashcode(); mine != hc && w.err == nil {
		w.err = fmt.Errorf("after %s event %s the watcher's hashcode is %s, the server's %s", typ, id, mine, hc)
	}
	w.hashcode, w.lastID = hc, id
}

// view returns a copy of what the watcher holds now.
func (w *streamWatcher) view() (st registryState, hashcode string, on, snapshots int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.state), w.hashcode, w.on, w.snapshots, w.err
}

// registryOf reads GET /eureka/apps on nd.
func registryOf(t *testing.T, nd *node.Node) (registryState, string) {
	t.Helper()
	code, body := do(t, http.MethodGet, nd.URL()+"/apps", "")
	require.Equal(t, http.StatusOK, code, body)
	st := registryState{}
	hc, err := st.apply([]byte(body), true)
	require.NoError(t, err)
	return st, hc
}

// listOf is a watch's list as "id/status", sorted.
func listOf(list []client.Instance) []string {
	out := []string{}
	for _, in := range list {
		out = append(out, in.InstanceID+"/"+string(in.Status))
	}
	sort.Strings(out)
	return out
}

// expectedList is the instances of application app in st, as listOf
// writes them (the test's VIPs are their application's name).
func expectedList(st registryState, app string) []string {
	out := []string{}
	for _, k := range slices.Sorted(maps.Keys(st)) {
		if name, id, _ := strings.Cut(k, "/"); name == app {
			status, _, _ := strings.Cut(st[k], "/")
			out = append(out, id+"/"+status)
		}
	}
	sort.Strings(out)
	return out
}

// latest keeps the newest list a watch delivered.
type latest struct {
	ch   <-chan []client.Instance
	list []client.Instance
}

// poll takes every list waiting on the channel and returns the newest one
// seen so far.
func (l *latest) poll(t *testing.T) []string {
	for {
		select {
		case list, ok := <-l.ch:
			require.True(t, ok, "the watch channel is open")
			l.list = list
			continue
		default:
		}
		return listOf(l.list)
	}
}

// pushWatchers reads n0's heureka_push_watchers{kind}.
func pushWatchers(t *testing.T, nd *node.Node, kind string) float64 {
	mfs, err := nd.Metrics().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "heureka_push_watchers" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "kind" && lp.GetValue() == kind {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

func TestWatchersFailOverWhenTheirNodeIsKilled(t *testing.T) {
	tc := startCluster(t, 3, true, nil)
	n0, n1, n2 := tc.nodes[0], tc.nodes[1], tc.nodes[2]
	for _, r := range []struct{ app, id string }{
		{"ALPHA", "alpha-1"}, {"ALPHA", "alpha-2"}, {"BETA", "beta-1"}, {"BETA", "beta-2"}, {"GAMMA", "gamma-1"},
	} {
		require.Equal(t, http.StatusNoContent, status(t, "POST", n0.URL()+"/apps/"+r.app, registerBody(r.app, r.id, 90)))
	}
	require.Eventually(t, func() bool { return tc.converged() }, 20*time.Second, 20*time.Millisecond,
		"every node holds the first registrations")

	proxy := startKillProxy(t, n0.Addr())
	dead := "http://" + proxy.addr() + "/eureka"
	urls := []string{dead + "/", n1.URL() + "/", n2.URL() + "/"}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})

	// The Go client's watches, blocking reads of n0 first.
	cfg := client.DefaultConfig()
	cfg.ServerURLs = urls
	cfg.Instance = client.Instance{App: "watcher", InstanceID: "watcher-1", HostName: "watcher.local",
		IPAddr: "10.9.9.9", Port: 8080, Status: client.StatusUp}
	cfg.WatchWait = 30 * time.Second
	cfg.PollInterval = time.Hour // only blocking reads can deliver in time
	cfg.RequestTimeout = 5 * time.Second
	cfg.RetryInitial = 20 * time.Millisecond
	cfg.RetryMax = 500 * time.Millisecond
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := client.New(cfg)
	require.NoError(t, err)
	alpha := &latest{ch: c.Watch(ctx, "alpha")}
	beta := &latest{ch: c.WatchVIP(ctx, "beta")}

	// The stream reader, n0 first.
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	sw := &streamWatcher{urls: []string{dead + "/stream", n1.URL() + "/stream", n2.URL() + "/stream"},
		http: &http.Client{Transport: tr}, state: registryState{}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sw.run(ctx)
	}()

	// Everyone is on n0, up to date, and waiting there.
	want, _ := registryOf(t, n0)
	require.Eventually(t, func() bool {
		st, _, on, _, _ := sw.view()
		return on == 0 && assert.ObjectsAreEqual(want, st) &&
			assert.ObjectsAreEqual(expectedList(want, "ALPHA"), alpha.poll(t)) &&
			assert.ObjectsAreEqual(expectedList(want, "BETA"), beta.poll(t)) &&
			pushWatchers(t, n0, "blocking") == 2 && pushWatchers(t, n0, "stream") == 1
	}, 30*time.Second, 20*time.Millisecond, "the watchers hold n0's registry and wait on n0")

	// A change on n1 just before the kill: n0 may or may not pass it on.
	require.Equal(t, http.StatusNoContent, status(t, "POST", n1.URL()+"/apps/ALPHA", registerBody("ALPHA", "alpha-pre", 90)))

	// The kill: every connection to n0 reset, its gossip silent, then
	// the process stopped.
	proxy.kill()
	tc.net.Crash(tc.names[0])
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		_ = n0.Stop(sctx)
	}()

	// Changes on the survivors while the watchers move.
	require.Equal(t, http.StatusNoContent, status(t, "POST", n1.URL()+"/apps/ALPHA", registerBody("ALPHA", "alpha-3", 90)))
	require.Equal(t, http.StatusOK, status(t, "DELETE", n2.URL()+"/apps/ALPHA/alpha-1", ""))
	require.Equal(t, http.StatusNoContent, status(t, "POST", n2.URL()+"/apps/BETA", registerBody("BETA", "beta-3", 90)))
	require.Equal(t, http.StatusOK, status(t, "PUT", n1.URL()+"/apps/BETA/beta-1/status?value=OUT_OF_SERVICE", ""))
	require.Equal(t, http.StatusOK, status(t, "DELETE", n1.URL()+"/apps/GAMMA/gamma-1", ""))
	require.Equal(t, http.StatusNoContent, status(t, "POST", n2.URL()+"/apps/DELTA", registerBody("DELTA", "delta-1", 90)))
	<-stopped

	// Every watcher ends up with exactly the survivors' registry.
	requireCaughtUp := func(what string) {
		t.Helper()
		caughtUp := func() bool {
			if !tc.converged(n1, n2) {
				return false
			}
			want, wantHC := registryOf(t, n1)
			st, hc, on, _, serr := sw.view()
			return serr == nil && on != 0 && assert.ObjectsAreEqual(want, st) && hc == wantHC &&
				assert.ObjectsAreEqual(expectedList(want, "ALPHA"), alpha.poll(t)) &&
				assert.ObjectsAreEqual(expectedList(want, "BETA"), beta.poll(t))
		}
		if !assert.Eventually(t, caughtUp, 60*time.Second, 20*time.Millisecond) {
			want, wantHC := registryOf(t, n1)
			st, hc, on, snapshots, serr := sw.view()
			require.FailNowf(t, "the watchers do not hold the survivors' registry",
				"%s: survivors (converged %t) %v %s; stream on url %d with %d snapshots (err %v): %v %s; alpha %v; beta %v",
				what, tc.converged(n1, n2), want, wantHC, on, snapshots, serr, st, hc, alpha.poll(t), beta.poll(t))
		}
	}
	requireCaughtUp("after the kill")
	want, _ = registryOf(t, n1)
	assert.NotContains(t, want, "ALPHA/alpha-1")
	assert.Contains(t, want, "ALPHA/alpha-pre")
	assert.Contains(t, want, "ALPHA/alpha-3")
	assert.True(t, strings.HasPrefix(want["BETA/beta-1"], "OUT_OF_SERVICE/"), want["BETA/beta-1"])
	_, _, _, snapshots, _ := sw.view()
	assert.Equal(t, 2, snapshots, "the stream started with a snapshot, and got one on the node it moved to")

	// They now wait on a survivor and see its next changes.
	require.Equal(t, http.StatusNoContent, status(t, "POST", n2.URL()+"/apps/ALPHA", registerBody("ALPHA", "alpha-4", 90)))
	require.Equal(t, http.StatusOK, status(t, "DELETE", n1.URL()+"/apps/BETA/beta-2", ""))
	requireCaughtUp("after the move")

	cancel()
	wg.Wait()
	for _, l := range []*latest{alpha, beta} {
		for range l.ch { // closed once the watch has stopped
		}
	}
}
