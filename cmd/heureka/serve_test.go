package main

// What a node started by the serve command logs: the version, the effective
// configuration with its secrets masked, the URL for clients, each client
// change once, joins and leaves, memberlist's chatter translated; every
// attribute once; in JSON, every line a JSON object.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heureka/heureka/internal/buildinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// servedNode is a serve command running in process.
type servedNode struct {
	logs *syncBuffer
	done chan int // the exit status, once it returned
	stop context.CancelFunc
}

// startServe runs `heureka serve args...` in process until the test ends
// (or stopServe).
func startServe(t *testing.T, env map[string]string, args ...string) *servedNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &servedNode{logs: &syncBuffer{}, done: make(chan int, 1), stop: cancel}
	go func() {
		s.done <- runContext(ctx, append([]string{"serve"}, args...), envMap(env), io.Discard, s.logs)
	}()
	t.Cleanup(func() {
		s.stopServe(t)
		if t.Failed() {
			t.Logf("serve %v:\n%s", args, s.logs.String())
		}
	})
	return s
}

// stopServe stops the node and returns its exit status.
func (s *servedNode) stopServe(t *testing.T) int {
	s.stop()
	select {
	case code := <-s.done:
		s.done <- code
		return code
	case <-time.After(30 * time.Second):
		require.FailNow(t, "serve did not return")
		return -1
	}
}

// waitLog waits until the node's log contains sub.
func (s *servedNode) waitLog(t *testing.T, sub string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(s.logs.String(), sub) }, 30*time.Second, 10*time.Millisecond,
		"never logged %q", sub)
}

// jsonKeysOnce checks that a JSON document is valid and that no object in
// it has a key twice (encoding/json would keep the last one silently).
func jsonKeysOnce(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if seen[k.(string)] {
					return fmt.Errorf("key %q twice", k)
				}
				seen[k.(string)] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("data after the object: %v", err)
	}
	return nil
}

// logfmtKey matches the keys of a line of slog's text format.
var logfmtKey = regexp.MustCompile(`(?:^| )([^ =]+)=(?:"(?:[^"\\]|\\.)*"|[^ ]*)`)

func TestServeLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two nodes")
	}
	key := key(32)
	env := map[string]string{"HEUREKA_GOSSIP_KEY": key}
	aGossip, aHTTP := sigFreeAddr(t), sigFreeAddr(t)
	_, aPort, _ := net.SplitHostPort(aGossip)

	// b starts first and retries joining a, which is not there yet.
	b := startServe(t, env, "--node-name=b", "--http-addr="+sigFreeAddr(t), "--gossip-addr=:"+freeGossipPort(t),
		"--join=127.0.0.1:"+aPort, "--log-format=json", "--ready-timeout=0")
	b.waitLog(t, "join failed, will retry")
	a := startServe(t, env, "--node-name=a", "--http-addr="+aHTTP, "--gossip-addr="+aGossip, "--log-level=info")
	a.waitLog(t, "clients: use this Eureka service URL")
	b.waitLog(t, `"msg":"cluster: joined"`)
	a.waitLog(t, `msg="cluster: member joined"`)

	base := "http://" + aHTTP
	register(t, base, "ORDERS", "orders-1")
	code, body := procDo("DELETE", base+"/eureka/apps/ORDERS/orders-1", "")
	require.Equal(t, http.StatusOK, code, body)
	a.waitLog(t, "msg=cancelled")

	require.Equal(t, 0, b.stopServe(t))
	a.waitLog(t, `msg="cluster: member left"`)
	require.Equal(t, 0, a.stopServe(t))
	aLog, bLog := a.logs.String(), b.logs.String()

	t.Run("startup", func(t *testing.T) {
		bi := buildinfo.Get()
		assert.Regexp(t, `level=INFO msg="heureka starting" node=a version=`+regexp.QuoteMeta(bi.Release)+
			` commit=`+regexp.QuoteMeta(bi.ShortCommit())+` wireProtocols=`+regexp.QuoteMeta(bi.Protocols())+` go=go`, aLog)
		assert.Contains(t, aLog, `config.gossip-key="(set, not shown)"`)
		assert.Contains(t, aLog, "config.http-addr="+aHTTP)
		assert.NotContains(t, aLog, key, "the gossip key is never logged")
		assert.NotContains(t, bLog, key)
		assert.Contains(t, aLog, `msg="clients: use this Eureka service URL" node=a url=`+base+"/eureka/")
	})
	t.Run("changes once, where they were made", func(t *testing.T) {
		assert.Equal(t, 1, strings.Count(aLog, "level=INFO msg=registered node=a component=registry app=ORDERS id=orders-1 status=UP"), aLog)
		assert.Equal(t, 1, strings.Count(aLog, "level=INFO msg=cancelled node=a component=registry app=ORDERS id=orders-1"), aLog)
		assert.NotRegexp(t, `"msg":"registered".*"app":"ORDERS"`, bLog, "b got a copy: debug only")
		// Each node registers itself as an instance of HEUREKA, and
		// cancels that as it stops.
		assert.Contains(t, bLog, `"msg":"registered","node":"b","component":"registry","app":"HEUREKA","id":"b"`)
		assert.Contains(t, bLog, `"msg":"cancelled","node":"b","component":"registry","app":"HEUREKA","id":"b"`)
	})
	t.Run("members joining and leaving, once", func(t *testing.T) {
		assert.Equal(t, 1, strings.Count(aLog, `msg="cluster: member joined" node=a component=cluster member=b`), aLog)
		assert.Equal(t, 1, strings.Count(aLog, `msg="cluster: member left" node=a component=cluster member=b`), aLog)
		assert.NotContains(t, aLog, "member is leaving", "debug: the leave follows")
	})
	t.Run("join retry is one readable line", func(t *testing.T) {
		var rec map[string]any
		for line := range strings.SplitSeq(strings.TrimSpace(bLog), "\n") {
			if strings.Contains(line, "join failed, will retry") {
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				break
			}
		}
		require.NotNil(t, rec)
		assert.Equal(t, "WARN", rec["level"], "the first failure warns")
		assert.Regexp(t, `^failed to join 127\.0\.0\.1:\d+: .*connection refused$`, rec["err"])
		assert.Regexp(t, `^\d+(\.\d+)?m?s$`, rec["retry_in"], "a duration people read")
	})
	t.Run("memberlist never warns about refutations", func(t *testing.T) {
		for _, l := range []string{aLog, bLog} {
			assert.NotRegexp(t, `(?i)(WARN|ERROR).*refut`, l)
		}
	})
	t.Run("json: every line one object, every key once", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(bLog), "\n")
		require.Greater(t, len(lines), 5)
		for i, line := range lines {
			assert.NoError(t, jsonKeysOnce([]byte(line)), "line %d: %s", i+1, line)
			var rec map[string]any
			if assert.NoError(t, json.Unmarshal([]byte(line), &rec), "line %d", i+1) {
				assert.Equal(t, "b", rec["node"], "line %d: %s", i+1, line)
			}
		}
	})
	t.Run("text: every attribute once", func(t *testing.T) {
		for i, line := range strings.Split(strings.TrimSpace(aLog), "\n") {
			seen := map[string]bool{}
			for _, m := range logfmtKey.FindAllStringSubmatch(line, -1) {
				assert.False(t, seen[m[1]], "line %d: %q twice in %s", i+1, m[1], line)
				seen[m[1]] = true
			}
			assert.True(t, seen["node"], "line %d names the node: %s", i+1, line)
		}
	})
}
