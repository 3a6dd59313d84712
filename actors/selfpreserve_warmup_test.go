package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// warmingSP is the self-preservation core of a node of a cluster that has
// just started at t0, with production timers, expecting 10 clients.
func warmingSP(t0 time.Time) *selfPreservation {
	return &selfPreservation{enabled: true, percent: 0.85, expectedInterval: 30 * time.Second, window: time.Minute,
		releaseAfter: 15 * time.Minute, expected: 10, warming: true, warmUntil: t0.Add(time.Minute)}
}

// A node of a cluster that has just (re)started judges nothing on its first
// window: its own count covers part of it and its peers' reports have not
// come, so 0 renewals "across 1 member" is no collapse. After one window the
// same close engages as usual.
func TestSelfPreservationWarmsUpOneWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	sp := warmingSP(t0)
	for q := 1; q < 4; q++ {
		sp.closeWindow(t0.Add(time.Duration(q)*15*time.Second), 0, 0, 0)
		assert.False(t, sp.engaged(), "close %d of the first window", q)
		assert.True(t, sp.expirationEnabled())
		assert.Contains(t, sp.reason(), "warming up")
	}
	sp.closeWindow(t0.Add(time.Minute), 0, 0, 0)
	assert.True(t, sp.engaged(), "a whole window of nothing is a collapse")
	assert.Contains(t, sp.reason(), "collapse")
}

// A single node (no peers) starts engaged, as before: it protects what it
// holds until its clients have had time to renew.
func TestSelfPreservationSingleNodeStartsEngaged(t *testing.T) {
	sp := warmingSP(time.Unix(1_700_000_000, 0))
	sp.warming = false
	assert.True(t, sp.engaged())
}
