package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewLoggerJSON(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "info", "json", "node-1")
	require.NoError(t, err)
	log.Debug("hidden")
	log.Info("started", "port", 8761)
	log.Warn("careful")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, "debug must be filtered at info: %q", buf.String())
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	assert.Equal(t, "INFO", rec["level"])
	assert.Equal(t, "node-1", rec["node"])
	assert.Equal(t, "started", rec["msg"])
	assert.EqualValues(t, 8761, rec["port"])
	assert.Contains(t, rec, "time")
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
	assert.Equal(t, "WARN", rec["level"])
}

func TestNewLoggerText(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "debug", "text", "node-2")
	require.NoError(t, err)
	log.Debug("visible", "k", "v")
	out := buf.String()
	assert.Contains(t, out, "level=DEBUG")
	assert.Contains(t, out, "node=node-2")
	assert.Contains(t, out, "msg=visible")
	assert.Contains(t, out, "k=v")
	assert.False(t, json.Valid([]byte(out)))
}

func TestNewLoggerLevels(t *testing.T) {
	tests := []struct {
		level   string
		logged  []string // messages written, from debug/info/warn/error
		wantErr string
	}{
		{level: "debug", logged: []string{"d", "i", "w", "e"}},
		{level: "info", logged: []string{"i", "w", "e"}},
		{level: "INFO", logged: []string{"i", "w", "e"}},
		{level: "warn", logged: []string{"w", "e"}},
		{level: "warning", logged: []string{"w", "e"}},
		{level: "error", logged: []string{"e"}},
		{level: "trace", wantErr: `unknown log level "trace"`},
		{level: "", wantErr: `unknown log level ""`},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := NewLogger(&buf, tt.level, "json", "")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			var got []string
			for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				assert.NotContains(t, rec, "node", "no node attribute when the name is empty")
				got = append(got, rec["msg"].(string))
			}
			assert.Equal(t, tt.logged, got)
		})
	}
}

func TestNewLoggerBadFormat(t *testing.T) {
	_, err := NewLogger(&bytes.Buffer{}, "info", "xml", "n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown log format "xml"`)
}

func TestNewLoggerFromConfig(t *testing.T) {
	cfg, _, err := LoadConfig([]string{"--log-format=JSON", "--log-level=Debug", "--node-name=n9"}, envMap(nil))
	require.NoError(t, err)
	var buf bytes.Buffer
	log, err := NewLogger(&buf, cfg.LogLevel, cfg.LogFormat, cfg.NodeName)
	require.NoError(t, err)
	log.Debug("hello")
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
	assert.Equal(t, "DEBUG", rec["level"])
	assert.Equal(t, "n9", rec["node"])
}
