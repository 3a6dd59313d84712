package node_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// authLinkedCluster is linkedCluster with HTTP basic auth on every dc2
// node (user "ops", password "pw", read and write) and, when key is set,
// that gossip key.
func authLinkedCluster(t *testing.T, links int, key []byte) (wan *wanCounter, tc *testCluster) {
	dc1 := startFed(t, fedConfig(t, "dc1"))
	fedRegister(t, dc1.URL(), "ORDERS", "o-1", "UP", nil)
	fedRegister(t, dc1.URL(), "USERS", "u-1", "DOWN", nil)
	wan = newWANCounter(t, dc1.URL())
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	require.NoError(t, err)
	tc = startCluster(t, 3, false, func(cfg *node.Config) {
		fc := federation.DefaultLocalConfig()
		fc.Region = "dc2"
		fc.Remotes = []federation.Remote{{Name: "dc1", URL: wan.URL + "/eureka/"}}
		fc.Links = links
		cfg.Federation = &fc
		pc := httpapi.DefaultPushConfig()
		pc.StreamKeepAlive = 50 * time.Millisecond
		cfg.Push = &pc
		cfg.Auth = &httpapi.AuthConfig{Users: []httpapi.User{{Name: "ops", PasswordHash: string(hash),
			Roles: httpapi.RoleRead | httpapi.RoleWrite}}}
		cfg.Cluster.GossipKey = key
	})
	return wan, tc
}

// relayGet opens nd's relay route for dc1 with the header pairs hdr, and
// returns the status and the first line of the body (the stream is cut).
func relayGet(t *testing.T, nd *node.Node, hdr ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(nd.URL(), "/eureka")+"/admin/regions/dc1/relay", nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.StatusCode == http.StatusOK {
		return res.StatusCode, res.Header.Get("Content-Type")
	}
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b))
}

// With basic auth on and a gossip key, the nodes that hold no WAN link
// follow a relay (not the WAN): they sign their relay requests with the
// gossip key. A relay request without a signature or with a bad one is
// refused with 401, saying why; one with read credentials is served.
func TestFederationRelaysWithAuth(t *testing.T) {
	wan, tc := authLinkedCluster(t, 1, []byte("0123456789abcdef"))
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:pw"))
	read := func(nd *node.Node) string {
		code, a := fedGet(t, nd.URL(), "/apps?regions=dc1", "Authorization", basic)
		if code != http.StatusOK {
			return strconv.Itoa(code)
		}
		var ids []string
		for k := range a.ids(t) {
			ids = append(ids, k)
		}
		slices.Sort(ids)
		return strings.Join(ids, ",")
	}
	require.Eventually(t, func() bool {
		v := vias(tc, nil)
		if v[federation.ViaWAN] != 1 || v[federation.ViaRelay] != 2 || wan.streams.Load() != 1 {
			return false
		}
		for _, nd := range tc.nodes {
			if read(nd) != "ORDERS/o-1,USERS/u-1" {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "one link, two relayed under auth: %v, %d streams at the remote", vias(tc, nil), wan.streams.Load())
	for _, nd := range tc.nodes {
		st := nd.Federation().Status()[0]
		assert.Empty(t, st.ViaReason, "%s", nd.Members().LocalNode().Name)
	}

	var link *node.Node
	for _, nd := range tc.nodes {
		if nd.Federation().Status()[0].Via == federation.ViaWAN {
			link = nd
		}
	}
	require.NotNil(t, link)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	junk := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for _, c := range []struct {
		name string
		hdr  []string
		code int
		says string
	}{
		{"none", nil, http.StatusUnauthorized, "relay route needs a node's signature"},
		{"malformed", []string{federation.RelayAuthHeader, "v1 garbage"}, http.StatusUnauthorized, "malformed"},
		{"wrong key", []string{federation.RelayAuthHeader, "v1 t=" + now + " s=" + junk}, http.StatusUnauthorized, "matches no key"},
		{"old", []string{federation.RelayAuthHeader, "v1 t=" + strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10) + " s=" + junk},
			http.StatusUnauthorized, "clock"},
		{"bad signature beside good credentials", []string{federation.RelayAuthHeader, "v1 t=" + now + " s=" + junk, "Authorization", basic},
			http.StatusUnauthorized, "matches no key"},
		{"credentials", []string{"Authorization", basic}, http.StatusOK, "text/event-stream"},
	} {
		code, body := relayGet(t, link, c.hdr...)
		assert.Equal(t, c.code, code, c.name)
		assert.Contains(t, body, c.says, c.name)
	}
	// The signature opens the relay route only.
	code, _ := fedGet(t, link.URL(), "/apps", federation.RelayAuthHeader, "v1 t="+now+" s="+junk)
	assert.Equal(t, http.StatusUnauthorized, code)
}

// With basic auth on and no gossip key the nodes share no secret: every
// node follows the WAN, and says why.
func TestFederationRelaysAuthWithoutKey(t *testing.T) {
	wan, tc := authLinkedCluster(t, 1, nil)
	// A stream counts at the remote when it opens; its snapshot loads a
	// moment later, so the instance counts are waited for too.
	loaded := func() bool {
		for _, nd := range tc.nodes {
			if nd.Federation().Status()[0].Instances != 2 {
				return false
			}
		}
		return true
	}
	require.Eventually(t, func() bool {
		v := vias(tc, nil)
		return v[federation.ViaWAN] == 1 && v[federation.ViaFallback] == 2 && wan.streams.Load() == 3 && loaded()
	}, 10*time.Second, 10*time.Millisecond, "every node on the WAN and loaded: %v, %d streams at the remote", vias(tc, nil), wan.streams.Load())
	for _, nd := range tc.nodes {
		st := nd.Federation().Status()[0]
		if st.Via == federation.ViaFallback {
			assert.Contains(t, st.ViaReason, "no gossip key")
		}
	}
}
