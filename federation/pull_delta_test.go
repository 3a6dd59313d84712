package federation

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// twoMomentsRemote is a remote whose delta and full registry may be of
// different moments, as the reference server's response cache serves
// them when a write's invalidation meets a read being built.
type twoMomentsRemote struct {
	*httptest.Server
	mu          sync.Mutex
	full, delta string
}

func newTwoMomentsRemote(t *testing.T) *twoMomentsRemote {
	r := &twoMomentsRemote{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		body := r.full
		if strings.HasSuffix(req.URL.Path, "/delta") {
			body = r.delta
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *twoMomentsRemote) serve(full, delta string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.full, r.delta = full, delta
}

// appsDoc is the JSON applications document of instances (all of one
// application) with the given apps__hashcode.
func appsDoc(hashcode string, instances ...*actors.Instance) string {
	enc := eureka.Encoders()[view.FormatJSON]
	out := enc.AppendApplicationsOpen(nil, "1", hashcode)
	if len(instances) > 0 {
		out = enc.AppendApplication(out, instances[0].App, instances)
	}
	return string(enc.AppendApplicationsClose(out))
}

// added is in as a delta's ADDED entry.
func added(in *actors.Instance) *actors.Instance {
	in.ActionType = actors.ActionAdded
	return in
}

// servedIDs is what a ?regions=dc2 read of kind (full or delta) serves.
func servedIDs(t *testing.T, f *Federation, local *view.Snapshot, delta bool) []string {
	t.Helper()
	read := f.Apps
	if delta {
		read = f.Delta
	}
	d, err := decodeApps(read(local, []string{"dc2"}, view.FormatJSON, false))
	require.NoError(t, err)
	var ids []string
	for _, in := range d.instances {
		ids = append(ids, in.ID())
	}
	return ids
}

// pollMismatchedDelta polls a remote twice, by the puller's tick (no
// goroutine, no timing): a full registry of a1, then a delta that brings
// a2 with the hashcode of a later moment (a3 too) and a full registry of
// the delta's moment, a1 and a2: nothing more. It returns the federation,
// an empty local registry to read the union with, and the events a relay
// follower subscribed between the two polls was sent.
func pollMismatchedDelta(t *testing.T) (*Federation, *view.Snapshot, []string) {
	t.Helper()
	remote := newTwoMomentsRemote(t)
	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.Stream = false // polls only: each tick is one poll
	c.Remotes = []Remote{{Name: "dc2", URL: remote.URL + "/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	p := f.pullers[0]
	local := view.New(view.DefaultConfig(eureka.Encoders())).Snapshot()

	a1 := inst("A", "a1", actors.StatusUp, 1)
	remote.serve(appsDoc("UP_1_", a1), appsDoc("UP_1_"))
	p.tick(context.Background())
	require.Equal(t, StateOK, f.Status()[0].State)
	require.Equal(t, []string{"a1"}, servedIDs(t, f, local, false))
	follower, why := p.hub.subscribe()
	require.NotNil(t, follower, why)
	drained(t, follower) // its state and snapshot

	a2 := inst("A", "a2", actors.StatusUp, 1)
	remote.serve(appsDoc("UP_2_", a1, a2), appsDoc("UP_3_", added(inst("A", "a2", actors.StatusUp, 1))))
	p.tick(context.Background())
	return f, local, drained(t, follower)
}

// drained returns the events queued for a relay follower (event name and
// the instance ids they carry), without waiting.
func drained(t *testing.T, s *relaySub) []string {
	t.Helper()
	var out []string
	for {
		select {
		case fr := <-s.ch:
			ev, data := parseFrame(t, fr)
			if d, err := decodeApps(data); err == nil {
				for _, in := range d.instances {
					ev += " " + in.ID()
				}
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

// TestPollPublishesMismatchedDelta: a delta whose apps__hashcode does not
// match the copy it leaves is followed by a full fetch; when that full
// registry holds nothing the delta did not bring, the delta's change is
// still published: the ?regions= reads serve it, and a relay's followers
// are sent it. Before, the full fetch's own report ("nothing changed")
// decided, the region's served documents stayed cached as they were, and
// a reference server's stale delta kept a Heureka node's region reads 30 s
// behind its own status (delta-forgotten-by-full-fetch puts that back).
func TestPollPublishesMismatchedDelta(t *testing.T) {
	f, local, relayed := pollMismatchedDelta(t)
	assert.Equal(t, 2, f.Status()[0].Instances, "the copy holds a2")
	assert.Equal(t, []string{"a1", "a2"}, servedIDs(t, f, local, false), "the full read serves a2")
	assert.Contains(t, servedIDs(t, f, local, true), "a2", "the delta read carries a2")
	assert.Contains(t, relayed, "delta a2", "a relay's follower is sent a2")
}
