package actors

import (
	"math"
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
// milliseconds but never go backwards and move past any reading observed
// from a peer, unless that reading is further ahead of this node's wall
// clock than MaxAhead (a peer with a skewed clock must not drag every clock
// in the cluster into its future). A reading packs milliseconds in the high
// 48 bits and a logical counter in the low 16. It is safe for concurrent use.
type HLC struct {
	mu       sync.Mutex
	clock    Clock
	last     uint64
	maxAhead time.Duration
	refused  uint64 // readings ignored by Observe
}

// DefaultHLCMaxAhead is how far ahead of the local wall clock an observed
// reading may be and still move the HLC.
const DefaultHLCMaxAhead = time.Minute

// NewHLC returns an HLC driven by clock that follows peers at most
// DefaultHLCMaxAhead ahead of it.
func NewHLC(clock Clock) *HLC { return &HLC{clock: clock, maxAhead: DefaultHLCMaxAhead} }

const hlcLogicalBits = 16

// Now returns a reading greater than every reading returned or observed
// before. At the very top of the range it saturates instead of wrapping
// around to zero.
func (h *HLC) Now() uint64 {
	wall := uint64(h.clock.Now().UnixMilli()) << hlcLogicalBits
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case wall > h.last:
		h.last = wall
	case h.last < math.MaxUint64:
		h.last++
	}
	return h.last
}

// Observe moves the clock past a reading seen from a peer. It reports
// false, and leaves the clock alone, when the reading is more than MaxAhead
// ahead of the local wall clock.
func (h *HLC) Observe(remote uint64) bool {
	limit := uint64(h.clock.Now().Add(h.maxAhead).UnixMilli()) << hlcLogicalBits
	h.mu.Lock()
	defer h.mu.Unlock()
	if remote > limit {
		h.refused++
		return false
	}
	if remote > h.last {
		h.last = remote
	}
	return true
}

// Refused returns how many observed readings were too far ahead to follow.
func (h *HLC) Refused() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

// HLCMillis returns the wall-clock milliseconds of an HLC reading.
func HLCMillis(reading uint64) int64 { return int64(reading >> hlcLogicalBits) }
