package main

// The registry changes a person wants in the log: who registered, who
// cancelled, which status an operator overrode.
//
// Each change a client makes through this node is logged once, at info, by
// this node: one line per register, cancel and status override, as Eureka's
// own server does. That is the right grain because these are rare next to
// renewals (an instance registers when it starts and cancels when it stops;
// renewals, which are not logged, arrive every 30 s), and "did my service
// register, and where?" is the question people ask the log. The copies other
// members receive are logged at debug, so a cluster logs each change once.
// Evictions are not logged here: the evictor writes one line per sweep, and
// each evicted instance at debug.
//
// A mass start or stop (a whole fleet redeployed at once) must not flood the
// log, so the lines are rate limited (a burst of eventLogBurst, then
// eventLogRate a second); the changes over the limit are counted and summed
// up in one line when lines are allowed again, or after eventLogSummaryAfter.

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/heureka/heureka/actors"
)

// Limits of the event log (see the file comment).
const (
	eventLogBurst        = 100
	eventLogRate         = 20 // lines per second once the burst is spent
	eventLogSummaryAfter = 5 * time.Second
)

// eventLog is an actors.Sink that logs registry changes (see the file
// comment). It is safe for concurrent use and never blocks on anything but
// the log's writer.
type eventLog struct {
	log   *slog.Logger
	limit *rate.Limiter

	mu      sync.Mutex
	skipped map[string]int // message → changes not logged since the last summary
	timer   *time.Timer    // pending summary; nil when none
}

// newEventLog returns an eventLog writing to log.
func newEventLog(log *slog.Logger) *eventLog {
	return &eventLog{
		log:     log.With("component", "registry"),
		limit:   rate.NewLimiter(eventLogRate, eventLogBurst),
		skipped: map[string]int{},
	}
}

// describe returns the line for ev: its message, level and attributes; ""
// for changes not logged here.
func describe(ev *actors.Event) (string, slog.Level, []any) {
	in := ev.Instance
	var msg string
	attrs := []any{"app", in.App, "id", in.InstanceID}
	switch ev.Cause {
	case actors.CauseRegister:
		msg = "registered"
		if !ev.NewLease {
			msg = "registered again"
		}
		attrs = append(attrs, "status", string(in.Status), "host", in.HostName)
	case actors.CauseCancel:
		msg = "cancelled"
	case actors.CauseStatusUpdate:
		msg = "status override set"
		attrs = append(attrs, "status", string(in.Status))
	case actors.CauseDeleteOverride:
		msg = "status override removed"
		attrs = append(attrs, "status", string(in.Status))
	case actors.CauseMetadata:
		return "metadata updated", slog.LevelDebug, attrs
	default: // evictions, refused stale copies: logged where they happen
		return "", 0, nil
	}
	if ev.Replicated {
		return msg, slog.LevelDebug, append(attrs, "from", ev.Version.Node)
	}
	return msg, slog.LevelInfo, attrs
}

// Apply logs ev (actors.Sink).
func (e *eventLog) Apply(ev *actors.Event) {
	msg, level, attrs := describe(ev)
	ctx := context.Background()
	if msg == "" || !e.log.Enabled(ctx, level) {
		return
	}
	if level >= slog.LevelInfo {
		if !e.limit.Allow() {
			e.skip(msg)
			return
		}
		e.Flush()
	}
	e.log.Log(ctx, level, msg, attrs...)
}

// skip counts a change over the limit and makes sure a summary follows.
func (e *eventLog) skip(msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.skipped[msg]++
	if e.timer == nil {
		e.timer = time.AfterFunc(eventLogSummaryAfter, e.Flush)
	}
}

// Flush logs the summary of the changes not logged one by one, if any.
func (e *eventLog) Flush() {
	e.mu.Lock()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if len(e.skipped) == 0 {
		e.mu.Unlock()
		return
	}
	total := 0
	attrs := make([]any, 0, 2*len(e.skipped)+2)
	for _, msg := range slices.Sorted(maps.Keys(e.skipped)) {
		n := e.skipped[msg]
		total += n
		attrs = append(attrs, strings.ReplaceAll(msg, " ", "_"), n)
	}
	clear(e.skipped)
	e.mu.Unlock()
	e.log.Info(fmt.Sprintf("registry changes not logged one by one (over %d lines a second)", eventLogRate),
		append([]any{"changes", total}, attrs...)...)
}
