package actors

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
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
	// leads is, by peer, how far its latest reading was ahead of this
	// node's wall clock (see ObserveFrom).
	leads map[string]peerLead
	// skew is Skew's last result, reused for a second (writes ask for it).
	skew atomic.Pointer[skewReading]
}

// skewReading is a Skew result computed at at (epoch ms, wall clock).
type skewReading struct {
	at int64
	s  ClockSkew
}

// peerLead is a peer's latest fresh reading against this node's wall
// clock: lead ms ahead of it, seen at (epoch ms, this node's clock).
type peerLead struct {
	lead, at int64
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

// ObserveFrom is Observe for a reading made by node, a peer (a record's
// version: the HLC of the node that made the change; "" for none). A
// reading no older than a minute by this node's clock is also kept as that
// peer's latest lead over this node's wall clock, which Skew weighs: a
// record just made elsewhere shows how far the maker's clock is from this
// one's (an older one shows less, never more).
func (h *HLC) ObserveFrom(node string, remote uint64) bool {
	now := h.clock.Now().UnixMilli()
	if lead := HLCMillis(remote) - now; node != "" && lead > -skewFreshness.Milliseconds() {
		h.mu.Lock()
		if h.leads == nil {
			h.leads = map[string]peerLead{}
		}
		h.leads[node] = peerLead{lead: lead, at: now}
		h.mu.Unlock()
	}
	return h.Observe(remote)
}

// skewFreshness is how recent a peer's reading must be to count for Skew
// (by this node's clock), and how long a peer's lead is remembered.
const skewFreshness = time.Minute

// ClockSkew is what Skew found.
type ClockSkew struct {
	// Behind reports that this node's wall clock is behind the clocks of
	// most peers it heard from in the last minute by more than the HLC
	// tolerance: it would stamp its changes in their past.
	Behind bool
	// Peers is how many peers were heard from with fresh readings; Ahead
	// how many of them were ahead by more than the tolerance.
	Peers, Ahead int
	// Lead is the median lead of those peers' clocks over this one's.
	Lead time.Duration
	// Reason says it in plain words.
	Reason string
}

// Skew reports whether this node's clock is behind its peers' by more
// than the HLC tolerance, judged on the fresh readings of the last minute
// (ObserveFrom): behind when more than half of the peers heard from are
// that far ahead. A peer ahead of all the others is outvoted; a node alone
// or only hearing old records never judges itself behind. Under the
// sabotage switch SkewedNodeWrites it never reports Behind.
func (h *HLC) Skew() ClockSkew {
	s, _ := h.CheckSkew()
	return s
}

// CheckSkew is Skew, computed at most once a second, and whether Behind
// changed with this call's computation (so that exactly one caller logs
// the change).
func (h *HLC) CheckSkew() (ClockSkew, bool) {
	now := h.clock.Now().UnixMilli()
	last := h.skew.Load()
	if last != nil && now >= last.at && now-last.at < 1000 {
		return last.s, false
	}
	s := h.skewAt(now)
	if !h.skew.CompareAndSwap(last, &skewReading{at: now, s: s}) {
		return s, false
	}
	return s, last != nil && last.s.Behind != s.Behind || last == nil && s.Behind
}

// skewAt computes Skew at now (epoch ms).
func (h *HLC) skewAt(now int64) ClockSkew {
	tol := h.maxAhead.Milliseconds()
	h.mu.Lock()
	var leads []int64
	for n, p := range h.leads {
		if now-p.at > skewFreshness.Milliseconds() {
			delete(h.leads, n)
			continue
		}
		leads = append(leads, p.lead)
	}
	h.mu.Unlock()
	var s ClockSkew
	s.Peers = len(leads)
	for _, l := range leads {
		if l > tol {
			s.Ahead++
		}
	}
	if len(leads) > 0 {
		slices.Sort(leads)
		s.Lead = time.Duration(leads[len(leads)/2]) * time.Millisecond
	}
	s.Behind = s.Ahead*2 > s.Peers && !sabotage.On(sabotage.SkewedNodeWrites)
	switch {
	case s.Behind:
		s.Reason = fmt.Sprintf("this node's clock is behind %d of the %d peers heard from in the last minute by more than %s (median lead %s): writes are refused until it is set right",
			s.Ahead, s.Peers, h.maxAhead, s.Lead.Round(time.Second))
	case s.Peers == 0:
		s.Reason = "no fresh peer readings: nothing to compare this node's clock with"
	default:
		s.Reason = fmt.Sprintf("this node's clock agrees with %d of the %d peers heard from in the last minute within %s",
			s.Peers-s.Ahead, s.Peers, h.maxAhead)
	}
	return s
}

// Refused returns how many observed readings were too far ahead to follow.
func (h *HLC) Refused() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

// HLCMillis returns the wall-clock milliseconds of an HLC reading.
func HLCMillis(reading uint64) int64 { return int64(reading >> hlcLogicalBits) }

// leaseClock measures lease ages in milliseconds on a clock that does not
// jump when the wall clock is set (BUG-10): a lease's last renewal, its
// installation here and a client's last renewal here are instants on this
// clock, and a lease's age is the difference of two of them. Readings
// start at the wall clock's epoch milliseconds when the registry starts
// and then follow the lease clock, so they read like epoch milliseconds
// while the wall clock is right; they never go on the wire. The wall clock
// keeps the timestamps that do (lastRenewalTimestamp and the others) and
// the HLC.
type leaseClock struct {
	wall, mono Clock
	base       time.Time // mono's reading at the start
	baseMillis int64     // wall's epoch ms at the start
}

// newLeaseClock returns a lease clock that follows mono from now on; a nil
// mono makes wall the lease clock itself (appState tests drive one clock).
func newLeaseClock(wall, mono Clock) *leaseClock {
	c := &leaseClock{wall: wall, mono: mono, baseMillis: wall.Now().UnixMilli()}
	if mono != nil {
		c.base = mono.Now()
	}
	return c
}

// now returns the lease clock's reading (ms). Under the sabotage switch
// LeaseAgesWallClock it is the wall clock's, as before the BUG-10 fix.
func (c *leaseClock) now() int64 {
	if c.mono == nil || sabotage.On(sabotage.LeaseAgesWallClock) {
		return c.wall.Now().UnixMilli()
	}
	return c.baseMillis + c.mono.Now().Sub(c.base).Milliseconds()
}

// fromWall converts wallMillis, an instant by a wall clock (this node's or
// a peer's), to a lease-clock reading: its age by this node's wall clock
// now (wallNow), clamped to [0, maxAge] when maxAge is positive (to [0, ∞)
// otherwise), is taken back from the lease clock's reading now (leaseNow).
// A clock set back makes an instant look younger, never from the future;
// one set forward makes it look at most maxAge old. Under the sabotage
// switch LeaseAgesWallClock it returns wallMillis unchanged.
func (c *leaseClock) fromWall(wallMillis, wallNow, leaseNow, maxAge int64) int64 {
	if c.mono == nil || sabotage.On(sabotage.LeaseAgesWallClock) {
		return wallMillis
	}
	age := max(wallNow-wallMillis, 0)
	if maxAge > 0 {
		age = min(age, maxAge)
	}
	return leaseNow - age
}
