package simulations

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// feed plays two runs through p: one passes, one fails.
func feed(p *Progress) {
	p.Started("partition-heal", 1)
	p.Started("partition-heal", 2)
	p.Event("partition-heal", 1, Event{At: time.Second, Kind: "partition", Detail: "{n0} | {n1,n2}"})
	p.Event("partition-heal", 2, Event{At: time.Second, Kind: "partition", Detail: "{n0} | {n1,n2}"})
	p.Event("partition-heal", 1, Event{At: 2 * time.Second, Kind: "heal", Detail: "all links restored"})
	p.Finished(&Result{Scenario: "partition-heal", Seed: 1, Pass: true, Wall: 20 * time.Second,
		Verdicts: []Verdict{{Invariant: InvConvergence, Pass: true}}})
	p.Finished(&Result{Scenario: "partition-heal", Seed: 2, Pass: false, Wall: 21 * time.Second,
		Verdicts: []Verdict{{Invariant: InvConvergence, Pass: false}}})
}

func TestProgressNotTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 2) // a buffer is no terminal
	feed(p)
	p.Close()
	out := buf.String()
	assert.NotContains(t, out, "\r")
	assert.NotContains(t, out, "\x1b")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2, "one line per finished run, nothing per event:\n%s", out)
	assert.Contains(t, lines[0], "[1/2] partition-heal")
	assert.Contains(t, lines[0], "seed 1")
	assert.Contains(t, lines[0], "1 passed, 0 failed")
	assert.Contains(t, lines[1], "[2/2] partition-heal")
	assert.Contains(t, lines[1], "seed 2")
	assert.Contains(t, lines[1], "1 passed, 1 failed")
}

func TestProgressTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgressMode(&buf, 2, true)
	feed(p)
	p.Close()
	out := buf.String()
	// Every update rewrites the status line in place.
	updates := strings.Count(out, "\r\x1b[K")
	assert.GreaterOrEqual(t, updates, 7, out)
	assert.Contains(t, out, "partition-heal#1 +")
	assert.Contains(t, out, " heal")
	assert.Contains(t, out, "0/2 done, 0 passed, 0 failed")
	assert.Contains(t, out, "2/2 done, 1 passed, 1 failed")
	// Only the failed run gets a line of its own; the status line ends
	// with a newline at Close.
	assert.Equal(t, 2, strings.Count(out, "\n"), out)
	assert.Contains(t, out, "[2/2] partition-heal           seed 2")
	assert.NotContains(t, out, "[1/2]")
	assert.True(t, strings.HasSuffix(out, "\n"))
}

func TestProgressTerminalNarrow(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgressMode(&buf, 1, true)
	p.width = 40
	p.Started("a-scenario-with-a-long-name", 12345)
	p.Close()
	for _, l := range strings.Split(buf.String(), "\r\x1b[K") {
		assert.LessOrEqual(t, len([]rune(strings.TrimSpace(l))), 39, l)
	}
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, IsTerminal(&bytes.Buffer{}))
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, IsTerminal(f), "a file")
}
