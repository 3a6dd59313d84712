package eurekapeer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eurekapeer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.(*guardiansValue).newGuardian"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/eventstream.(*EventStream).Subscribe"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"))
}

// fakePeer is a Eureka server's peer batch endpoint, keeping what Java
// keeps: instances by key with their lastDirtyTimestamp and status, 404 for
// a heartbeat of an unknown instance (or one with a newer
// lastDirtyTimestamp), 409 with its copy for an older one.
type fakePeer struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	requests  int
	items     []item // every item received, in order
	instances map[string]item
	headers   []http.Header
	failNext  int // answer this many requests with 503
	broken    bool
	hold      chan struct{} // when set, requests wait on it
	held      int           // requests that began waiting on hold
	newer     map[string]int64
}

type item struct {
	AppName            string          `json:"appName"`
	ID                 string          `json:"id"`
	LastDirtyTimestamp *int64          `json:"lastDirtyTimestamp"`
	OverriddenStatus   string          `json:"overriddenStatus"`
	Status             string          `json:"status"`
	InstanceInfo       json.RawMessage `json:"instanceInfo"`
	Action             string          `json:"action"`
}

func newFakePeer(t *testing.T) *fakePeer {
	f := &fakePeer{t: t, instances: map[string]item{}, newer: map[string]int64{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePeer) url() string { return f.srv.URL + "/eureka/" }

func (f *fakePeer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	hold := f.hold
	if hold != nil {
		f.held++
	}
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if r.Method != http.MethodPost || r.URL.Path != "/eureka/peerreplication/batch" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	f.headers = append(f.headers, r.Header.Clone())
	if f.failNext > 0 || f.broken {
		f.failNext--
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	var list struct {
		ReplicationList []item `json:"replicationList"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var out []string
	for _, it := range list.ReplicationList {
		f.items = append(f.items, it)
		k := it.AppName + "/" + it.ID
		code, entity := 200, ""
		cur, known := f.instances[k]
		switch it.Action {
		case "Register":
			f.instances[k] = it
		case "Heartbeat":
			switch {
			case !known:
				code = 404
			case f.newer[k] != 0:
				code = 409
				var inst map[string]any
				_ = json.Unmarshal(cur.InstanceInfo, &inst)
				inst["lastDirtyTimestamp"] = fmt.Sprint(f.newer[k])
				inst["metadata"] = map[string]string{"from": "java"}
				b, _ := json.Marshal(inst)
				entity = `,"responseEntity":` + string(b)
			case *it.LastDirtyTimestamp > *cur.LastDirtyTimestamp:
				code = 404
			}
		case "Cancel":
			if !known {
				code = 404
			}
			delete(f.instances, k)
		case "StatusUpdate", "DeleteStatusOverride":
			if !known {
				code = 404
			} else {
				cur.Status = it.Status
				f.instances[k] = cur
			}
		}
		out = append(out, fmt.Sprintf(`{"statusCode":%d%s}`, code, entity))
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"responseList":[`+strings.Join(out, ",")+`]}`)
}

func (f *fakePeer) has(app, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.instances[app+"/"+id]
	return ok
}

func (f *fakePeer) status(app, id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.instances[app+"/"+id].Status
}

// count returns the number of items received with action (all if "").
func (f *fakePeer) count(action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, it := range f.items {
		if action == "" || it.Action == action {
			n++
		}
	}
	return n
}

func (f *fakePeer) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// harness is a real registry, observed by a Sender to the fake peer.
type harness struct {
	reg *actors.Registry
	api actors.API // what the HTTP API would write through (httpapi.Registry)
	s   *eurekapeer.Sender
}

func newHarness(t *testing.T, f *fakePeer, mod func(*eurekapeer.Config)) *harness {
	reg, err := actors.NewRegistry(actors.DefaultConfig("n1"))
	require.NoError(t, err)
	t.Cleanup(reg.Close)
	cfg := eurekapeer.DefaultConfig(f.url())
	cfg.Registry = reg
	cfg.FlushInterval = 20 * time.Millisecond
	cfg.MaxBackoff = 100 * time.Millisecond
	cfg.Timeout = 2 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	s, err := eurekapeer.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return &harness{reg: reg, api: eurekapeer.Observe(reg, s), s: s}
}

func instance(app, id string) *actors.Instance {
	inst := &actors.Instance{InstanceID: id, App: app, HostName: id + ".local", IPAddr: "10.0.0.1",
		Status: actors.StatusUp, DataCenterInfo: actors.DataCenterInfo{Name: "MyOwn"},
		Port: actors.Port{Number: 8080, Enabled: true}, VIPAddress: strings.ToLower(app)}
	inst.Normalize()
	return inst
}

func renew(t *testing.T, api actors.API, app, id string, replicated bool) {
	res, err := api.Renew(context.Background(), actors.RenewRequest{App: app, ID: id, Replicated: replicated})
	require.NoError(t, err)
	require.Equal(t, actors.RenewOK, res.Outcome)
}

const wait, tick = 5 * time.Second, 5 * time.Millisecond

// Registrations, renewals, status updates and cancels of local clients
// reach the peer in Java's format, with the replication header.
func TestClientChangesReachThePeer(t *testing.T) {
	f := newFakePeer(t)
	h := newHarness(t, f, nil)
	ctx := context.Background()
	require.NoError(t, h.api.Register(ctx, instance("ORDERS", "o-1"), false))
	require.Eventually(t, func() bool { return f.has("ORDERS", "o-1") }, wait, tick)

	f.mu.Lock()
	hdr := f.headers[0]
	reg := f.items[0]
	f.mu.Unlock()
	assert.Equal(t, "true", hdr.Get("x-netflix-discovery-replication"))
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))
	var ii map[string]any
	require.NoError(t, json.Unmarshal(reg.InstanceInfo, &ii), "instanceInfo is the unwrapped instance")
	assert.Equal(t, "o-1", ii["instanceId"])
	assert.Equal(t, "ORDERS", ii["app"])
	require.NotNil(t, reg.LastDirtyTimestamp)

	renew(t, h.api, "ORDERS", "o-1", false)
	require.Eventually(t, func() bool { return f.count("Heartbeat") >= 1 }, wait, tick)

	ok, err := h.api.SetStatus(ctx, "ORDERS", "o-1", actors.StatusOutOfService, nil, false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool { return f.status("ORDERS", "o-1") == "OUT_OF_SERVICE" }, wait, tick)
	ok, err = h.api.DeleteOverride(ctx, "ORDERS", "o-1", actors.StatusUp, nil, false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool { return f.status("ORDERS", "o-1") == "UP" }, wait, tick)

	ok, err = h.api.Cancel(ctx, "ORDERS", "o-1", false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool { return !f.has("ORDERS", "o-1") }, wait, tick)
	require.NoError(t, h.s.Close(ctx)) // the reply has been handled
	st := h.s.Stats()[0]
	assert.Equal(t, uint64(1), st.Sent["Cancel"])
	assert.Zero(t, st.Failed)
}

// A renewal storm is coalesced: one Heartbeat per instance per flush, a
// handful of requests for thousands of renewals.
func TestRenewalStormIsCoalesced(t *testing.T) {
	f := newFakePeer(t)
	h := newHarness(t, f, func(c *eurekapeer.Config) { c.FlushInterval = 50 * time.Millisecond })
	ctx := context.Background()
	const n, renewals = 20, 100
	for i := range n {
		require.NoError(t, h.api.Register(ctx, instance("STORM", fmt.Sprint("s-", i)), false))
	}
	require.Eventually(t, func() bool { return f.count("Register") == n }, wait, tick)
	before := f.requestCount()
	for range renewals {
		for i := range n {
			renew(t, h.api, "STORM", fmt.Sprint("s-", i), false)
		}
	}
	require.NoError(t, h.s.Close(ctx)) // flushes the rest
	requests := f.requestCount() - before
	heartbeats := f.count("Heartbeat")
	t.Logf("%d renewals → %d heartbeat items in %d requests", n*renewals, heartbeats, requests)
	assert.GreaterOrEqual(t, heartbeats, n, "every instance's renewal reached the peer")
	assert.LessOrEqual(t, heartbeats, n*requests, "at most one heartbeat per instance per request")
	assert.Less(t, requests, n*renewals/10, "renewals are batched, not one request each")
	assert.Equal(t, n, f.count("Register"), "renewals add no registrations")
}

// The peer's 404 on a heartbeat (it lost the instance, or never had it)
// makes the sender register the instance, as a Java peer does.
func TestHeartbeat404SendsTheRegistration(t *testing.T) {
	f := newFakePeer(t)
	h := newHarness(t, f, nil)
	// Installed as a replica (not sent), then renewed by a local client.
	require.NoError(t, h.reg.Register(context.Background(), instance("LOST", "l-1"), true))
	renew(t, h.api, "LOST", "l-1", false)
	require.Eventually(t, func() bool { return f.has("LOST", "l-1") }, wait, tick, "the 404 brought the registration")
	assert.Equal(t, 1, f.count("Register"))
	assert.GreaterOrEqual(t, h.s.Stats()[0].Reregistered, uint64(1))
}

// A 409 carries the peer's newer copy, which is installed here as a
// replica (Java's syncInstancesIfTimestampDiffers).
func TestHeartbeat409InstallsThePeersNewerCopy(t *testing.T) {
	f := newFakePeer(t)
	h := newHarness(t, f, nil)
	inst := instance("CONFLICT", "c-1")
	require.NoError(t, h.api.Register(context.Background(), inst, false))
	require.Eventually(t, func() bool { return f.has("CONFLICT", "c-1") }, wait, tick)
	stored, _, _, err := h.reg.Get(context.Background(), "CONFLICT", "c-1")
	require.NoError(t, err)
	f.mu.Lock()
	f.newer["CONFLICT/c-1"] = stored.LastDirtyTimestamp + 1000
	f.mu.Unlock()
	renew(t, h.api, "CONFLICT", "c-1", false)
	require.Eventually(t, func() bool {
		got, _, _, err := h.reg.Get(context.Background(), "CONFLICT", "c-1")
		return err == nil && got.Metadata["from"] == "java"
	}, wait, tick, "the peer's newer copy replaced ours")
}

// A failing peer is retried with backoff until it answers; nothing is lost
// and the client's calls never wait for it.
func TestFailedBatchesAreRetried(t *testing.T) {
	f := newFakePeer(t)
	f.failNext = 3
	h := newHarness(t, f, nil)
	require.NoError(t, h.api.Register(context.Background(), instance("RETRY", "r-1"), false))
	require.Eventually(t, func() bool { return f.has("RETRY", "r-1") }, wait, tick)
	require.NoError(t, h.s.Close(context.Background())) // the reply has been handled
	st := h.s.Stats()[0]
	assert.Equal(t, uint64(3), st.Failed)
	assert.Equal(t, uint64(1), st.Sent["Register"])
}

// Changes that came from a Eureka peer (replicated) are never sent back to
// Eureka peers.
func TestPeerChangesAreNotEchoed(t *testing.T) {
	assert.Empty(t, echoed(t), "a peer's change was echoed")
}

// echoed makes replicated writes (a register, renewal and status update of
// one instance, a register and cancel of another), then a client's
// registration, and returns the items about the replicated ones that
// reached the peer.
func echoed(t *testing.T) []item {
	f := newFakePeer(t)
	h := newHarness(t, f, nil)
	ctx := context.Background()
	require.NoError(t, h.api.Register(ctx, instance("ECHO", "e-1"), true))
	renew(t, h.api, "ECHO", "e-1", true)
	_, err := h.api.SetStatus(ctx, "ECHO", "e-1", actors.StatusOutOfService, nil, true)
	require.NoError(t, err)
	require.NoError(t, h.api.Register(ctx, instance("ECHO", "e-2"), true))
	_, err = h.api.Cancel(ctx, "ECHO", "e-2", true)
	require.NoError(t, err)
	// A local change made after them: once it arrived, anything queued
	// before it has been sent too.
	require.NoError(t, h.api.Register(ctx, instance("LOCAL", "x-1"), false))
	require.Eventually(t, func() bool { return f.has("LOCAL", "x-1") }, wait, tick)
	require.NoError(t, h.s.Close(ctx))
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []item
	for _, it := range f.items {
		if it.AppName == "ECHO" {
			out = append(out, it)
		}
	}
	return out
}

// The queue is bounded: with the peer stuck, changes to more instances than
// MaxPending are dropped and counted, and noting a change never blocks.
func TestQueueIsBounded(t *testing.T) {
	f := newFakePeer(t)
	hold := make(chan struct{})
	f.hold = hold
	h := newHarness(t, f, func(c *eurekapeer.Config) { c.BatchSize = 5; c.MaxPending = 10 })
	ctx := context.Background()
	// Real registrations (a change to an instance the registry does not
	// hold is not sent), and a wait until the first batch is stuck at the
	// peer: the sender is then blocked, however the machine schedules it
	// (before, it could drain unsendable changes while the burst ran, and
	// CI once counted 20 dropped).
	require.NoError(t, h.api.Register(ctx, instance("BOUND", "b-0"), false))
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.held > 0
	}, wait, tick, "the first batch reaches the stuck peer")
	for i := 1; i < 40; i++ {
		require.NoError(t, h.api.Register(ctx, instance("BOUND", fmt.Sprint("b-", i)), false))
	}
	st := h.s.Stats()[0]
	assert.LessOrEqual(t, st.Pending, 10)
	assert.GreaterOrEqual(t, st.Dropped, uint64(40-10-5), "at most MaxPending queued plus one batch in flight")
	f.mu.Lock()
	assert.Equal(t, 1, f.held, "one request in flight")
	f.mu.Unlock()
	close(hold)
}

// Close sends what is pending and stops every goroutine (TestMain checks
// for leaks); a peer that does not answer is abandoned when ctx ends.
func TestCloseFlushesAndStops(t *testing.T) {
	f := newFakePeer(t)
	h := newHarness(t, f, func(c *eurekapeer.Config) { c.FlushInterval = time.Hour; c.MaxBackoff = time.Hour })
	require.NoError(t, h.api.Register(context.Background(), instance("BYE", "b-1"), false))
	require.NoError(t, h.s.Close(context.Background()))
	assert.True(t, f.has("BYE", "b-1"), "Close flushed the pending registration")
	h.s.Registered("BYE", "b-2") // after Close: ignored, no panic

	stuck := newFakePeer(t)
	hold := make(chan struct{})
	defer close(hold)
	stuck.hold = hold
	h2 := newHarness(t, stuck, func(c *eurekapeer.Config) { c.FlushInterval = time.Hour; c.MaxBackoff = time.Hour })
	require.NoError(t, h2.api.Register(context.Background(), instance("BYE", "b-3"), false))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := h2.s.Close(ctx)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "Close gave up on the stuck peer: %v", err)
}

func TestConfigRejectsBadValues(t *testing.T) {
	reg, err := actors.NewRegistry(actors.DefaultConfig("n1"))
	require.NoError(t, err)
	defer reg.Close()
	good := eurekapeer.DefaultConfig("http://old:8761/eureka/")
	good.Registry = reg
	require.NoError(t, good.Validate())
	for name, mod := range map[string]func(*eurekapeer.Config){
		"no peers":        func(c *eurekapeer.Config) { c.Peers = nil },
		"bad scheme":      func(c *eurekapeer.Config) { c.Peers = []string{"ftp://old/eureka/"} },
		"no host":         func(c *eurekapeer.Config) { c.Peers = []string{"http:///eureka/"} },
		"query":           func(c *eurekapeer.Config) { c.Peers = []string{"http://old/eureka/?x=1"} },
		"no registry":     func(c *eurekapeer.Config) { c.Registry = nil },
		"batch size":      func(c *eurekapeer.Config) { c.BatchSize = 0 },
		"flush interval":  func(c *eurekapeer.Config) { c.FlushInterval = 0 },
		"max pending":     func(c *eurekapeer.Config) { c.MaxPending = c.BatchSize - 1 },
		"timeout":         func(c *eurekapeer.Config) { c.Timeout = -time.Second },
		"backoff < flush": func(c *eurekapeer.Config) { c.MaxBackoff = c.FlushInterval / 2 },
	} {
		c := good
		mod(&c)
		_, err := eurekapeer.New(c)
		assert.Error(t, err, name)
	}
	_, err = eurekapeer.ParsePeerURL("ftp://user:s3cret@old/eureka/")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret", "no password in messages")
	u, err := eurekapeer.ParsePeerURL("http://old:8761/eureka")
	require.NoError(t, err)
	assert.Equal(t, "http://old:8761/eureka/", u.String(), "a trailing slash is added")
}
