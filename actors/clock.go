package actors

import (
	"sync"
	"time"
)

// Clock tells the time. Tests and simulations inject a fake one.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told to. It is safe for
// concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a ManualClock set to t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// HLC is a hybrid logical clock: readings follow the wall clock in
// milliseconds but never go backwards and always move past any reading
// observed from a peer. A reading packs milliseconds in the high 48 bits and a
// logical counter in the low 16. It is safe for concurrent use.
type HLC struct {
	mu    sync.Mutex
	clock Clock
	last  uint64
}

// NewHLC returns an HLC driven by clock.
func NewHLC(clock Clock) *HLC { return &HLC{clock: clock} }

const hlcLogicalBits = 16

// Now returns a reading greater than every reading returned or observed before.
func (h *HLC) Now() uint64 {
	wall := uint64(h.clock.Now().UnixMilli()) << hlcLogicalBits
	h.mu.Lock()
	defer h.mu.Unlock()
	if wall > h.last {
		h.last = wall
	} else {
		h.last++
	}
	return h.last
}

// Observe moves the clock past a reading seen from a peer.
func (h *HLC) Observe(remote uint64) {
	h.mu.Lock()
	if remote > h.last {
		h.last = remote
	}
	h.mu.Unlock()
}

// HLCMillis returns the wall-clock milliseconds of an HLC reading.
func HLCMillis(reading uint64) int64 { return int64(reading >> hlcLogicalBits) }
