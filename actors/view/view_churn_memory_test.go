package view_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// churnRetainedBound is the heap the view may retain per churned
// register+cancel pair while the pair is in the delta window (the memory goals). A
// pair's cancelled state stays in the delta until it expires (Eureka shows
// it as DELETED): about 490 B for the Spring-shaped instance of
// registerBody, held packed (packed.go, 176 B) in its piece (80 B), with its
// share of the delta group's tree and of its compressed chunks. The
// registration itself, its encodings and the registry's copy of its maps
// must not stay. A whole Instance instead of the packed state (sabotage
// view-delta-unpacked) retained about 1,160 B (810 B when the delta shared
// its maps with the registration, before packing); when the window held every change's state (sabotage
// view-delta-holds-states) a pair retained about 2,500 B.
const churnRetainedBound = 640

// heapInUse returns the live heap after two collections.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// churnRetainedPerPair runs deploy-style churn through a view: a registry of
// live instances (20 per application) takes pairs fresh registrations, each
// followed by the cancel of the oldest instance, all within the delta
// retention (nothing is pruned), with the full document read (JSON plain
// and gzip) and the delta read (JSON gzip, what Java clients ask for) every
// 500 pairs. It returns the
// heap retained per pair, measured after GC, the view, its clock and the
// heap before the churn.
func churnRetainedPerPair(t *testing.T, live, pairs int) (float64, *view.View, *actors.ManualClock, uint64) {
	t.Helper()
	return churnRetained(t, live, pairs, true)
}

// churnRetained is churnRetainedPerPair, with the reads only when reads is
// set.
func churnRetained(t *testing.T, live, pairs int, reads bool) (float64, *view.View, *actors.ManualClock, uint64) {
	t.Helper()
	v, clock, apply := manualView()
	c := newChurner(v, clock, apply, live, pairs)
	read := func() {
		if !reads {
			return
		}
		s := v.Snapshot()
		s.Full(view.FormatJSON, false)
		s.Full(view.FormatJSON, true)
		s.Delta(view.FormatJSON, true)
	}
	read()
	before := heapInUse()
	for j := 0; j < pairs; j++ {
		c.pair()
		if j%500 == 499 {
			read()
		}
	}
	read()
	after := heapInUse()
	runtime.KeepAlive(c)
	s := v.Snapshot()
	require.Equal(t, live, s.Count())
	require.Equal(t, pairs+min(pairs, live), s.DeltaLen(), "every changed instance is still in the delta, once")
	return (float64(after) - float64(before)) / float64(pairs), v, clock, before
}

// churner churns a view as a deploy does: every pair registers a fresh
// instance and cancels the oldest, so the registry keeps its size.
type churner struct {
	clock *actors.ManualClock
	apply func(actors.ActionType, *actors.Instance)
	live  int
	queue []*actors.Instance // the registered instances, oldest first (nil once cancelled)
	pairs int
}

// newChurner loads live instances (20 per application) into v and empties
// its delta, ready for pairs pairs.
func newChurner(v *view.View, clock *actors.ManualClock, apply func(actors.ActionType, *actors.Instance), live, pairs int) *churner {
	c := &churner{clock: clock, apply: apply, live: live, queue: make([]*actors.Instance, 0, live+pairs)}
	for i := 0; i < live; i++ {
		in := decodedInstance(appName(i/20), i)
		apply(actors.ActionAdded, in)
		c.queue = append(c.queue, in)
	}
	v.ClearDelta()
	return c
}

// pair registers the next fresh instance, cancels the oldest (the
// registry deletes a copy of the record, stamped, as the actors do), and
// moves the clock on by a millisecond. It returns the cancelled state.
func (c *churner) pair() *actors.Instance {
	i := c.live + c.pairs
	in := decodedInstance(appName(i%c.live/20), i)
	c.apply(actors.ActionAdded, in)
	c.queue = append(c.queue, in)
	gone := c.queue[c.pairs].Clone()
	c.queue[c.pairs] = nil
	gone.LeaseInfo.EvictionTimestamp = c.clock.Now().UnixMilli()
	c.apply(actors.ActionDeleted, gone)
	c.clock.Advance(time.Millisecond)
	c.pairs++
	return gone
}

// manualView returns a view with the wire encoders on a manual clock, and
// a function that applies a change of action to an instance at the next
// version.
func manualView() (*view.View, *actors.ManualClock, func(actors.ActionType, *actors.Instance)) {
	return manualViewWith(func(*view.Config) {})
}

// manualViewWith is manualView with the configuration changed by edit.
func manualViewWith(edit func(*view.Config)) (*view.View, *actors.ManualClock, func(actors.ActionType, *actors.Instance)) {
	clock := actors.NewManualClock(time.Unix(1754500000, 0))
	cfg := view.DefaultConfig(eureka.Encoders())
	cfg.Clock = clock
	edit(&cfg)
	v := view.New(cfg)
	var ver uint64
	apply := func(action actors.ActionType, in *actors.Instance) {
		in.ActionType = action
		ver++
		v.Apply(&actors.Event{Action: action, Instance: in, Version: actors.Version{Clock: ver, Node: "n1"}})
	}
	return v, clock, apply
}

// Under churn the view retains about one instance state per churned
// instance (its cancelled state, which the delta shows), not one per
// change: the registration that the cancel superseded, and its encodings,
// are collected at once.
func TestChurnRetainsOneStatePerInstance(t *testing.T) {
	const pairs = 6000
	perPair, v, clock, before := churnRetainedPerPair(t, 500, pairs)
	t.Logf("retained %.0f B per churned pair (bound %d)", perPair, churnRetainedBound)
	assert.Less(t, perPair, float64(churnRetainedBound))

	// What is retained goes when the window expires.
	clock.Advance(cfgRetention + time.Minute)
	v.PruneDelta()
	s := v.Snapshot()
	assert.Zero(t, s.DeltaLen())
	s.Delta(view.FormatJSON, true)
	left := (float64(heapInUse()) - float64(before)) / pairs
	t.Logf("left %.0f B per pair after the window expired", left)
	assert.Less(t, left, 100.0)
	runtime.KeepAlive(v)
}

// cfgRetention is DefaultConfig's DeltaRetention.
const cfgRetention = 3 * time.Minute
