package reference_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/node"
)

// Remote regions between Heureka and the reference Eureka server, both
// ways: the reference pulls a Heureka node as its remote region (Heureka
// answers a Java server's pulls, with local data only), and a Heureka node
// pulls the reference as its remote region. The ?regions= answers of the
// reference and of a Heureka node in the same position are compared by
// their instances, statuses and apps__hashcode; Heureka adds its region
// marker and zone to remote instances on purpose (docs/federation.md), so
// whole trees are not compared.

// regionsRecorder is a proxy in front of a node that records what the
// puller asks (path, query, User-Agent).
type regionsRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRegionsRecorder(t *testing.T, target string) *regionsRecorder {
	u, err := url.Parse(target)
	require.NoError(t, err)
	rr := &regionsRecorder{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rr.mu.Lock()
		rr.seen = append(rr.seen, r.URL.RequestURI()+" UA="+r.UserAgent()+" identity="+r.Header.Get("DiscoveryIdentity-Name"))
		rr.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rr.Close)
	return rr
}

func (rr *regionsRecorder) requests() []string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]string(nil), rr.seen...)
}

// regionsRegister registers app/id with status on the server at base.
func regionsRegister(t *testing.T, base, app, id, status string) {
	t.Helper()
	body := fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":%q,"app":%q,"ipAddr":"10.0.0.5","status":%q,`+
		`"port":{"$":8080,"@enabled":"true"},"vipAddress":%q,"leaseInfo":{"durationInSecs":300},`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`,
		id, id, app, status, strings.ToLower(app))
	res, err := http.Post(base+"/apps/"+app, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode)
}

// regionsCancel cancels app/id on the server at base.
func regionsCancel(t *testing.T, base, app, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+"/apps/"+app+"/"+id, nil)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// regionsView is what the comparison looks at: "APP/id" → status, and
// apps__hashcode.
type regionsView struct {
	code      int
	instances map[string]string
	hashcode  string
}

// regionsRead reads base+path as JSON.
func regionsRead(t *testing.T, base, path string) regionsView {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	v := regionsView{code: res.StatusCode, instances: map[string]string{}}
	if res.StatusCode != http.StatusOK {
		return v
	}
	var doc struct {
		Applications struct {
			Hashcode    string `json:"apps__hashcode"`
			Application []struct {
				Name     string `json:"name"`
				Instance []struct {
					InstanceID string `json:"instanceId"`
					Status     string `json:"status"`
				} `json:"instance"`
			} `json:"application"`
		} `json:"applications"`
	}
	require.NoError(t, json.Unmarshal(b, &doc), string(b))
	v.hashcode = doc.Applications.Hashcode
	for _, a := range doc.Applications.Application {
		for _, in := range a.Instance {
			v.instances[a.Name+"/"+in.InstanceID] = in.Status
		}
	}
	return v
}

// TestReferencePullsHeurekaRegion: a reference server in dc1 pulls a
// Heureka node of dc2; a Heureka node of dc1 with the same local instance
// pulls the same node. Both answer ?regions=dc2 with the same union and
// hashcode; after a cancel in dc2 Heureka's answer follows within a pull,
// the reference's stays stale (its response cache). The Java server's pulls
// identify as a Eureka server (DiscoveryIdentity-Name: DefaultServer), by
// which Heureka answers them with local data only.
func TestReferencePullsHeurekaRegion(t *testing.T) {
	dc2 := startHeureka(t)
	regionsRegister(t, dc2.URL(), "SHARED", "h-1", "UP")
	regionsRegister(t, dc2.URL(), "SHARED", "h-2", "DOWN")
	rec := newRegionsRecorder(t, dc2.URL())

	ref, err := startReference(append(append([]string(nil), referenceArgs...),
		"--eureka.server.remote-region-urls-with-name.dc2="+rec.URL+"/eureka/",
		"--eureka.server.remote-region-registry-fetch-interval=1",
		// Plain reads stay local on both sides, as Heureka's default.
		"--eureka.server.disable-transparent-fallback-to-other-region=true"))
	require.NoError(t, err)
	t.Cleanup(ref.stop)

	heu := startRegionsHeureka(t, "dc1", federation.Remote{Name: "dc2", URL: dc2.URL() + "/"})
	for _, base := range []string{ref.url, heu.URL()} {
		regionsRegister(t, base, "SHARED", "l-1", "UP")
	}

	want := map[string]string{"SHARED/l-1": "UP", "SHARED/h-1": "UP", "SHARED/h-2": "DOWN"}
	for name, base := range map[string]string{"reference": ref.url, "heureka": heu.URL()} {
		var v regionsView
		require.Eventually(t, func() bool {
			v = regionsRead(t, base, "/apps?regions=dc2")
			return v.code == http.StatusOK && len(v.instances) == 3
		}, 60*time.Second, 100*time.Millisecond, "%s: ?regions=dc2 holds the union (last: %+v)", name, v)
		assert.Equal(t, want, v.instances, name)
		assert.Equal(t, "DOWN_1_UP_2_", v.hashcode, name)
		plain := regionsRead(t, base, "/apps")
		assert.Equal(t, map[string]string{"SHARED/l-1": "UP"}, plain.instances, "%s: plain reads stay local", name)
	}

	reqs := rec.requests()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		// eureka-client 2.x's Jersey 3 transport sends Jersey's User-Agent,
		// not Java-EurekaClient-RemoteRegion: Heureka knows the pull by the
		// server identity.
		assert.Contains(t, r, "identity=DefaultServer", "the reference's pulls identify as a Eureka server")
		assert.NotContains(t, r, "regions=", "a Java server passes no regions on")
	}
	t.Logf("the reference's pulls of dc2, first ones: %v", reqs[:min(3, len(reqs))])
	defer func() {
		if t.Failed() {
			t.Logf("requests: %v\nreference log: %s", rec.requests(), ref.log.tail())
		}
	}()

	regionsCancel(t, dc2.URL(), "SHARED", "h-1")
	require.Eventually(t, func() bool {
		v := regionsRead(t, heu.URL(), "/apps?regions=dc2")
		_, there := v.instances["SHARED/h-1"]
		return v.code == http.StatusOK && !there && v.hashcode == "DOWN_1_UP_1_"
	}, 10*time.Second, 20*time.Millisecond, "heureka: dc2's cancel leaves the region read")
	// The reference applies the same delta within its 1 s pull (its log
	// says so) but serves ?regions= from its response cache, which remote
	// changes do not invalidate: up to 180 s (responseCacheAutoExpiration)
	// stale. Logged, not asserted: it is the Eureka defect federation.md
	// describes.
	time.Sleep(3 * time.Second)
	v := regionsRead(t, ref.url, "/apps?regions=dc2")
	t.Logf("reference ?regions=dc2 3 s after the cancel in dc2: %v %s", v.instances, v.hashcode)
}

// TestHeurekaPullsReferenceRegion: a Heureka node pulls a reference
// server as its remote region: full, then deltas, a cancel crossing.
//
// The reference's response cache (Guava) keeps a read being built when a
// write invalidates it: a delta built between the two writes below, while
// the pulls come every 20 ms, stays cached with j-3 added and j-1 not yet
// cancelled, and with the hashcode of that moment, until the cache entry
// expires (180 s by default). A CI run saw it 30 s after the writes, the
// reference's full read already right. Its entries expire after 2 s here:
// the test is of Heureka following the reference, not of that defect.
func TestHeurekaPullsReferenceRegion(t *testing.T) {
	ref, err := startReference(append(append([]string(nil), referenceArgs...),
		"--eureka.server.response-cache-auto-expiration-in-seconds=2"))
	require.NoError(t, err)
	t.Cleanup(ref.stop)
	regionsRegister(t, ref.url, "JAVA-SVC", "j-1", "UP")
	regionsRegister(t, ref.url, "JAVA-SVC", "j-2", "UP")

	heu := startRegionsHeureka(t, "dc1", federation.Remote{Name: "java", URL: ref.url + "/"})
	regionsRegister(t, heu.URL(), "GO-SVC", "g-1", "UP")
	defer func() {
		if t.Failed() { // what the node holds, and what it pulls
			t.Logf("region status: %+v", heu.Federation().Status())
			t.Logf("the reference's delta: %+v", regionsRead(t, ref.url, "/apps/delta?regions=heureka-local-only"))
			t.Logf("the reference's full registry: %+v", regionsRead(t, ref.url, "/apps?regions=heureka-local-only"))
		}
	}()
	var v regionsView
	require.Eventually(t, func() bool {
		v = regionsRead(t, heu.URL(), "/apps?regions=java")
		return v.code == http.StatusOK && len(v.instances) == 3
	}, 30*time.Second, 50*time.Millisecond, "last: %+v", v)
	assert.Equal(t, "UP_3_", v.hashcode)

	regionsRegister(t, ref.url, "JAVA-SVC", "j-3", "DOWN")
	regionsCancel(t, ref.url, "JAVA-SVC", "j-1")
	require.Eventually(t, func() bool {
		v = regionsRead(t, heu.URL(), "/apps?regions=java")
		return len(v.instances) == 3 && v.instances["JAVA-SVC/j-3"] == "DOWN" && v.instances["JAVA-SVC/j-1"] == ""
	}, 30*time.Second, 50*time.Millisecond, "the reference's changes cross (last: %+v)", v)

	assert.Equal(t, "DOWN_1_UP_2_", v.hashcode)
	st := heu.Federation().Status()
	require.Len(t, st, 1)
	assert.Equal(t, federation.StateOK, st[0].State)
}

// startRegionsHeureka starts a node of region pulling remotes, with the
// federation's test timers.
func startRegionsHeureka(t *testing.T, region string, remotes ...federation.Remote) *node.Node {
	t.Helper()
	return startRegionsHeurekaWith(t, region, nil, remotes...)
}

// TestReferenceFallbackEchoesNothing: a reference server with transparent
// fallback on (its default) pulls a Heureka region dc1 and is pulled by it
// as region "java". Its plain reads carry dc1's instances back; Heureka asks
// it for its local instances only, so a dc1 instance never comes back to
// dc1 as a remote one, not even after its cancel, while the reference keeps
// serving its stale copy.
func TestReferenceFallbackEchoesNothing(t *testing.T) {
	var target atomic.Pointer[string]
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := target.Load()
		if p == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		u, _ := url.Parse(*p)
		httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host}).ServeHTTP(w, r)
	}))
	t.Cleanup(late.Close)
	dc1 := startRegionsHeureka(t, "dc1", federation.Remote{Name: "java", URL: late.URL + "/eureka/"})
	ref, err := startReference(append(append([]string(nil), referenceArgs...),
		"--eureka.server.remote-region-urls-with-name.dc1="+dc1.URL()+"/",
		"--eureka.server.remote-region-registry-fetch-interval=1"))
	require.NoError(t, err)
	t.Cleanup(ref.stop)
	regionsRegister(t, dc1.URL(), "SHARED", "h-1", "UP")
	// The reference caches a read for up to 180 s and remote changes do not
	// invalidate it: let it pull h-1 (every second) before anything reads
	// it, then register j-1, whose write invalidates its cached reads. Only
	// then can dc1 reach it: its first full pull comes when the reference's
	// plain read carries the echo (a later delta would not: the reference's
	// plain delta holds local changes only).
	time.Sleep(3 * time.Second)
	regionsRegister(t, ref.url, "SHARED", "j-1", "UP")

	// The reference's plain read echoes dc1's instance (fallback).
	plain := regionsRead(t, ref.url, "/apps")
	require.Contains(t, plain.instances, "SHARED/h-1", "the reference serves dc1's instance on plain reads: %+v", plain)
	target.Store(&ref.url)

	var v regionsView
	require.Eventually(t, func() bool {
		v = regionsRead(t, dc1.URL(), "/apps?regions=java")
		return v.code == http.StatusOK && len(v.instances) == 2
	}, 30*time.Second, 50*time.Millisecond, "last: %+v", v)
	assert.Equal(t, "UP_2_", v.hashcode, "h-1 once (local), j-1 from java")

	regionsCancel(t, dc1.URL(), "SHARED", "h-1")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		v = regionsRead(t, dc1.URL(), "/apps?regions=java")
		_, echoed := v.instances["SHARED/h-1"]
		require.False(t, echoed, "dc1's cancelled instance came back from java: %+v", v)
		time.Sleep(50 * time.Millisecond)
	}
	_, stale := regionsRead(t, ref.url, "/apps").instances["SHARED/h-1"]
	t.Logf("3 s after the cancel the reference's plain read still holds h-1: %v", stale)
}
