package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/internal/testcert"
	"github.com/heureka/heureka/node"
)

// testHash is a bcrypt hash of "pw" at the minimum cost.
func testHash(t *testing.T) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

// loadNode loads args and env and builds the node configuration.
func loadNode(t *testing.T, env map[string]string, args ...string) (Config, node.Config) {
	t.Helper()
	c, _, err := LoadConfig(args, envMap(env))
	require.NoError(t, err)
	nc, err := nodeConfig(c, nil)
	require.NoError(t, err)
	return c, nc
}

func TestSecurityDefaultsOff(t *testing.T) {
	_, nc := loadNode(t, nil)
	assert.Nil(t, nc.Auth)
	assert.Nil(t, nc.RateLimit)
	assert.Empty(t, nc.TLSCertFile)
	assert.Equal(t, 64<<10, nc.MaxHeaderBytes)
	assert.Empty(t, nc.Cluster.GossipKeys)
}

func TestAuthUsersOption(t *testing.T) {
	h := testHash(t)
	rw, r := httpapi.RoleRead|httpapi.RoleWrite, httpapi.RoleRead
	roles := func(a *httpapi.AuthConfig) map[string]httpapi.Roles {
		out := map[string]httpapi.Roles{}
		for _, u := range a.Users {
			out[u.Name] = u.Roles
		}
		return out
	}

	// Roles are comma-separated like the list: both spellings and a
	// repeated flag give the same users.
	_, nc := loadNode(t, nil, "--auth-users", "app:"+h+":read,write,ops:"+h+":read", "--auth-users=legacy:"+h)
	require.NotNil(t, nc.Auth)
	assert.Equal(t, map[string]httpapi.Roles{"app": rw, "ops": r, "legacy": rw}, roles(nc.Auth))
	assert.False(t, nc.Auth.MetricsPublic)

	_, nc = loadNode(t, map[string]string{"HEUREKA_AUTH_USERS": "app:" + h + ":write", "HEUREKA_AUTH_PUBLIC_METRICS": "true"})
	assert.Equal(t, map[string]httpapi.Roles{"app": httpapi.RoleWrite}, roles(nc.Auth))
	assert.True(t, nc.Auth.MetricsPublic)

	p := writeYAML(t, "auth-users:\n  - \"app:"+h+":read,write\"\n  - ops:"+h+":read\n")
	_, nc = loadNode(t, nil, "--config", p)
	assert.Equal(t, map[string]httpapi.Roles{"app": rw, "ops": r}, roles(nc.Auth))

	// An auth file adds its users.
	f := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(f, []byte("# heureka users\nfile-app:"+h+":read,write\n\nhtpasswd-style:"+h+"\n"), 0o600))
	_, nc = loadNode(t, nil, "--auth-file", f, "--auth-users", "app:"+h+":read")
	assert.Equal(t, map[string]httpapi.Roles{"app": r, "file-app": rw, "htpasswd-style": rw}, roles(nc.Auth))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--auth-users", "read"}, "--auth-users: invalid value: want name:bcrypthash:roles"},
		{[]string{"--auth-users", "app:" + h + ":admin"}, `user "app": unknown role "admin"`},
		{[]string{"--auth-users", "app:secret-Plain-Password:read"}, `user "app": password hash is not a bcrypt hash`},
		{[]string{"--auth-users", "app:" + h + ",app:" + h}, `user "app" is configured twice`},
		{[]string{"--auth-file", f + ".missing"}, "--auth-file: invalid value"},
	} {
		_, _, err := LoadConfig(tc.args, envMap(nil))
		if assert.Error(t, err, "%v", tc.args) {
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), h, "a hash is never echoed")
			assert.NotContains(t, err.Error(), "secret-Plain-Password")
		}
	}
	require.NoError(t, os.WriteFile(f, []byte("ok:"+h+"\nbad:"+h+":root\n"), 0o600))
	_, _, err := LoadConfig([]string{"--auth-file", f}, envMap(nil))
	assert.ErrorContains(t, err, "line 2:")

	// The effective configuration masks the users, never the file name.
	c, _, err := LoadConfig([]string{"--auth-users", "app:" + h}, envMap(nil))
	require.NoError(t, err)
	attr := configAttr(c).String()
	assert.NotContains(t, attr, h)
	assert.Contains(t, attr, "auth-users=(set, not shown)")
}

func TestTLSAndHeaderOptions(t *testing.T) {
	cert := testcert.New(t, t.TempDir(), "cli")
	_, nc := loadNode(t, map[string]string{"HEUREKA_TLS_KEY": cert.KeyFile}, "--tls-cert", cert.CertFile, "--max-header-bytes", "32KiB")
	assert.Equal(t, cert.CertFile, nc.TLSCertFile)
	assert.Equal(t, cert.KeyFile, nc.TLSKeyFile)
	assert.Equal(t, 32<<10, nc.MaxHeaderBytes)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", cert.CertFile}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-key", cert.KeyFile}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-cert", cert.CertFile + ".nope", "--tls-key", cert.KeyFile}, "--tls-cert: invalid value"},
		{[]string{"--max-header-bytes", "0"}, "--max-header-bytes: invalid value"},
	} {
		_, _, err := LoadConfig(tc.args, envMap(nil))
		if assert.Error(t, err, "%v", tc.args) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

func TestRateLimitOptions(t *testing.T) {
	_, nc := loadNode(t, nil, "--rate-limit-burst=3") // figures alone do not turn it on
	assert.Nil(t, nc.RateLimit)

	_, nc = loadNode(t, nil, "--rate-limit")
	def := httpapi.DefaultRateLimitConfig()
	assert.Equal(t, &def, nc.RateLimit)

	_, nc = loadNode(t, map[string]string{"HEUREKA_RATE_LIMIT_PRIVILEGED_CLIENTS": "sidecar, probe"},
		"--rate-limit=true", "--rate-limit-burst=3", "--rate-limit-fetch-rate=50", "--rate-limit-full-fetch-rate=0.5",
		"--rate-limit-throttle-standard-clients")
	assert.Equal(t, &httpapi.RateLimitConfig{BurstSize: 3, FetchAverageRate: 50, FullFetchAverageRate: 0.5,
		ThrottleStandardClients: true, PrivilegedClients: []string{"sidecar", "probe"}}, nc.RateLimit)

	// Eureka's own property names, as a Spring user has them.
	p := writeYAML(t, `eureka:
  server:
    rate-limiter-enabled: true
    rate-limiter-burst-size: 5
    rate-limiter-registry-fetch-average-rate: 200
    rate-limiter-full-fetch-average-rate: 20
    rate-limiter-throttle-standard-clients: true
    rate-limiter-privileged-clients: [a, b]
`)
	c, warnings, err := LoadConfig([]string{"--config", p}, envMap(nil))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	nc, err = nodeConfig(c, nil)
	require.NoError(t, err)
	assert.Equal(t, &httpapi.RateLimitConfig{BurstSize: 5, FetchAverageRate: 200, FullFetchAverageRate: 20,
		ThrottleStandardClients: true, PrivilegedClients: []string{"a", "b"}}, nc.RateLimit)

	for _, args := range [][]string{{"--rate-limit-burst=0"}, {"--rate-limit-fetch-rate=0"}, {"--rate-limit-full-fetch-rate=-1"}} {
		_, _, err := LoadConfig(args, envMap(nil))
		assert.Error(t, err, "%v", args)
	}
	p = writeYAML(t, "eureka.server.rate-limiter-burst-size: lots\n")
	_, _, err = LoadConfig([]string{"--config", p}, envMap(nil))
	assert.ErrorContains(t, err, ":1: eureka.server.rate-limiter-burst-size: invalid value")
}

func TestGossipKeysOption(t *testing.T) {
	k1, k2 := key(16), key(32)
	_, nc := loadNode(t, nil, "--gossip-keys", k2+","+k1)
	require.Len(t, nc.Cluster.GossipKeys, 2)
	assert.Len(t, nc.Cluster.GossipKeys[0], 32, "the first key encrypts")
	assert.Len(t, nc.Cluster.GossipKeys[1], 16)
	_, nc = loadNode(t, map[string]string{"HEUREKA_GOSSIP_KEYS": k1})
	assert.Len(t, nc.Cluster.GossipKeys, 1)

	_, _, err := LoadConfig([]string{"--gossip-key", k1, "--gossip-keys", k2}, envMap(nil))
	assert.ErrorContains(t, err, "--gossip-key and --gossip-keys are both set")
	bad := key(16) + "," + key(20)
	_, _, err = LoadConfig([]string{"--gossip-keys", bad}, envMap(nil))
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "key 2: decodes to 20 bytes")
		assert.NotContains(t, err.Error(), key(20), "keys are never echoed")
	}
	c, _, err := LoadConfig([]string{"--gossip-keys", k1}, envMap(nil))
	require.NoError(t, err)
	assert.NotContains(t, configAttr(c).String(), k1)
}

// TestServeSecure runs the serve command with TLS and basic auth: it prints
// the https URL, answers only with credentials, and reloads its certificate
// on a hang-up.
func TestServeSecure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	dir := t.TempDir()
	cert := testcert.New(t, dir, "serve")
	addr := sigFreeAddr(t)
	s := startServe(t, nil, "--node-name=secure", "--http-addr="+addr, "--gossip-addr=:"+freeGossipPort(t),
		"--ready-timeout=0", "--tls-cert="+cert.CertFile, "--tls-key="+cert.KeyFile,
		"--auth-users=ops:"+testHash(t)+":read,write")
	s.waitLog(t, "clients: use this Eureka service URL")
	assert.Contains(t, s.logs.String(), `url=https://127.0.0.1:`)
	assert.Contains(t, s.logs.String(), `auth=true`)

	pool := cert.Pool.Clone()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(url string) int {
		res, err := client.Get(url)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, get("https://"+addr+"/eureka/apps"))
	assert.Equal(t, http.StatusOK, get("https://ops:pw@"+addr+"/eureka/apps"))
	assert.Equal(t, http.StatusOK, get("https://"+addr+"/healthz"))
}

// TestReloadOnHangup: each hang-up reloads the TLS files.
func TestReloadOnHangup(t *testing.T) {
	dir := t.TempDir()
	first := testcert.New(t, dir, "hup")
	nc := node.DefaultConfig("hup")
	nc.HTTPAddr = "127.0.0.1:0"
	nc.TLSCertFile, nc.TLSKeyFile = first.CertFile, first.KeyFile
	n, err := node.Start(nc)
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
	}()
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal)
	done := make(chan struct{})
	logs := &syncBuffer{}
	go func() {
		defer close(done)
		reloadOnHangup(ctx, hup, n, slog.New(slog.NewTextHandler(logs, nil)))
	}()

	second := testcert.New(t, dir, "hup")
	pool := x509.NewCertPool()
	pool.AddCert(first.Leaf)
	pool.AddCert(second.Leaf)
	served := func() string {
		conn, err := tls.Dial("tcp", n.Addr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	assert.Equal(t, first.Leaf.SerialNumber.String(), served())
	hup <- syscall.SIGHUP // unbuffered: received once this returns
	require.Eventually(t, func() bool { return served() == second.Leaf.SerialNumber.String() }, 10*time.Second, 10*time.Millisecond)
	assert.Contains(t, logs.String(), "SIGHUP: reloading the TLS certificate")
	cancel()
	<-done
}
