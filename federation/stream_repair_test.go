package federation

import (
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/internal/appdigest"
)

// repairRemote is a fake Heureka remote of one instance a1 (UP_1_). Its
// first stream connection sends a snapshot and then a delta whose
// apps__hashcode disagrees (the follower's copy diverged); a POST (a
// repair) is answered by post. It counts its requests.
type repairRemote struct {
	post                   func(w http.ResponseWriter, r *http.Request)
	gets, posts, fullPolls atomic.Int32
	digestApps             atomic.Int32
}

func (rr *repairRemote) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/eureka/stream" {
		rr.fullPolls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
		return
	}
	if r.Method == http.MethodPost {
		rr.posts.Add(1)
		zr, err := gzip.NewReader(r.Body)
		if err == nil {
			if d, err := appdigest.Decode(zr); err == nil {
				rr.digestApps.Store(int32(len(d)))
			}
		}
		rr.post(w, r)
		return
	}
	n := rr.gets.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "id: p-%d\nevent: snapshot\ndata: %s\n\n", n, sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
	if n == 1 {
		fmt.Fprintf(w, "id: p-2\nevent: delta\ndata: %s\n\n", sseDoc("UP_5_", sseInstance("a1", "UP", "MODIFIED")))
	}
	keepAlive(w, r)
}

// keepAlive writes keep-alives until the client leaves.
func keepAlive(w http.ResponseWriter, r *http.Request) {
	fl := w.(http.Flusher)
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}

func startRepairFollower(t *testing.T, url string) *Federation {
	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.Remotes = []Remote{{Name: "dc2", URL: url + "/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	f.Start()
	return f // stopped before the remote closes: it waits for the streams
}

// A remote of the previous release has no POST form of its stream (Go's
// mux answers 405): the follower whose copy diverged sends its digest,
// then falls back to GET and the snapshot at once, as before. The
// initial load is the stream's snapshot alone: no full poll beside it.
func TestStreamRepairPreviousReleaseRemote(t *testing.T) {
	rr := &repairRemote{post: func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}}
	srv := httptest.NewServer(rr)
	defer srv.Close()
	f := startRepairFollower(t, srv.URL)
	defer f.Stop()
	require.Eventually(t, func() bool { return rr.gets.Load() >= 2 }, 3*time.Second, 5*time.Millisecond,
		"after the POST's 405, a GET")
	require.Eventually(t, func() bool {
		s := f.Status()[0]
		return s.State == StateOK && s.Instances == 1
	}, 3*time.Second, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, int32(1), rr.posts.Load(), "one repair asked")
	assert.Equal(t, int32(1), rr.digestApps.Load(), "the digest of application A")
	assert.Equal(t, int32(2), rr.gets.Load(), "then the snapshot, once")
	assert.Zero(t, rr.fullPolls.Load(), "no full poll: the stream loads the region")
	assert.Equal(t, StateOK, f.Status()[0].State)
}

// A repair after which the copy's apps__hashcode still differs from the
// remote's takes a snapshot (GET), not another repair: no loop.
func TestStreamRepairMismatchTakesSnapshot(t *testing.T) {
	rr := &repairRemote{post: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		// Nothing differs, the remote says, yet its hashcode is not the copy's.
		fmt.Fprintf(w, "id: p-9\nevent: repair\ndata: %s\n\n", `{"applications":{"versions__delta":"1","apps__hashcode":"UP_7_","application":[]}}`)
		keepAlive(w, r)
	}}
	srv := httptest.NewServer(rr)
	defer srv.Close()
	f := startRepairFollower(t, srv.URL)
	defer f.Stop()
	require.Eventually(t, func() bool { return rr.gets.Load() >= 2 }, 3*time.Second, 5*time.Millisecond,
		"after the failed repair, a snapshot")
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, int32(1), rr.posts.Load(), "one repair: no loop")
	assert.Equal(t, int32(2), rr.gets.Load())
	s := f.Status()[0]
	assert.Equal(t, StateOK, s.State)
	assert.Equal(t, 1, s.Instances)
}

// A repair replaces the applications it carries and removes those it
// names, and no other: an instance absent from a carried application is
// deleted (the window says DELETED), as is every instance of a removed
// one.
func TestRegionRepair(t *testing.T) {
	r := newRegionState("dc2", "dc1")
	now := time.Unix(1000, 0)
	in := func(app, id string, dirty int64) *actors.Instance { return inst(app, id, actors.StatusUp, dirty) }
	r.replace([]*actors.Instance{in("A", "a1", 1), in("A", "a2", 1), in("B", "b1", 1), in("C", "c1", 1)}, now)
	r.prune(now.Add(time.Hour), time.Minute)
	r.repair([]*actors.Instance{in("A", "a1", 2)}, []string{"C"}, now)
	assert.Len(t, r.raw, 2)
	assert.Contains(t, r.raw, in("A", "a1", 0).Key())
	assert.Contains(t, r.raw, in("B", "b1", 0).Key(), "an application the repair does not name stays")
	assert.Equal(t, int64(2), r.raw[in("A", "a1", 0).Key()].LastDirtyTimestamp)
	deleted := map[string]bool{}
	for k, c := range r.window {
		if c.inst.ActionType == "DELETED" {
			deleted[k.ID] = true
		}
	}
	assert.Equal(t, map[string]bool{"a2": true, "c1": true}, deleted)
	d := r.digest()
	assert.Len(t, d, 2)
}
