package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/freeport"
)

// fakeHost replaces the host's interfaces, routes and resolver for one test.
func fakeHost(t *testing.T, addrs []string, routes map[string]string, names map[string][]string) {
	t.Helper()
	oldAddrs, oldRoute, oldLookup := interfaceAddrs, routeTo, lookupHost
	t.Cleanup(func() { interfaceAddrs, routeTo, lookupHost = oldAddrs, oldRoute, oldLookup })
	interfaceAddrs = func() ([]net.IP, error) {
		var out []net.IP
		for _, a := range addrs {
			out = append(out, net.ParseIP(a))
		}
		return out, nil
	}
	routeTo = func(ip net.IP) (net.IP, error) {
		if src, ok := routes[ip.String()]; ok {
			return net.ParseIP(src), nil
		}
		return nil, errors.New("network is unreachable")
	}
	lookupHost = func(_ context.Context, host string) ([]string, error) {
		if ips, ok := names[host]; ok {
			return ips, nil
		}
		return nil, errors.New("no such host")
	}
}

// The host this repository's CI runs on: a TEST-NET IPv4 address (not RFC
// 1918) and an IPv6 ULA, which memberlist's "first private address" picks.
var ciHost = []string{"127.0.0.1", "::1", "192.0.2.2", "fd00::2", "fe80::fc:ff:fe00:1"}

func TestChooseAdvertise(t *testing.T) {
	routes := map[string]string{"127.0.0.1": "127.0.0.1", "10.0.0.5": "10.0.0.7", "fd00::9": "fd00::2"}
	cases := []struct {
		name  string
		addrs []string
		bind  string
		seeds []string
		want  string
	}{
		{"joins over loopback: loopback, not [fd00::2]", ciHost, "0.0.0.0", []string{"127.0.0.1:7946"}, "127.0.0.1"},
		{"seed without port", ciHost, "0.0.0.0", []string{"127.0.0.1"}, "127.0.0.1"},
		{"the address routed to the seed", ciHost, "0.0.0.0", []string{"10.0.0.5:7946"}, "10.0.0.7"},
		{"a DNS seed", ciHost, "0.0.0.0", []string{"heureka.svc:7946"}, "10.0.0.7"},
		{"an unreachable seed, then one that routes", ciHost, "0.0.0.0", []string{"203.0.113.1:7946", "127.0.0.1:7946"}, "127.0.0.1"},
		{"an IPv6 seed", ciHost, "::", []string{"[fd00::9]:7946"}, "fd00::2"},
		{"no seed, IPv4 listener: IPv4 first", ciHost, "0.0.0.0", nil, "192.0.2.2"},
		{"no seed, IPv6 listener: IPv6 first, not link-local", ciHost, "::", nil, "fd00::2"},
		{"no seed that resolves", ciHost, "0.0.0.0", []string{"nowhere.invalid"}, "192.0.2.2"},
		{"IPv6-only host", []string{"127.0.0.1", "::1", "fd00::2"}, "0.0.0.0", nil, "fd00::2"},
		{"loopback-only host", []string{"127.0.0.1", "::1"}, "0.0.0.0", nil, "127.0.0.1"},
		{"a specific listener is memberlist's choice", ciHost, "192.0.2.2", []string{"127.0.0.1"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fakeHost(t, tc.addrs, routes, map[string][]string{"heureka.svc": {"10.0.0.5"}})
			assert.Equal(t, tc.want, chooseAdvertise(tc.bind, tc.seeds))
		})
	}
}

func TestClientURL(t *testing.T) {
	fakeHost(t, ciHost, nil, nil)
	assert.Equal(t, "http://127.0.0.1:8761/eureka/", clientURL("127.0.0.1:8761", "192.0.2.2"))
	assert.Equal(t, "http://192.0.2.2:8761/eureka/", clientURL("[::]:8761", "192.0.2.2"), "every interface: the advertised host")
	assert.Equal(t, "http://[fd00::2]:8761/eureka/", clientURL("0.0.0.0:8761", "fd00::2"))
	assert.Equal(t, "http://192.0.2.2:8761/eureka/", clientURL("[::]:8761", ""), "else the first address")
}

// TestAdvertiseOverLoopback: nodes started by the command that all join over
// 127.0.0.1 advertise 127.0.0.1 (with the real interfaces and routes), so
// the replica URLs in /eureka/status are loopback URLs.
func TestAdvertiseOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cluster nodes")
	}
	seedGossip := sigFreeAddr(t)
	seed := startCommandNode(t, "--gossip-addr="+seedGossip)
	_, port, err := net.SplitHostPort(seedGossip)
	require.NoError(t, err)

	cfg, _, err := LoadConfig([]string{"--gossip-addr=:" + freeGossipPort(t), "--join=127.0.0.1:" + port}, noEnv)
	require.NoError(t, err)
	nc, err := nodeConfig(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", nc.Cluster.AdvertiseAddr, "the address that reaches the seed")

	joiner := startCommandNode(t, "--gossip-addr=:"+freeGossipPort(t), "--join=127.0.0.1:"+port, "--node-name=joiner")
	require.Eventually(t, func() bool { return len(joiner.Members().LiveMembers()) == 2 }, 20*time.Second, 20*time.Millisecond)
	self := joiner.Members().LocalNode()
	host, _, err := net.SplitHostPort(self.Address)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)

	code, body := procDo("GET", "http://"+seed.Addr()+"/eureka/status", "")
	require.Equal(t, http.StatusOK, code, body)
	var st struct {
		ApplicationStats map[string]string `json:"applicationStats"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/eureka/$`, st.ApplicationStats["registered-replicas"])
}

// freeGossipPort returns a port free for TCP and UDP on every interface,
// never one handed out before in this test binary.
func freeGossipPort(t *testing.T) string {
	t.Helper()
	p, err := freeport.Port("", true)
	require.NoError(t, err)
	return strconv.Itoa(p)
}
