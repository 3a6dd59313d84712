package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/heureka/heureka/actors"
)

func testEvent(cause actors.Cause, id string, replicated, newLease bool) *actors.Event {
	action := actors.ActionAdded
	if cause == actors.CauseCancel || cause == actors.CauseEvict {
		action = actors.ActionDeleted
	}
	return &actors.Event{Action: action, Cause: cause, Replicated: replicated, NewLease: newLease,
		Version:  actors.Version{Clock: 1, Node: "peer"},
		Instance: &actors.Instance{App: "ORDERS", InstanceID: id, HostName: id + ".example", Status: actors.StatusUp}}
}

// TestEventLogLines: each change a client made here is one info line;
// copies from peers, metadata and evictions are not logged at info.
func TestEventLogLines(t *testing.T) {
	var buf bytes.Buffer
	e := newEventLog(slog.New(slog.NewTextHandler(&buf, nil)))
	e.Apply(testEvent(actors.CauseRegister, "o-1", false, true))
	e.Apply(testEvent(actors.CauseRegister, "o-1", false, false))
	e.Apply(testEvent(actors.CauseStatusUpdate, "o-1", false, false))
	e.Apply(testEvent(actors.CauseDeleteOverride, "o-1", false, false))
	e.Apply(testEvent(actors.CauseCancel, "o-1", false, false))
	e.Apply(testEvent(actors.CauseRegister, "o-2", true, true)) // a peer's copy
	e.Apply(testEvent(actors.CauseMetadata, "o-1", false, false))
	e.Apply(testEvent(actors.CauseEvict, "o-3", false, false))
	e.Apply(testEvent(actors.CauseRefuseStale, "o-4", false, false))
	e.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=INFO msg=registered component=registry app=ORDERS id=o-1 status=UP host=o-1.example`,
		`level=INFO msg="registered again" component=registry app=ORDERS id=o-1 status=UP host=o-1.example`,
		`level=INFO msg="status override set" component=registry app=ORDERS id=o-1 status=UP`,
		`level=INFO msg="status override removed" component=registry app=ORDERS id=o-1 status=UP`,
		`level=INFO msg=cancelled component=registry app=ORDERS id=o-1`,
	}
	if assert.Len(t, lines, len(want), "%s", buf.String()) {
		for i, w := range want {
			assert.True(t, strings.HasSuffix(lines[i], w), "line %d: %q, want suffix %q", i, lines[i], w)
		}
	}

	buf.Reset()
	e = newEventLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	e.Apply(testEvent(actors.CauseRegister, "o-2", true, true))
	assert.Contains(t, buf.String(), `level=DEBUG msg=registered component=registry app=ORDERS id=o-2 status=UP host=o-2.example from=peer`)
}

// TestEventLogRateLimit: a mass registration logs the burst one by one and
// the rest in one summary line.
func TestEventLogRateLimit(t *testing.T) {
	var buf bytes.Buffer
	e := newEventLog(slog.New(slog.NewTextHandler(&buf, nil)))
	const n = 10 * eventLogBurst
	for i := range n {
		e.Apply(testEvent(actors.CauseRegister, "o", false, true))
		if i%2 == 1 {
			e.Apply(testEvent(actors.CauseCancel, "o", false, false))
		}
	}
	e.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	assert.GreaterOrEqual(t, len(lines), eventLogBurst+1)
	assert.Less(t, len(lines), eventLogBurst+eventLogRate+10, "the rest is summed up, not logged")
	last := lines[len(lines)-1]
	assert.Contains(t, last, `msg="registry changes not logged one by one (over 20 lines a second)"`)
	assert.Regexp(t, `changes=\d+ cancelled=\d+ registered=\d+$`, last)
	e.Flush()
	assert.Equal(t, len(lines), strings.Count(buf.String(), "\n"), "nothing left to sum up")
}
