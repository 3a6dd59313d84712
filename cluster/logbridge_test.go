package cluster

import (
	"bytes"
	"log"
	"log/slog"
	"strings"
	"testing"

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
	std.Printf("[WARN] memberlist: Suspect n2 has failed, no acks received")
	chunk := []byte("[INFO] memberlist: one\n\n[ERR] memberlist: two\n")
	n, err := w.Write(chunk)
	require.NoError(t, err)
	assert.Equal(t, len(chunk), n)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[0], `level=WARN msg="Suspect n2 has failed, no acks received" lib=memberlist`)
	assert.Contains(t, lines[1], "level=INFO msg=one lib=memberlist")
	assert.Contains(t, lines[2], "level=ERROR msg=two lib=memberlist")
}
