package fargo_test

// fargo against a node with basic auth and with TLS. fargo has no
// credential settings of its own: it sends every request through
// fargo.HttpClient, and net/http turns the service URL's user info into an
// "Authorization: Basic" header. For TLS, the operator gives fargo a client
// that trusts the server's CA by replacing fargo.HttpClient.

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hudl/fargo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/internal/testcert"
	"github.com/heureka/heureka/node"
)

const (
	clientPass = "fargo-Pass-c0ffee"
	readerPass = "fargo-Reader-beef"
)

// startSecureNode starts a node with mutate applied and stops it when the
// test ends.
func startSecureNode(t *testing.T, mutate func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig("fargo-secure")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Registry.SelfPreservation = false
	mutate(&cfg)
	n, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
	})
	return n
}

// testUsers: "client" may read and write (what a Eureka client needs),
// "reader" may only read.
func testUsers(t *testing.T) *httpapi.AuthConfig {
	t.Helper()
	hash := func(p string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
		require.NoError(t, err)
		return string(h)
	}
	return &httpapi.AuthConfig{Users: []httpapi.User{
		{Name: "client", PasswordHash: hash(clientPass), Roles: httpapi.RoleRead | httpapi.RoleWrite},
		{Name: "reader", PasswordHash: hash(readerPass), Roles: httpapi.RoleRead},
	}}
}

// withUser returns the service URL with user info.
func withUser(t *testing.T, serviceURL, user, pass string) string {
	t.Helper()
	u, err := url.Parse(serviceURL)
	require.NoError(t, err)
	u.User = url.UserPassword(user, pass)
	return u.String()
}

// useHTTPClient makes fargo send through c until the test ends.
func useHTTPClient(t *testing.T, c *http.Client) {
	old := fargo.HttpClient
	fargo.HttpClient = c
	t.Cleanup(func() {
		fargo.HttpClient = old
		c.CloseIdleConnections()
	})
}

// lifecycle registers, reads, renews and cancels one instance through conn.
func lifecycle(t *testing.T, conn *fargo.EurekaConnection, app string) {
	t.Helper()
	ins := newInstance(app, app+"-1", app+".fargo.test", 18090)
	require.NoError(t, conn.RegisterInstance(ins), "RegisterInstance")
	got, err := conn.GetApp(app)
	require.NoError(t, err, "GetApp")
	require.Len(t, got.Instances, 1)
	assert.Equal(t, ins.Id(), got.Instances[0].Id())
	require.NoError(t, conn.HeartBeatInstance(ins), "HeartBeatInstance")
	apps, err := conn.GetApps()
	require.NoError(t, err, "GetApps")
	assert.Contains(t, apps, strings.ToUpper(app))
	require.NoError(t, conn.DeregisterInstance(ins), "DeregisterInstance")
}

func TestFargoBasicAuth(t *testing.T) {
	n := startSecureNode(t, func(c *node.Config) { c.Auth = testUsers(t) })
	useHTTPClient(t, &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second})

	for _, mode := range []struct {
		name    string
		useJSON bool
	}{{"json", true}, {"xml", false}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Run("credentials in the URL", func(t *testing.T) {
				lifecycle(t, newConn(t, withUser(t, n.URL(), "client", clientPass), mode.useJSON), "fargo-auth-"+mode.name)
			})
			t.Run("wrong password: 401", func(t *testing.T) {
				conn := newConn(t, withUser(t, n.URL(), "client", "wrong"), mode.useJSON)
				err := conn.RegisterInstance(newInstance("fargo-denied", "d-1", "d.fargo.test", 18091))
				require.Error(t, err)
				assert.Equal(t, http.StatusUnauthorized, statusCode(err), "%v", err)
				_, err = conn.GetApps()
				require.Error(t, err)
			})
			t.Run("no credentials: 401", func(t *testing.T) {
				conn := newConn(t, n.URL(), mode.useJSON)
				err := conn.RegisterInstance(newInstance("fargo-denied", "d-1", "d.fargo.test", 18091))
				assert.Equal(t, http.StatusUnauthorized, statusCode(err), "%v", err)
			})
			t.Run("read role cannot register: 403", func(t *testing.T) {
				conn := newConn(t, withUser(t, n.URL(), "reader", readerPass), mode.useJSON)
				err := conn.RegisterInstance(newInstance("fargo-denied", "d-1", "d.fargo.test", 18091))
				assert.Equal(t, http.StatusForbidden, statusCode(err), "%v", err)
				_, err = conn.GetApps()
				assert.NoError(t, err, "but it reads")
			})
		})
	}
}

// TestFargoAuthOff: credentials in the URL do no harm when auth is off.
func TestFargoAuthOff(t *testing.T) {
	n := startSecureNode(t, func(*node.Config) {})
	useHTTPClient(t, &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second})
	lifecycle(t, newConn(t, n.URL(), true), "fargo-open")
	lifecycle(t, newConn(t, withUser(t, n.URL(), "any", "thing"), true), "fargo-open-creds")
}

// TestFargoTLS: fargo over HTTPS, trusting the node's self-signed
// certificate through its HttpClient, with and without basic auth; and after
// the node reloads a renewed certificate.
func TestFargoTLS(t *testing.T) {
	dir := t.TempDir()
	cert := testcert.New(t, dir, "heureka")
	n := startSecureNode(t, func(c *node.Config) {
		c.TLSCertFile, c.TLSKeyFile = cert.CertFile, cert.KeyFile
		c.Auth = testUsers(t)
	})
	require.True(t, strings.HasPrefix(n.URL(), "https://"))
	pool := cert.Pool.Clone()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	useHTTPClient(t, &http.Client{Transport: tr, Timeout: 10 * time.Second})

	lifecycle(t, newConn(t, withUser(t, n.URL(), "client", clientPass), true), "fargo-tls-json")
	lifecycle(t, newConn(t, withUser(t, n.URL(), "client", clientPass), false), "fargo-tls-xml")
	_, err := newConn(t, withUser(t, n.URL(), "client", "wrong"), true).GetApps()
	require.Error(t, err)

	// A renewed certificate, reloaded: new connections get it.
	renewed := testcert.New(t, dir, "heureka")
	pool.AddCert(renewed.Leaf)
	require.NoError(t, n.ReloadTLS())
	tr.CloseIdleConnections()
	lifecycle(t, newConn(t, withUser(t, n.URL(), "client", clientPass), true), "fargo-tls-renewed")

	// A client that does not trust the certificate fails the handshake.
	untrusted := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	useHTTPClient(t, untrusted)
	_, err = newConn(t, withUser(t, n.URL(), "client", clientPass), true).GetApps()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
}
