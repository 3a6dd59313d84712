package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// logLevels maps the accepted --log-level spellings to slog levels.
var logLevels = map[string]slog.Level{
	"debug":   slog.LevelDebug,
	"info":    slog.LevelInfo,
	"warn":    slog.LevelWarn,
	"warning": slog.LevelWarn,
	"error":   slog.LevelError,
}

// parseLogLevel turns a --log-level value (debug, info, warn or error, any
// case) into a slog.Level.
func parseLogLevel(s string) (slog.Level, error) {
	if l, ok := logLevels[strings.ToLower(strings.TrimSpace(s))]; ok {
		return l, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}

// checkLogFormat reports whether s is a --log-format value: text or json, any
// case.
func checkLogFormat(s string) error {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "text", "json":
		return nil
	}
	return fmt.Errorf("unknown log format %q (want text or json)", s)
}

// NewLogger returns a slog.Logger writing to w in format ("text" or "json") at
// level ("debug", "info", "warn" or "error"; case does not matter), with the
// attribute node=node on every record (omitted when node is empty). Callers
// normally pass a Config's LogLevel, LogFormat and NodeName. It fails, naming
// the bad value, when level or format is not one of those.
func NewLogger(w io.Writer, level, format, node string) (*slog.Logger, error) {
	lvl, err := parseLogLevel(level)
	if err != nil {
		return nil, err
	}
	if err := checkLogFormat(format); err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	if strings.EqualFold(strings.TrimSpace(format), "json") {
		// Durations as "1.5s", as the text format writes them, not as
		// integer nanoseconds.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	if node != "" {
		h = h.WithAttrs([]slog.Attr{slog.String("node", node)})
	}
	return slog.New(h), nil
}
