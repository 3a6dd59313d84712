package actors

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lineCounter is a slog handler that keeps the messages at Info and above.
type lineCounter struct {
	mu    sync.Mutex
	lines []string
}

func (h *lineCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *lineCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.lines = append(h.lines, r.Message)
	h.mu.Unlock()
	return nil
}
func (h *lineCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *lineCounter) WithGroup(string) slog.Handler      { return h }

func (h *lineCounter) count(sub string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// A mass expiry logs one line per eviction run, not one per instance.
func TestEvictionLogsOneLinePerRun(t *testing.T) {
	clock := NewManualClock(testEpoch)
	logs := &lineCounter{}
	sink := &recordingSink{}
	r := newTestRegistry(t, func(c *Config) {
		c.Clock = clock
		c.Logger = slog.New(logs)
		c.SelfPreservation = false
		c.RenewalPercentThreshold = 0.01 // cap at 99% of the registry: one run takes all
		c.EvictionInterval = 20 * time.Millisecond
		c.Sinks = []Sink{sink}
	})
	ctx := context.Background()
	const n = 200
	for i := range n {
		require.NoError(t, r.Register(ctx, regInstance(fmt.Sprintf("APP%d", i%10), fmt.Sprintf("i-%d", i), 1), false))
	}
	clock.Advance(10 * time.Second)
	require.Eventually(t, func() bool { return r.Count() == 0 }, waitFor, tick)
	assert.Equal(t, n, sink.count(isEviction))
	runs := logs.count("evicting expired leases")
	assert.GreaterOrEqual(t, runs, 1)
	assert.LessOrEqual(t, runs, 3, "one line per run")
	assert.Zero(t, logs.count("evicted"), "no line per instance at info")
}

// Self-preservation logs each change of its decision once: engaging (warn),
// releasing and the operator's switch (info); the state a node starts in
// and every window that changes nothing log nothing.
func TestSelfPreservationLogsChangesOnce(t *testing.T) {
	logs := &lineCounter{}
	r := newTestRegistry(t, func(c *Config) {
		c.Logger = slog.New(logs)
		c.RenewalWindow = 200 * time.Millisecond
		c.ExpectedClientRenewalInterval = 50 * time.Millisecond // 4 renewals per client per window
		c.ExpectedInitialRenewers = 0
	})
	ctx := context.Background()
	for _, id := range []string{"i-1", "i-2"} {
		require.NoError(t, r.Register(ctx, regInstance("APP", id, 90), false))
	}
	// Nobody renews: 2 clients are expected, so it engages, once.
	require.Eventually(t, func() bool { return r.SelfPreservation().Engaged }, waitFor, tick)
	time.Sleep(3 * 200 * time.Millisecond / 4) // three more window slides
	assert.Equal(t, 1, logs.count("self-preservation engaged"), "%q", logs.lines)
	assert.Zero(t, logs.count("self-preservation released"))

	// Renewals well above the threshold release it, once.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			for _, id := range []string{"i-1", "i-2"} {
				_, _ = r.Renew(ctx, RenewRequest{App: "APP", ID: id})
			}
		}
	}()
	require.Eventually(t, func() bool { return !r.SelfPreservation().Engaged }, waitFor, tick)
	time.Sleep(3 * 200 * time.Millisecond / 4)
	close(stop)
	<-done
	assert.Equal(t, 1, logs.count("self-preservation released"), "%q", logs.lines)
	assert.Equal(t, 1, logs.count("self-preservation engaged"), "%q", logs.lines)

	require.NoError(t, r.SetSelfPreservation(ctx, false))
	assert.Equal(t, 1, logs.count("self-preservation switched off"), "%q", logs.lines)
}
