package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
)

// LogWriter is an io.Writer that turns memberlist's log lines into slog
// records. memberlist logs through a *log.Logger, one line per call, like
//
//	2024/05/01 12:00:00 [DEBUG] memberlist: Stream connection from=10.0.0.2:7946
//
// LogWriter drops the timestamp (slog adds its own), maps the bracketed level
// to a slog level ([TRACE] and [DEBUG] → Debug, [INFO] → Info, [WARN] → Warn,
// [ERR] and [ERROR] → Error, none → Info), strips the "memberlist: " prefix
// and logs the rest as the message with lib=memberlist.
//
// Set it as memberlist.Config.LogOutput and leave Config.Logger nil:
// memberlist refuses a config with both. Membership does this itself.
// LogWriter is safe for concurrent use.
//
// It only logs: nothing in the package reads memberlist's log text to learn
// what memberlist did, so discarding these lines loses no behaviour.
type LogWriter struct {
	logger *slog.Logger
}

// NewLogWriter returns a LogWriter that logs to l (slog.Default() if nil).
func NewLogWriter(l *slog.Logger) *LogWriter {
	if l == nil {
		l = slog.Default()
	}
	return &LogWriter{logger: l.With("lib", "memberlist")}
}

// Write logs each line of p as one record. It never fails.
func (w *LogWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		level, msg := parseLogLine(string(line))
		if w.logger.Enabled(context.Background(), level) {
			w.logger.Log(context.Background(), level, msg)
		}
	}
	return n, nil
}

// parseLogLine splits one memberlist log line into its level and message.
func parseLogLine(line string) (slog.Level, string) {
	line = strings.TrimRight(line, "\r")
	open := strings.IndexByte(line, '[')
	if open < 0 || !isTimestamp(line[:open]) {
		return slog.LevelInfo, strings.TrimSpace(line)
	}
	end := strings.IndexByte(line[open:], ']')
	if end < 0 {
		return slog.LevelInfo, strings.TrimSpace(line)
	}
	tag := line[open+1 : open+end]
	msg := strings.TrimSpace(line[open+end+1:])
	msg = strings.TrimPrefix(msg, "memberlist: ")
	switch tag {
	case "TRACE", "DEBUG":
		return slog.LevelDebug, msg
	case "INFO":
		return slog.LevelInfo, msg
	case "WARN", "WARNING":
		return slog.LevelWarn, msg
	case "ERR", "ERROR":
		return slog.LevelError, msg
	}
	return slog.LevelInfo, strings.TrimSpace(line[open:])
}

// isTimestamp reports whether s is empty or looks like the date/time prefix
// of a standard log.Logger ("2024/05/01 12:00:00.000000 ").
func isTimestamp(s string) bool {
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9', r == '/', r == ':', r == '.', r == ' ':
		default:
			return false
		}
	}
	return true
}
