package js_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/internal/testcert"
	"github.com/heureka/heureka/node"
)

// TestEurekaJSClientSecurity runs security.test.js: eureka-js-client with
// credentials in its service URL against a node with basic auth, with a
// wrong password, against a node with auth off, and over TLS (the node's
// self-signed certificate trusted through NODE_EXTRA_CA_CERTS).
func TestEurekaJSClientSecurity(t *testing.T) {
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "eureka-js-client", "package.json")); err != nil {
		t.Fatalf("clients/js/node_modules/eureka-js-client is missing (%v): run `make clientdeps`", err)
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (Node.js 20+) is not on PATH: %v", err)
	}

	const user, pass = "js-client", "js-Pass:with/odd@chars"
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	require.NoError(t, err)
	auth := &httpapi.AuthConfig{Users: []httpapi.User{{Name: user, PasswordHash: string(hash), Roles: httpapi.RoleRead | httpapi.RoleWrite}}}
	cert := testcert.New(t, t.TempDir(), "heureka-js")

	start := func(name string, mutate func(*node.Config)) *node.Node {
		cfg := node.DefaultConfig(name)
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
	withAuth := start("js-auth", func(c *node.Config) { c.Auth = auth })
	withTLS := start("js-tls", func(c *node.Config) {
		c.Auth = auth
		c.TLSCertFile, c.TLSKeyFile = cert.CertFile, cert.KeyFile
	})
	open := start("js-open", func(*node.Config) {})

	runNodeTest(t, dir, nodeBin, "security.test.js",
		"HEUREKA_AUTH_URL="+withAuth.URL(),
		"HEUREKA_TLS_URL="+withTLS.URL(),
		"HEUREKA_OPEN_URL="+open.URL(),
		"HEUREKA_USER="+user,
		"HEUREKA_PASS="+pass,
		"NODE_EXTRA_CA_CERTS="+cert.CertFile,
	)
}

// runNodeTest runs `node --test file` in dir with env added, streams its
// output to the test log and fails the test if it fails.
func runNodeTest(t *testing.T, dir, nodeBin, file string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "--test", file)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "NODE_ENV=test"), env...)
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			t.Log(sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-logged
	if ctx.Err() != nil {
		t.Fatalf("node --test %s did not finish within 2 minutes: %v", file, err)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("node --test %s failed (exit code %d); its output is above", file, exitErr.ExitCode())
	}
	require.NoError(t, err, "running node --test %s", file)
}
