package main

// Tests of the command itself: run's subcommands and flag errors in
// process, and the built binary's signal handling as a real process.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/buildinfo"
	"github.com/heureka/heureka/internal/freeport"
)

// noEnv is a getenv that sees no environment, so that the developer's
// HEUREKA_* variables cannot change what a test sees.
func noEnv(string) string { return "" }

func TestRunVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"version"}, noEnv, &out, &errOut)
	assert.Equal(t, 0, code)
	assert.Equal(t, "heureka "+version+"\n", out.String())
	assert.Empty(t, errOut.String())
}

func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"serve", "-h"}} {
		var out, errOut bytes.Buffer
		code := run(args, noEnv, &out, &errOut)
		assert.Equal(t, 0, code, "%v", args)
		assert.Contains(t, out.String(), "--http-addr", "%v", args)
		assert.Empty(t, errOut.String(), "%v", args)
	}
}

func TestRunBadArguments(t *testing.T) {
	cases := []struct {
		args []string
		want []string // substrings of stderr
	}{
		{[]string{"--no-such-flag"}, []string{"heureka:", "no-such-flag"}},
		{[]string{"serve", "--no-such-flag=1"}, []string{"heureka:", "no-such-flag"}},
		{[]string{"--eviction-interval", "soon"}, []string{"heureka:", "--eviction-interval", "soon"}},
		{[]string{"--http-addr", "nowhere"}, []string{"heureka:", "--http-addr", "nowhere"}},
		{[]string{"--log-level", "loud"}, []string{"heureka:", "loud"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, noEnv, &out, &errOut)
		assert.Equal(t, 2, code, "%v", c.args)
		for _, w := range c.want {
			assert.Contains(t, errOut.String(), w, "%v", c.args)
		}
		assert.NotContains(t, errOut.String(), "heureka node started", "%v: must not start", c.args)
	}
}

// TestRunEnvironmentErrors: a bad HEUREKA_* variable is reported like a bad
// flag.
func TestRunEnvironmentErrors(t *testing.T) {
	env := map[string]string{"HEUREKA_EVICTION_INTERVAL": "often"}
	var out, errOut bytes.Buffer
	code := run(nil, func(k string) string { return env[k] }, &out, &errOut)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), "often")
}

// TestRunPortInUse: a node that cannot listen exits with 1 and says why.
func TestRunPortInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"--http-addr", busy.Addr().String(), "--gossip-addr", sigFreeAddr(t)}, noEnv, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "cannot start")
	assert.Contains(t, errOut.String(), busy.Addr().String())
}

// sigFreeAddr returns a loopback address whose TCP and UDP ports are free
// now (gossip, when wired, listens on both).
func sigFreeAddr(t *testing.T) string {
	t.Helper()
	p, err := freeport.Port("127.0.0.1", true)
	require.NoError(t, err)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// sigBuild builds the heureka binary into dir.
func sigBuild(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool is needed to build the binary")
	bin := filepath.Join(dir, "heureka")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// TestBinaryExitsCleanlyOnSignal builds the binary, starts it with short
// timers, registers an instance over HTTP and checks that SIGTERM and SIGINT
// each stop it with exit code 0 and the node's final log line.
func TestBinaryExitsCleanlyOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := sigBuild(t, t.TempDir())
	for _, c := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGINT", syscall.SIGINT}} {
		sig := c.sig
		t.Run(c.name, func(t *testing.T) {
			httpAddr := sigFreeAddr(t)
			cmd := exec.Command(bin, "serve",
				"--node-name", "sig-test",
				"--http-addr", httpAddr,
				"--gossip-addr", sigFreeAddr(t),
				"--eviction-interval", "100ms",
				"--renewal-window", "200ms",
				"--delta-retention-interval", "100ms",
				"--self-preservation=false",
				"--log-level", "debug",
			)
			// Only the command line configures the node.
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			logs := &syncBuffer{}
			cmd.Stdout = logs
			cmd.Stderr = logs
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			exited := false
			t.Cleanup(func() {
				if !exited {
					_ = cmd.Process.Kill()
					<-done
				}
				if t.Failed() {
					t.Logf("heureka output:\n%s", logs.String())
				}
			})

			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			base := "http://" + httpAddr
			require.Eventually(t, func() bool {
				res, err := client.Get(base + "/healthz")
				if err != nil {
					return false
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				return res.StatusCode == http.StatusOK
			}, 60*time.Second, 50*time.Millisecond, "/healthz never answered 200")

			body := `{"instance":{"instanceId":"sig-1","hostName":"h1","app":"sig-app","ipAddr":"10.0.0.1",` +
				`"status":"UP","port":{"$":8080,"@enabled":"true"},` +
				`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`
			res, err := client.Post(base+"/eureka/apps/sig-app", "application/json", strings.NewReader(body))
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, http.StatusNoContent, res.StatusCode)
			res, err = client.Get(base + "/eureka/apps/SIG-APP/sig-1")
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode)

			// The same binary asks the node, as a person would.
			cli := func(args ...string) string {
				c := exec.Command(bin, args...)
				c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
				out, err := c.CombinedOutput()
				require.NoError(t, err, "heureka %v: %s", args, out)
				return string(out)
			}
			assert.Regexp(t, `(?m)^sig-1\s+UP\s+h1\s+10\.0\.0\.1\s+8080\s`, cli("apps", "sig-app", "--addr", base))
			assert.Regexp(t, `(?m)^SIG-APP\s+1\s+UP 1$`, cli("apps", "--addr", base))
			assert.Regexp(t, `(?m)^sig-test\s+alive\s`, cli("members", "--addr", base))
			assert.Regexp(t, `(?m)^node\s+sig-test$`, cli("status", "--addr", base))
			// The built binary may carry the clone's commit (the toolchain's
			// VCS stamp), which a test binary never does.
			bi := buildinfo.Get()
			assert.Regexp(t, `^heureka `+regexp.QuoteMeta(bi.Release)+` \(commit [0-9a-f+dirtyunknown]+, wire protocol `+
				regexp.QuoteMeta(bi.Protocols())+`\)\n$`, cli("--version"))
			// Keep a connection open through the shutdown.
			tr.CloseIdleConnections()
			res, err = client.Get(base + "/healthz")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()

			require.NoError(t, cmd.Process.Signal(sig))
			var waitErr error
			select {
			case waitErr = <-done:
				exited = true
			case <-time.After(30 * time.Second):
				require.FailNow(t, "heureka did not exit", "still running 30s after %v", sig)
			}
			var ee *exec.ExitError
			if errors.As(waitErr, &ee) {
				require.FailNow(t, "unclean exit", "%v: exit code %d (%v)", sig, ee.ExitCode(), ee)
			}
			require.NoError(t, waitErr)
			out := logs.String()
			assert.Contains(t, out, "heureka node started")
			assert.Contains(t, out, `msg="heureka starting" node=sig-test version=`+buildinfo.Get().Release+` commit=`)
			assert.Contains(t, out, `msg=registered node=sig-test component=registry app=SIG-APP id=sig-1`)
			assert.Contains(t, out, "shutting down")
			assert.Contains(t, out, "heureka node stopped")
			assert.NotContains(t, out, "level=ERROR")
			assert.Less(t, strings.Index(out, "heureka node started"), strings.Index(out, "heureka node stopped"))

			// The port is free again.
			ln, err := net.Listen("tcp", httpAddr)
			require.NoError(t, err, "port %s still held after exit", httpAddr)
			require.NoError(t, ln.Close())
		})
	}
}
