package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/internal/appdigest"
)

// digestOf is the digest of what n's published snapshot holds: what a
// follower that is in step holds.
func digestOf(n *pushNode) appdigest.Digest {
	d := appdigest.Digest{}
	n.view.Snapshot().Apps(func(a *view.App) bool {
		for inst := range a.All() {
			d.Add(inst)
		}
		return true
	})
	return d
}

// repairEvent is a repair event's data: the applications that differ, the
// names of those removed.
type repairEvent struct {
	Removed      []string `json:"removed"`
	Applications struct {
		Hashcode    string `json:"apps__hashcode"`
		Application []struct {
			Name     string `json:"name"`
			Instance []struct {
				InstanceID string `json:"instanceId"`
			} `json:"instance"`
		} `json:"application"`
	} `json:"applications"`
}

// names is the applications a repair carries, each with its instance ids.
func (r repairEvent) names() map[string]int {
	out := map[string]int{}
	for _, a := range r.Applications.Application {
		out[a.Name] = len(a.Instance)
	}
	return out
}

// A follower whose copy differs in one application, lacks another and
// holds one the remote no longer has gets, as its first event, a repair
// with only the two that differ (each in full) and the removed one's name,
// with the full registry's hashcode; an application it holds as the
// remote does is not sent. The events after the repair follow as after a
// snapshot. With an app filter the repair is of the filtered view.
func TestStreamRepairSendsWhatDiffers(t *testing.T) {
	n := startPush(t, pushOptions{})
	n.register(javaInstance("alpha", 1))
	n.register(javaInstance("beta", 2))
	n.register(javaInstance("beta", 3))
	n.register(javaInstance("gamma", 4))
	require.Eventually(t, func() bool { return len(digestOf(n)) == 3 }, waitFor, tick)

	held := digestOf(n)
	held["BETA"]++         // a copy that diverged
	delete(held, "GAMMA")  // a copy that missed an application
	held["OLDAPP"] = 12345 // an application the remote no longer has
	s := n.openStreamWith(http.MethodPost, "/eureka/stream", gzipped(held.Encode()), "Content-Encoding", "gzip")
	ev := s.next()
	require.Equal(t, "repair", ev.typ, ev.data)
	require.NotEmpty(t, ev.id)
	var rep repairEvent
	require.NoError(t, json.Unmarshal([]byte(ev.data), &rep), ev.data)
	assert.Equal(t, map[string]int{"BETA": 2, "GAMMA": 1}, rep.names(), "only what differs, in full")
	assert.Equal(t, []string{"OLDAPP"}, rep.Removed)
	assert.Equal(t, n.apps("/eureka/apps").Applications.AppsHashcode, rep.Applications.Hashcode, "the full registry's hashcode")

	next := javaInstance("alpha", 5)
	n.register(next)
	d := s.next()
	assert.Equal(t, "delta", d.typ)
	assert.Equal(t, "ADDED", actionOf(t, d, "ALPHA", next.id()))

	// In step: an empty repair. A plain body works as a gzipped one.
	inStep := n.openStreamWith(http.MethodPost, "/eureka/stream", digestOf(n).Encode())
	ev = inStep.next()
	require.Equal(t, "repair", ev.typ)
	rep = repairEvent{}
	require.NoError(t, json.Unmarshal([]byte(ev.data), &rep), ev.data)
	assert.Empty(t, rep.names())
	assert.Empty(t, rep.Removed)

	// Filtered to ALPHA and BETA: GAMMA, held but outside the filter, is
	// removed from the filtered copy; BETA differs.
	held = digestOf(n)
	held["BETA"]++
	filtered := n.openStreamWith(http.MethodPost, "/eureka/stream?app=alpha,beta", held.Encode())
	ev = filtered.next()
	require.Equal(t, "repair", ev.typ)
	rep = repairEvent{}
	require.NoError(t, json.Unmarshal([]byte(ev.data), &rep), ev.data)
	assert.Equal(t, map[string]int{"BETA": 2}, rep.names())
	assert.Equal(t, []string{"GAMMA"}, rep.Removed)
}

// A digest that is not one is refused with a clear 4xx before any stream
// starts.
func TestStreamRepairBadDigest(t *testing.T) {
	n := startPush(t, pushOptions{})
	for _, tc := range []struct {
		name string
		body []byte
		hdr  []string
		code int
		msg  string
	}{
		{"malformed line", []byte("ALPHA nothex\n"), nil, http.StatusBadRequest, "malformed digest"},
		{"short hash", []byte("ALPHA 12\n"), nil, http.StatusBadRequest, "malformed digest"},
		{"not gzip", []byte("ALPHA 0000000000000001\n"), []string{"Content-Encoding", "gzip"}, http.StatusBadRequest, "digest"},
		{"other encoding", []byte("x"), []string{"Content-Encoding", "br"}, http.StatusUnsupportedMediaType, "want gzip or none"},
	} {
		res := n.do(http.MethodPost, "/eureka/stream", tc.body, tc.hdr...)
		assert.Equal(t, tc.code, res.code, "%s: %s", tc.name, res.body)
		assert.Contains(t, string(res.body), tc.msg, tc.name)
	}
}

// POST …/stream is a read: the read role opens it, the write role alone
// does not, and no credentials get the challenge.
func TestStreamRepairNeedsTheReadRole(t *testing.T) {
	n := startPush(t, pushOptions{mutate: func(c *httpapi.Config) { c.Auth = testAuth(t) }})
	body := appdigest.Digest{"ALPHA": 1}.Encode()
	res := n.do(http.MethodPost, "/eureka/stream", body)
	assert.Equal(t, http.StatusUnauthorized, res.code)
	res = n.do(http.MethodPost, "/eureka/stream", body, "Authorization", basic("writer", writerPass))
	assert.Equal(t, http.StatusForbidden, res.code)
	assert.Contains(t, string(res.body), "lacks the read role")
	s := n.openStreamWith(http.MethodPost, "/eureka/stream", body, "Authorization", basic("reader", readerPass))
	ev := s.next()
	require.Equal(t, "repair", ev.typ)
	var rep repairEvent
	require.NoError(t, json.Unmarshal([]byte(ev.data), &rep), ev.data)
	assert.Equal(t, []string{"ALPHA"}, rep.Removed, "an empty registry: what the follower holds is removed")
}
