package simclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeNodes answers the client's requests per node from a table the test
// changes, and logs what it was asked.
type fakeNodes struct {
	mu     sync.Mutex
	status map[string]map[string]int // node → method → status
	down   map[string]bool           // the node is unreachable
	log    []string                  // "node METHOD path"
}

func (f *fakeNodes) set(node, method string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status[node] == nil {
		f.status[node] = map[string]int{}
	}
	f.status[node][method] = code
}

func (f *fakeNodes) send(_ context.Context, node, method, path, _ string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, node+" "+method+" "+path)
	if f.down[node] {
		return 0, errors.New("unreachable")
	}
	return f.status[node][method], nil
}

func (f *fakeNodes) asked(method string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, l := range f.log {
		if strings.Contains(l, " "+method+" ") {
			out = append(out, strings.SplitN(l, " ", 2)[0])
		}
	}
	return out
}

// events collects a client's reports.
type events struct {
	mu                    sync.Mutex
	registered, renewedAt []string
	again, failed, overs  int
	ended                 bool
	how                   Ending
	by                    string
}

func (e *events) hooks() Events {
	lock := func(fn func()) { e.mu.Lock(); defer e.mu.Unlock(); fn() }
	return Events{
		Registered: func(node string, sent, at time.Time, again bool) {
			lock(func() {
				e.registered = append(e.registered, node)
				if again {
					e.again++
				}
			})
		},
		Renewed:     func(node string, _ time.Time) { lock(func() { e.renewedAt = append(e.renewedAt, node) }) },
		RenewFailed: func() { lock(func() { e.failed++ }) },
		FailedOver:  func() { lock(func() { e.overs++ }) },
		Ended:       func(_ time.Time, how Ending, by string) { lock(func() { e.ended, e.how, e.by = true, how, by }) },
	}
}

func (e *events) renewals() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.renewedAt)
}

func newFake() *fakeNodes {
	f := &fakeNodes{status: map[string]map[string]int{}, down: map[string]bool{}}
	for _, n := range []string{"n0", "n1", "n2"} {
		f.set(n, http.MethodPost, http.StatusNoContent)
		f.set(n, http.MethodPut, http.StatusOK)
		f.set(n, http.MethodDelete, http.StatusOK)
	}
	return f
}

func config(f *fakeNodes, ev *events) Config {
	return Config{
		App: "ORDERS", ID: "orders-001", Order: []string{"n0", "n1", "n2"},
		Body: "{}", LastDirty: 42, RenewInterval: 10 * time.Millisecond,
		Send: f.send, Events: ev.hooks(),
	}
}

// The client registers, renews, and on a graceful stop cancels, all on
// its first node; the renewal carries the lastDirtyTimestamp.
func TestRegisterRenewCancel(t *testing.T) {
	f, ev := newFake(), &events{}
	var cl Client
	require.False(t, cl.Running(), "not started")
	cl.Stop(true) // nothing to stop
	cl.Start(config(f, ev))
	require.Eventually(t, func() bool { return ev.renewals() >= 3 }, 5*time.Second, 5*time.Millisecond)
	assert.True(t, cl.Running())
	cl.Stop(true)
	assert.False(t, cl.Running())

	assert.Equal(t, []string{"n0"}, ev.registered)
	assert.Equal(t, []string{"n0"}, f.asked(http.MethodDelete))
	assert.True(t, ev.ended)
	assert.Equal(t, Cancelled, ev.how)
	assert.Equal(t, "n0", ev.by)
	assert.Zero(t, ev.overs)
	assert.Contains(t, f.log, "n0 PUT /apps/ORDERS/orders-001?status=UP&lastDirtyTimestamp=42")
}

// A transport error or a 5xx sends the client to the next node, where it
// stays; a renewal answered 404 makes it register again.
func TestFailoverAndReRegistration(t *testing.T) {
	f, ev := newFake(), &events{}
	f.down["n0"] = true
	f.set("n1", http.MethodPost, http.StatusServiceUnavailable)
	var cl Client
	cl.Start(config(f, ev))
	require.Eventually(t, func() bool { return ev.renewals() >= 2 }, 5*time.Second, 5*time.Millisecond)
	f.set("n2", http.MethodPut, http.StatusNotFound)
	require.Eventually(t, func() bool { ev.mu.Lock(); defer ev.mu.Unlock(); return ev.again > 0 }, 5*time.Second, 5*time.Millisecond)
	cl.Stop(false)

	ev.mu.Lock()
	defer ev.mu.Unlock()
	assert.Equal(t, "n2", ev.registered[0], "n0 unreachable, n1 answers 503")
	assert.Equal(t, 2, ev.overs, "n0 → n1 → n2 for the first registration only")
	assert.Equal(t, []string{"n2", "n2"}, ev.renewedAt[:2])
	assert.Equal(t, Silent, ev.how, "a silent stop does not cancel")
	assert.Empty(t, f.asked(http.MethodDelete))
}

// A cancel answered 404 is CancelNotFound; one no node answers is
// CancelFailed; neither names a node.
func TestCancelOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		want Ending
	}{
		{"not found", http.StatusNotFound, CancelNotFound},
		{"every node fails", http.StatusInternalServerError, CancelFailed},
		{"other status", http.StatusBadRequest, CancelFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ev := newFake(), &events{}
			for _, n := range []string{"n0", "n1", "n2"} {
				f.set(n, http.MethodDelete, tc.code)
			}
			var cl Client
			cl.Start(config(f, ev))
			require.Eventually(t, func() bool { return ev.renewals() >= 1 }, 5*time.Second, 5*time.Millisecond)
			cl.Stop(true)
			assert.Equal(t, tc.want, ev.how)
			assert.Empty(t, ev.by)
		})
	}
}

// Each Start is a new life from the first node of the list.
func TestRestart(t *testing.T) {
	f, ev := newFake(), &events{}
	var cl Client
	cl.Start(config(f, ev))
	require.Eventually(t, func() bool { return ev.renewals() >= 1 }, 5*time.Second, 5*time.Millisecond)
	cl.Stop(false)
	cl.Start(config(f, ev))
	require.Eventually(t, func() bool { return cl.Running() && len(f.asked(http.MethodPost)) == 2 }, 5*time.Second, 5*time.Millisecond)
	cl.Stop(false)
	assert.Equal(t, []string{"n0", "n0"}, f.asked(http.MethodPost))
}

// Send sets the JSON headers and returns the status.
func TestSend(t *testing.T) {
	headers := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	code, err := Send(context.Background(), srv.Client(), time.Second, http.MethodPost, srv.URL+"/apps/X", "{}")
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, code)
	got := <-headers
	assert.Equal(t, "application/json", got.Get("Accept"))
	assert.Equal(t, "application/json", got.Get("Content-Type"))
}

// RegisterBody is a Eureka JSON instance with the fields the harnesses
// rely on.
func TestRegisterBody(t *testing.T) {
	body := RegisterBody(Instance{App: "ORDERS", ID: "orders-001", HostName: "orders-001.sim", IP: "10.9.0.1",
		LastDirty: 42, RenewSecs: 1, LeaseSecs: 3})
	var doc struct {
		Instance struct {
			InstanceID, HostName, App, IPAddr, Status, VipAddress, LastDirtyTimestamp string
			LeaseInfo                                                                 struct {
				RenewalIntervalInSecs, DurationInSecs int
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	in := doc.Instance
	assert.Equal(t, []string{"orders-001", "orders-001.sim", "ORDERS", "10.9.0.1", "UP", "orders", "42"},
		[]string{in.InstanceID, in.HostName, in.App, in.IPAddr, in.Status, in.VipAddress, in.LastDirtyTimestamp})
	assert.Equal(t, 1, in.LeaseInfo.RenewalIntervalInSecs)
	assert.Equal(t, 3, in.LeaseInfo.DurationInSecs)
}

// Sleep ends early with false when the context ends.
func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	assert.True(t, Sleep(ctx, time.Millisecond))
	assert.True(t, Sleep(ctx, 0))
	cancel()
	assert.False(t, Sleep(ctx, time.Hour))
	assert.False(t, Sleep(ctx, 0))
}
