package node_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/testcert"
	"github.com/heureka/heureka/node"
)

// startSecureNode starts a single node on loopback with mutate applied, and
// stops it when the test ends.
func startSecureNode(t *testing.T, mutate func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig("secure-node")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
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

// servedCert makes a new TLS connection to addr, trusting pool, and returns
// the certificate the server presented.
func servedCert(t *testing.T, addr string, pool *x509.CertPool) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	require.NoError(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// TestTLSServeAndReload: the node serves HTTPS with its files, and ReloadTLS
// puts renewed files in use for new connections; a broken renewal keeps the
// certificate in use.
func TestTLSServeAndReload(t *testing.T) {
	dir := t.TempDir()
	first := testcert.New(t, dir, "heureka")
	logs := &lifecycleLogs{}
	n := startSecureNode(t, func(c *node.Config) {
		c.TLSCertFile, c.TLSKeyFile = first.CertFile, first.KeyFile
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	require.True(t, strings.HasPrefix(n.URL(), "https://127.0.0.1:"), n.URL())

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: first.Pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	res, err := client.Get(n.URL() + "/apps")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, first.Leaf.SerialNumber, res.TLS.PeerCertificates[0].SerialNumber)
	assert.Equal(t, "h2", res.TLS.NegotiatedProtocol, "HTTP/2 is offered over TLS")

	// Plain HTTP on the TLS port gets net/http's 400, not a hang.
	plain := &http.Client{Timeout: 10 * time.Second}
	res, err = plain.Get("http://" + n.Addr() + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	plain.CloseIdleConnections()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "TLS handshake error") }, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, logs.String(), `level=DEBUG msg="http: TLS handshake error`, "handshake failures are not warnings")

	// The files are renewed in place (same names), then reloaded.
	second := testcert.New(t, dir, "heureka")
	require.NotEqual(t, first.Leaf.SerialNumber, second.Leaf.SerialNumber)
	both := first.Pool.Clone()
	both.AddCert(second.Leaf)
	assert.Equal(t, first.Leaf.SerialNumber, servedCert(t, n.Addr(), both).SerialNumber, "nothing changes before the reload")
	require.NoError(t, n.ReloadTLS())
	assert.Equal(t, second.Leaf.SerialNumber, servedCert(t, n.Addr(), both).SerialNumber)

	// A half-written renewal: the reload fails, naming the file, and the
	// node keeps serving the certificate it has.
	require.NoError(t, os.WriteFile(second.CertFile, []byte("-----BEGIN CERTIFICATE-----\ntruncated"), 0o600))
	err = n.ReloadTLS()
	require.Error(t, err)
	assert.Contains(t, err.Error(), second.CertFile)
	assert.Equal(t, second.Leaf.SerialNumber, servedCert(t, n.Addr(), both).SerialNumber)
}

func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	c := testcert.New(t, dir, "x")
	for name, tc := range map[string]struct {
		cert, key, want string
	}{
		"cert without key": {cert: c.CertFile, want: "both a certificate file and a key file"},
		"key without cert": {key: c.KeyFile, want: "both a certificate file and a key file"},
		"missing file":     {cert: dir + "/nope.crt", key: c.KeyFile, want: "nope.crt"},
		"key of another":   {cert: c.CertFile, key: testcert.New(t, dir, "y").KeyFile, want: "private key does not match public key"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := node.DefaultConfig("bad-tls")
			cfg.HTTPAddr = "127.0.0.1:0"
			cfg.TLSCertFile, cfg.TLSKeyFile = tc.cert, tc.key
			_, err := node.Start(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	cfg := node.DefaultConfig("bad-headers")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.MaxHeaderBytes = -1
	_, err := node.Start(cfg)
	assert.ErrorContains(t, err, "MaxHeaderBytes")
}

// TestMaxHeaderBytes: headers up to the limit pass; beyond it the client
// gets 431.
func TestMaxHeaderBytes(t *testing.T) {
	n := startSecureNode(t, func(*node.Config) {}) // DefaultConfig: 64 KiB
	status := func(headerBytes int) string {
		conn, err := net.Dial("tcp", n.Addr())
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		go func() {
			// Written concurrently: the server may answer before it has
			// read everything.
			_, _ = fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\nConnection: close\r\n\r\n",
				strings.Repeat("a", headerBytes))
		}()
		line, err := bufio.NewReader(conn).ReadString('\n')
		require.NoError(t, err)
		return strings.TrimSpace(line)
	}
	assert.Equal(t, "HTTP/1.1 200 OK", status(32<<10))
	assert.Equal(t, "HTTP/1.1 431 Request Header Fields Too Large", status(128<<10))
}
