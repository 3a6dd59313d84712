// Package js_test runs the eureka-js-client checks (client.test.js, Node's
// built-in test runner) against a real Heureka node.
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

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

func TestEurekaJSClient(t *testing.T) {
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	// The npm packages are pinned in package-lock.json and installed by
	// `make clientdeps` (CI runs it). Without them this test cannot check
	// anything, and it must not pass silently.
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "eureka-js-client", "package.json")); err != nil {
		t.Fatalf("clients/js/node_modules/eureka-js-client is missing (%v): run `make clientdeps` "+
			"(cd clients/js && npm ci) before the tests", err)
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (Node.js 20+) is not on PATH: %v", err)
	}

	cfg := node.DefaultConfig("js-client-test")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Registry.EvictionInterval = 200 * time.Millisecond
	cfg.Registry.RenewalWindow = 200 * time.Millisecond
	cfg.Registry.SelfPreservation = false
	n, err := node.Start(cfg)
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, n.Stop(ctx))
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "--test", "client.test.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HEUREKA_URL="+n.URL(), "NODE_ENV=test")
	// Do not wait forever for output pipes held open by a stray child.
	cmd.WaitDelay = 10 * time.Second

	// Stream node's output, stdout and stderr interleaved, to the test log.
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			t.Log(sc.Text())
		}
		// Drain anything left (a line over the buffer limit) so node never
		// blocks on a full pipe.
		_, _ = io.Copy(io.Discard, pr)
	}()

	t.Logf("running %s --test client.test.js with HEUREKA_URL=%s", nodeBin, n.URL())
	err = cmd.Run()
	pw.Close()
	<-logged

	if ctx.Err() != nil {
		t.Fatalf("node --test client.test.js did not finish within 2 minutes: %v", err)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("node --test client.test.js failed (exit code %d); its output is above", exitErr.ExitCode())
	}
	require.NoError(t, err, "running node --test client.test.js")
}
