package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"slices"
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
// and logs the rest as the message with lib=memberlist. Messages a person
// would misread are translated first (see memberlistMessages): a refutation
// is routine, not a warning; a peer's failure is reported once by
// Membership, not again by every send that fails because of it.
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
		level, msg := translate(parseLogLine(string(line)))
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

// memberlistMessages rewrites memberlist's log messages (v0.7.0) that people
// misread, in order: the first whose pattern matches the whole message
// decides the level, and the message when msg is not "" (a regexp.Expand
// template; "" keeps memberlist's words).
var memberlistMessages = []struct {
	re    *regexp.Regexp
	level slog.Level
	msg   string
}{
	// Refutations are memberlist working as designed: a peer's probe of this
	// node went unanswered (a slow network, a pause) or this node restarted
	// under its old name, and this node told the cluster it is alive.
	{regexp.MustCompile(`^Refuting a suspect message \(from: (.*)\)$`), slog.LevelInfo,
		"cluster: $1 suspected this node (a probe went unanswered); refuted: this node told the cluster it is alive"},
	{regexp.MustCompile(`^Refuting a dead message \(from: (.*)\)$`), slog.LevelInfo,
		"cluster: $1 reported this node dead (usually a restart under the same name); refuted: this node told the cluster it is alive"},
	{regexp.MustCompile(`^Refuting an alive message for '(.*?)'.*$`), slog.LevelDebug,
		"cluster: refuted an outdated alive message about this node ($1)"},
	// Membership logs each member's suspicion, death and refusal once.
	{regexp.MustCompile(`^Suspect .* has failed, no acks received$`), slog.LevelDebug, ""},
	{regexp.MustCompile(`^Marking .* as failed, suspect timeout reached.*$`), slog.LevelDebug, ""},
	{regexp.MustCompile(`^Rejected node .*$`), slog.LevelDebug, ""},
	// Sends to a member that is failing fail until it is declared dead
	// (and gossip to the dead goes on for a while): one line per message.
	{regexp.MustCompile(`^Failed to send (UDP ping|indirect UDP ping|UDP compound ping|gossip to|indirect ping|ack|nack)\b.*$`), slog.LevelDebug, ""},
	{regexp.MustCompile(`^Failed fallback TCP ping.*$`), slog.LevelDebug, ""},
	{regexp.MustCompile(`^Failed to forward ack.*$`), slog.LevelDebug, ""},
	{regexp.MustCompile(`^Got ping for unexpected node.*$`), slog.LevelDebug, ""},
	// The join loop logs the failure of each attempt, with this error.
	{regexp.MustCompile(`^failed to resolve .*$`), slog.LevelDebug, ""},
	// A node with another gossip key, another wire protocol or another
	// label talks to this one: memberlist repeats these at every attempt
	// and never says what is wrong. The joiner's own join loop logs its
	// refusal, with the cause, once per attempt.
	{regexp.MustCompile(`^(?i:failed to receive|Failed to read remote state): (?i:no installed keys could decrypt the message) (.*)$`), slog.LevelError,
		"cluster: gossip key mismatch: a node at $1 sends gossip sealed with a key this node does not hold (check --gossip-key / --gossip-keys on both)"},
	{regexp.MustCompile(`^(?i:failed to receive|Failed to read remote state): (remote state is encrypted and encryption is not configured|encryption is configured but remote state is not encrypted) (.*)$`), slog.LevelError,
		"cluster: gossip key mismatch: only one of this node and the node at $2 has a gossip key ($1)"},
	{regexp.MustCompile(`^Decrypt packet failed: (.*?) (from=.*)$`), slog.LevelError,
		"cluster: gossip key mismatch: a packet $2 could not be decrypted with this node's keys ($1)"},
	{regexp.MustCompile(`^Failed push/pull merge: .*peer speaks another wire protocol: (.*?) (from=.*)$`), slog.LevelError,
		"cluster: protocol mismatch: refused the node $2: $1"},
	{regexp.MustCompile(`^Push/Pull with (.*) failed: .*peer speaks another wire protocol: (.*)$`), slog.LevelError,
		"cluster: protocol mismatch with $1: $2"},
	{regexp.MustCompile(`^Push/Pull with (.*) failed: (.*(?i:decrypt|encrypt).*)$`), slog.LevelError,
		"cluster: gossip key mismatch with $1: $2"},
	{regexp.MustCompile(`^discarding (stream|packet) with unacceptable label (.*?):? (from=.*)$`), slog.LevelError,
		"cluster: label mismatch: discarded a $1 with label $2 $3 (this node's memberlist label differs)"},
	{regexp.MustCompile(`^Push/Pull with (.*) failed: (.*)$`), slog.LevelInfo,
		"cluster: state exchange with $1 failed: $2"},
	{regexp.MustCompile(`^Binding to public address without encryption!$`), slog.LevelWarn,
		"cluster: gossip listens on a public address without encryption; set --gossip-key"},
	{regexp.MustCompile(`^Was able to connect to (.*) over TCP but UDP probes failed, network may be misconfigured$`), slog.LevelWarn,
		"cluster: $1 answers over TCP but not over UDP: allow UDP on the gossip port"},
	{regexp.MustCompile(`^Conflicting address for (.*)\. Mine: (.*) Theirs: (.*) Old state: .*$`), slog.LevelError,
		"cluster: two nodes call themselves $1 ($2 and $3): give each node its own --node-name"},
}

// translate applies memberlistMessages to one parsed line.
func translate(level slog.Level, msg string) (slog.Level, string) {
	for _, t := range memberlistMessages {
		m := t.re.FindStringSubmatchIndex(msg)
		if m == nil {
			continue
		}
		if t.msg == "" {
			return t.level, msg
		}
		return t.level, string(t.re.ExpandString(nil, t.msg, msg, m))
	}
	return level, msg
}

// ErrorText returns err's message on one line, for a log attribute: the
// errors joined in err (errors.Join, or hashicorp/go-multierror, which
// memberlist's Join returns and prints as a bulleted list over several
// lines) each on its own, separated by "; ", duplicates dropped, and any
// other line break turned into a space.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	var parts []string
	var walk func(e error)
	walk = func(e error) {
		var children []error
		switch x := e.(type) {
		case interface{ WrappedErrors() []error }: // go-multierror
			children = x.WrappedErrors()
		case interface{ Unwrap() []error }:
			// Only a plain join: a message that adds words of its own
			// (fmt.Errorf with several %w) is kept whole.
			var msgs []string
			for _, c := range x.Unwrap() {
				if c != nil {
					msgs = append(msgs, c.Error())
				}
			}
			if e.Error() == strings.Join(msgs, "\n") {
				children = x.Unwrap()
			}
		}
		if len(children) == 0 {
			if t := strings.Join(strings.Fields(e.Error()), " "); t != "" && !slices.Contains(parts, t) {
				parts = append(parts, t)
			}
			return
		}
		for _, c := range children {
			if c != nil {
				walk(c)
			}
		}
	}
	walk(err)
	if len(parts) == 0 {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	return strings.Join(parts, "; ")
}
