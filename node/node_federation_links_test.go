package node_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// wanCounter is a proxy in front of a remote region that counts what
// crosses it: the change streams open now and every request.
type wanCounter struct {
	*httptest.Server
	streams  atomic.Int64 // open now
	requests atomic.Int64 // since the start
	down     atomic.Bool
}

func newWANCounter(t *testing.T, target string) *wanCounter {
	u, err := url.Parse(target)
	require.NoError(t, err)
	w := &wanCounter{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.requests.Add(1)
		if w.down.Load() {
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/stream") {
			w.streams.Add(1)
			defer w.streams.Add(-1)
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.Close)
	return w
}

// linkedCluster is a 3-node cluster of region dc2 on loopback (real
// memberlist) following region dc1 (one node) through a wanCounter, with
// links nodes holding the WAN link.
func linkedCluster(t *testing.T, links int) (dc1 *node.Node, wan *wanCounter, tc *testCluster) {
	dc1 = startFed(t, fedConfig(t, "dc1"))
	fedRegister(t, dc1.URL(), "ORDERS", "o-1", "UP", nil)
	fedRegister(t, dc1.URL(), "USERS", "u-1", "DOWN", map[string]string{"zone": "z9"})
	wan = newWANCounter(t, dc1.URL())
	tc = startCluster(t, 3, false, func(cfg *node.Config) {
		fc := federation.DefaultLocalConfig()
		fc.Region = "dc2"
		fc.Remotes = []federation.Remote{{Name: "dc1", URL: wan.URL + "/eureka/"}}
		fc.Links = links
		cfg.Federation = &fc
		pc := httpapi.DefaultPushConfig()
		pc.StreamKeepAlive = 50 * time.Millisecond
		cfg.Push = &pc
	})
	return dc1, wan, tc
}

// vias counts the live nodes of tc by how they follow dc1.
func vias(tc *testCluster, stopped map[int]bool) map[federation.Via]int {
	out := map[federation.Via]int{}
	for i, nd := range tc.nodes {
		if !stopped[i] {
			out[nd.Federation().Status()[0].Via]++
		}
	}
	return out
}

// regionIDs reads dc1's instances from a node through ?regions=dc1 ("" on
// an answer other than 200).
func regionIDs(t *testing.T, nd *node.Node) string {
	code, a := fedGet(t, nd.URL(), "/apps?regions=dc1")
	if code != http.StatusOK {
		return fmt.Sprint(code)
	}
	var ids []string
	for k, in := range a.ids(t) {
		if in.Metadata[federation.MarkerKey] == "dc1" {
			ids = append(ids, k+"/"+in.Status+"/"+in.Metadata["zone"])
		}
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// Exactly Links nodes of a cluster hold the WAN link to a remote region,
// counted at the remote; the others serve the same region through a relay,
// changes included; when the node holding the link stops, another takes
// it and reads stay right.
func TestFederationLinksAndRelays(t *testing.T) {
	dc1, wan, tc := linkedCluster(t, 1)
	stopped := map[int]bool{}
	allRead := func(want string) bool {
		for i, nd := range tc.nodes {
			if !stopped[i] && regionIDs(t, nd) != want {
				return false
			}
		}
		return true
	}
	want := "ORDERS/o-1/UP/dc1,USERS/u-1/DOWN/z9"
	require.Eventually(t, func() bool {
		v := vias(tc, stopped)
		return v[federation.ViaWAN] == 1 && v[federation.ViaRelay] == 2 && wan.streams.Load() == 1 && allRead(want)
	}, 10*time.Second, 10*time.Millisecond, "one link, two relayed: %v, %d streams at the remote", vias(tc, stopped), wan.streams.Load())

	// Steady: the relayed nodes send the remote nothing at all.
	before := wan.requests.Load()
	for range 20 {
		time.Sleep(25 * time.Millisecond)
		assert.EqualValues(t, 1, wan.streams.Load(), "one stream across the WAN")
	}
	assert.Equal(t, before, wan.requests.Load(), "no other request crosses the WAN")

	// A change crosses once and reaches every node.
	fedRegister(t, dc1.URL(), "ORDERS", "o-2", "UP", nil)
	want = "ORDERS/o-1/UP/dc1,ORDERS/o-2/UP/dc1,USERS/u-1/DOWN/z9"
	require.Eventually(t, func() bool { return allRead(want) }, 5*time.Second, 10*time.Millisecond)
	req, _ := http.NewRequest("DELETE", dc1.URL()+"/apps/ORDERS/o-1", nil)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	want = "ORDERS/o-2/UP/dc1,USERS/u-1/DOWN/z9"
	require.Eventually(t, func() bool { return allRead(want) }, 5*time.Second, 10*time.Millisecond, "a cancel too")

	// The relayed nodes show their relay, which holds the link.
	var link int
	for i, nd := range tc.nodes {
		st := nd.Federation().Status()[0]
		require.Len(t, st.Links, 1)
		if st.Via == federation.ViaWAN {
			link = i
			assert.Equal(t, tc.names[i], st.Links[0])
		} else {
			assert.Equal(t, st.Links[0], st.Relay)
			assert.Equal(t, federation.StateOK, st.State)
		}
	}

	// The link's node stops: another takes the link, and reads stay right.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, tc.nodes[link].Stop(ctx))
	stopped[link] = true
	fedRegister(t, dc1.URL(), "USERS", "u-2", "UP", nil)
	want = "ORDERS/o-2/UP/dc1,USERS/u-1/DOWN/z9,USERS/u-2/UP/dc1"
	require.Eventually(t, func() bool {
		v := vias(tc, stopped)
		return v[federation.ViaWAN] == 1 && v[federation.ViaRelay] == 1 && wan.streams.Load() == 1 && allRead(want)
	}, 10*time.Second, 10*time.Millisecond, "the link moved: %v, %d streams at the remote", vias(tc, stopped), wan.streams.Load())
	for i, nd := range tc.nodes {
		if !stopped[i] {
			assert.NotContains(t, nd.Federation().Status()[0].Links, tc.names[link])
		}
	}
}

// With the default two links, two of three nodes hold a WAN stream.
func TestFederationDefaultLinks(t *testing.T) {
	require.Equal(t, 2, federation.DefaultConfig().Links)
	_, wan, tc := linkedCluster(t, 2)
	require.Eventually(t, func() bool {
		v := vias(tc, nil)
		return v[federation.ViaWAN] == 2 && v[federation.ViaRelay] == 1 && wan.streams.Load() == 2 &&
			regionIDs(t, tc.nodes[0]) == "ORDERS/o-1/UP/dc1,USERS/u-1/DOWN/z9" &&
			regionIDs(t, tc.nodes[1]) == regionIDs(t, tc.nodes[2]) && regionIDs(t, tc.nodes[1]) == regionIDs(t, tc.nodes[0])
	}, 10*time.Second, 10*time.Millisecond, "two links: %v, %d streams at the remote", vias(tc, nil), wan.streams.Load())
}

// A relayed node whose relay goes stale (the relay lost the WAN) turns
// stale and then drops the region with it, and a node whose relay is
// unreachable follows the WAN itself.
func TestFederationRelayStaleAndFallback(t *testing.T) {
	_, wan, tc := linkedCluster(t, 1)
	require.Eventually(t, func() bool {
		v := vias(tc, nil)
		return v[federation.ViaWAN] == 1 && v[federation.ViaRelay] == 2
	}, 10*time.Second, 10*time.Millisecond)
	wan.down.Store(true)
	wan.CloseClientConnections()
	require.Eventually(t, func() bool {
		for _, nd := range tc.nodes {
			if nd.Federation().Status()[0].State != federation.StateStale {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond, "every node turns stale")
	require.Eventually(t, func() bool {
		for _, nd := range tc.nodes {
			if nd.Federation().Status()[0].State != federation.StateDropped {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond, "every node drops the region")
	wan.down.Store(false)
	require.Eventually(t, func() bool {
		for _, nd := range tc.nodes {
			if regionIDs(t, nd) != "ORDERS/o-1/UP/dc1,USERS/u-1/DOWN/z9" {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every node serves the region again after the heal")
}

// A node whose relays do not answer follows the WAN itself (fallback),
// and serves the region all the same.
func TestFederationRelayUnreachableFallsBack(t *testing.T) {
	dc1 := startFed(t, fedConfig(t, "dc1"))
	fedRegister(t, dc1.URL(), "ORDERS", "o-1", "UP", nil)
	wan := newWANCounter(t, dc1.URL())
	tc := startCluster(t, 3, false, func(cfg *node.Config) {
		fc := federation.DefaultLocalConfig()
		fc.Region = "dc2"
		fc.Remotes = []federation.Remote{{Name: "dc1", URL: wan.URL + "/eureka/"}}
		fc.Links = 1
		fc.MemberURL = func(string) string { return "http://127.0.0.1:1" } // nothing listens
		cfg.Federation = &fc
	})
	require.Eventually(t, func() bool {
		v := vias(tc, nil)
		if v[federation.ViaWAN] != 1 || v[federation.ViaFallback] != 2 {
			return false
		}
		for _, nd := range tc.nodes {
			if regionIDs(t, nd) != "ORDERS/o-1/UP/dc1" {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "one link, two in fallback: %v", vias(tc, nil))
}
