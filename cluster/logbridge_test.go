package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLogLine(t *testing.T) {
	cases := []struct {
		line  string
		level slog.Level
		msg   string
	}{
		{"2024/05/01 12:00:00 [DEBUG] memberlist: Stream connection from=1.2.3.4:5", slog.LevelDebug, "Stream connection from=1.2.3.4:5"},
		{"2024/05/01 12:00:00.123456 [INFO] memberlist: Marking n2 as failed", slog.LevelInfo, "Marking n2 as failed"},
		{"[WARN] memberlist: Refuting a suspect message (from: n3)", slog.LevelWarn, "Refuting a suspect message (from: n3)"},
		{"[ERR] memberlist: Failed to send ping", slog.LevelError, "Failed to send ping"},
		{"[ERROR] Failed to shutdown transport", slog.LevelError, "Failed to shutdown transport"},
		{"[TRACE] memberlist: x", slog.LevelDebug, "x"},
		{"no level at all", slog.LevelInfo, "no level at all"},
		{"2024/05/01 [CUSTOM] odd", slog.LevelInfo, "[CUSTOM] odd"},
		{"text [INFO] later bracket", slog.LevelInfo, "text [INFO] later bracket"},
		{"[DEBUG unterminated", slog.LevelInfo, "[DEBUG unterminated"},
	}
	for _, tc := range cases {
		level, msg := parseLogLine(tc.line)
		assert.Equal(t, tc.level, level, tc.line)
		assert.Equal(t, tc.msg, msg, tc.line)
	}
}

func TestLogWriterBridgesStdLogger(t *testing.T) {
	var out bytes.Buffer
	sl := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	w := NewLogWriter(sl)

	std := log.New(w, "", log.LstdFlags) // what memberlist builds from LogOutput
	std.Printf("[DEBUG] memberlist: hidden below Info")
	std.Printf("[WARN] memberlist: handler queue full, dropping message (3)")
	chunk := []byte("[INFO] memberlist: one\n\n[ERR] memberlist: two\n")
	n, err := w.Write(chunk)
	require.NoError(t, err)
	assert.Equal(t, len(chunk), n)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[0], `level=WARN msg="handler queue full, dropping message (3)" lib=memberlist`)
	assert.Contains(t, lines[1], "level=INFO msg=one lib=memberlist")
	assert.Contains(t, lines[2], "level=ERROR msg=two lib=memberlist")
}

// TestTranslateMemberlistMessages: memberlist's messages that people misread
// are reworded or demoted; refutations never reach WARN.
func TestTranslateMemberlistMessages(t *testing.T) {
	cases := []struct {
		line  string
		level slog.Level
		msg   string // "" keeps the parsed message
	}{
		{"2024/05/01 12:00:00 [WARN] memberlist: Refuting a suspect message (from: n3)", slog.LevelInfo,
			"cluster: n3 suspected this node (a probe went unanswered); refuted: this node told the cluster it is alive"},
		{"2024/05/01 12:00:00 [WARN] memberlist: Refuting a dead message (from: n2)", slog.LevelInfo,
			"cluster: n2 reported this node dead (usually a restart under the same name); refuted: this node told the cluster it is alive"},
		{"[WARN] memberlist: Refuting an alive message for 'a' (10.0.0.1:7946) meta:([1] VS [2]), vsn:([1] VS [2])", slog.LevelDebug,
			"cluster: refuted an outdated alive message about this node (a)"},
		{"[INFO] memberlist: Suspect n2 has failed, no acks received", slog.LevelDebug, ""},
		{"[INFO] memberlist: Marking n2 as failed, suspect timeout reached (0 peer confirmations)", slog.LevelDebug, ""},
		{"[ERR] memberlist: Failed to send gossip to 10.0.0.2:7946: write udp: connection refused", slog.LevelDebug, ""},
		{"[ERR] memberlist: Failed to send UDP ping: write: broken pipe", slog.LevelDebug, ""},
		{"[WARN] memberlist: failed to resolve nowhere.invalid: lookup nowhere.invalid: no such host", slog.LevelDebug, ""},
		{"[ERR] memberlist: Push/Pull with n2 failed: dial tcp 10.0.0.2:7946: i/o timeout", slog.LevelInfo,
			"cluster: state exchange with n2 failed: dial tcp 10.0.0.2:7946: i/o timeout"},
		{"[WARN] memberlist: Binding to public address without encryption!", slog.LevelWarn,
			"cluster: gossip listens on a public address without encryption; set --gossip-key"},
		{"[ERR] memberlist: Conflicting address for a. Mine: 10.0.0.1:7946 Theirs: 10.0.0.9:7946 Old state: 0", slog.LevelError,
			"cluster: two nodes call themselves a (10.0.0.1:7946 and 10.0.0.9:7946): give each node its own --node-name"},
		{"[ERR] memberlist: Failed to receive: EOF", slog.LevelError, ""},
	}
	for _, tc := range cases {
		level, msg := translate(parseLogLine(tc.line))
		assert.Equal(t, tc.level, level, tc.line)
		want := tc.msg
		if want == "" {
			_, want = parseLogLine(tc.line)
		}
		assert.Equal(t, want, msg, tc.line)
	}
}

// TestErrorText: joined errors, memberlist's multierror among them, print
// on one line.
func TestErrorText(t *testing.T) {
	var merr *multierror.Error
	merr = multierror.Append(merr, errors.New("failed to join 127.0.0.1:7946: dial tcp 127.0.0.1:7946: connect: connection refused"))
	require.Contains(t, merr.Error(), "\n", "go-multierror prints a list over lines")
	two := multierror.Append(nil, errors.New("a: x"), errors.New("b:\ny"))
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), "plain"},
		{merr, "failed to join 127.0.0.1:7946: dial tcp 127.0.0.1:7946: connect: connection refused"},
		{errors.Join(errors.New("lookup seed: no such host"), merr),
			"lookup seed: no such host; failed to join 127.0.0.1:7946: dial tcp 127.0.0.1:7946: connect: connection refused"},
		{errors.Join(nil, two), "a: x; b: y"},
		{errors.Join(merr, merr), "failed to join 127.0.0.1:7946: dial tcp 127.0.0.1:7946: connect: connection refused"},
		{fmt.Errorf("joining: %w and %w", errors.New("p"), errors.New("q")), "joining: p and q"},
	}
	for _, tc := range cases {
		got := ErrorText(tc.err)
		assert.Equal(t, tc.want, got)
		assert.NotContains(t, got, "\n")
	}
}

// memberlist's lines about a peer with another gossip key, protocol or
// label say so in words.
func TestTranslateMismatches(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"failed to receive: No installed keys could decrypt the message from=127.0.0.1:7001", "gossip key mismatch"},
		{"failed to receive: encryption is configured but remote state is not encrypted from=127.0.0.1:7001", "gossip key mismatch"},
		{"failed to receive: remote state is encrypted and encryption is not configured from=127.0.0.1:7001", "gossip key mismatch"},
		{"Decrypt packet failed: no installed keys could decrypt the message from=127.0.0.1:7001", "gossip key mismatch"},
		{"Failed push/pull merge: cluster: peer speaks another wire protocol: x speaks wire protocol 9, this node 3 from=127.0.0.1:7001", "protocol mismatch"},
		{"Push/Pull with 127.0.0.1:7001 failed: cluster: peer speaks another wire protocol: b speaks wire protocol 9, this node 3", "protocol mismatch"},
		{`discarding stream with unacceptable label "other": from=127.0.0.1:7001`, "label mismatch"},
	} {
		level, msg := translate(slog.LevelError, c.in)
		assert.Contains(t, msg, c.want, c.in)
		assert.Equal(t, slog.LevelError, level, c.in)
		assert.Contains(t, msg, "127.0.0.1:7001", c.in)
	}
}

// lockedBuf is a log destination safe for concurrent writers.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// A real node with another gossip key, joining: the seed's log says "key
// mismatch" in words, the joiner's says its join was refused and why.
func TestWrongKeyLoggedAsKeyMismatch(t *testing.T) {
	var la, lb lockedBuf
	ca := testConfig(t, "a")
	ca.GossipKey = []byte("0123456789abcdef")
	ca.Logger = slog.New(slog.NewTextHandler(&la, nil))
	a := startNode(t, ca)
	cb := testConfig(t, "b", a.LocalNode().Address)
	cb.GossipKey = []byte("fedcba9876543210")
	cb.Logger = slog.New(slog.NewTextHandler(&lb, nil))
	b := startNode(t, cb)
	waitJoinFailures(t, b, 2)
	require.Eventually(t, func() bool { return la.has("gossip key mismatch") }, waitFor, 5*time.Millisecond,
		"the seed says key mismatch")
	assert.True(t, lb.has("join refused"), "the joiner says its join was refused")
	assert.True(t, lb.has("cause=key"), "the joiner names the cause")
}
