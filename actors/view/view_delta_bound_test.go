package view_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

// The estimate that DeltaMaxBytes bounds follows the heap: under churn
// with the delta read gzipped in one format (what Java clients ask for) it
// is within a quarter of what the view retains per churned pair, and with
// no reads it is more than the view retains, so that the bound holds.
func TestDeltaHeldBytesEstimate(t *testing.T) {
	const pairs = 6000
	for _, reads := range []bool{true, false} {
		perPair, v, _, _ := churnRetained(t, 500, pairs, reads)
		est := float64(v.Snapshot().DeltaHeldBytes()) / pairs
		t.Logf("reads %v: retained %.0f B per churned pair, estimated %.0f B", reads, perPair, est)
		if reads {
			assert.InDelta(t, 1, est/perPair, 0.25, "estimate ÷ retained")
		} else {
			assert.Greater(t, est, perPair)
		}
	}
}

// boundedChurn churns pairs through a view bounded to limit bytes, with
// the clock at 1 ms per pair (a tick of the window is 1,000 pairs) and
// PruneDelta, what Run does when a write passes the bound, after every
// 1,000 pairs. After each pruning it checks the bound: the delta holds no
// more than limit, and no less than needed (3/4 of it: pruning stops at
// 7/8, a tick's worth below at most). It returns the view and the
// instances it cancelled, in order.
func boundedChurn(t *testing.T, limit int64, pairs int) (*view.View, []*actors.Instance, bool) {
	t.Helper()
	v, clock, apply := manualViewWith(func(c *view.Config) { c.DeltaMaxBytes = limit })
	c := newChurner(v, clock, apply, 500, pairs)
	within := true
	var gone []*actors.Instance
	for j := 0; j < pairs; j++ {
		gone = append(gone, c.pair())
		if j%1000 == 999 {
			v.PruneDelta()
			held := v.Snapshot().DeltaHeldBytes()
			if held > limit {
				within = false
			}
			assert.GreaterOrEqual(t, held, min(limit*3/4, int64(j)*300), "pruning dropped more than the bound needs, after %d pairs", j+1)
		}
	}
	return v, gone, within
}

// The delta holds at most DeltaMaxBytes after pruning: under churn the
// oldest changes leave before the retention, the newest stay, and the
// registry keeps its instances.
func TestDeltaStaysWithinItsMemoryBound(t *testing.T) {
	const limit = 4 << 20
	v, gone, within := boundedChurn(t, limit, 30_000)
	assert.True(t, within, "the delta held more than its bound after pruning")
	s := v.Snapshot()
	t.Logf("delta: %d instances, %d B held (bound %d)", s.DeltaLen(), s.DeltaHeldBytes(), limit)
	assert.Less(t, s.DeltaLen(), 30_000)
	inDelta := deltaIDs(t, s)
	assert.Contains(t, inDelta, gone[len(gone)-1].InstanceID, "the newest cancel is in the delta")
	assert.NotContains(t, inDelta, gone[0].InstanceID, "the oldest cancel left early")
	assert.Equal(t, 500, s.Count())
}

// deltaIDs returns the ids of the instances the snapshot's delta shows,
// read from its JSON document.
func deltaIDs(t *testing.T, s *view.Snapshot) map[string]bool {
	t.Helper()
	var doc struct {
		Applications struct {
			Application []struct {
				Instance []struct {
					InstanceID string `json:"instanceId"`
				} `json:"instance"`
			} `json:"application"`
		} `json:"applications"`
	}
	require.NoError(t, json.Unmarshal(s.Delta(view.FormatJSON, false), &doc))
	ids := map[string]bool{}
	for _, a := range doc.Applications.Application {
		for _, in := range a.Instance {
			ids[in.InstanceID] = true
		}
	}
	require.NotEmpty(t, ids)
	return ids
}

// A write that takes the delta past its bound wakes Run, which prunes it
// without waiting for the retention interval.
func TestRunPrunesWhenTheDeltaPassesItsBound(t *testing.T) {
	const limit = 1 << 20
	v, clock, apply := manualViewWith(func(c *view.Config) {
		c.DeltaMaxBytes = limit
		c.DeltaRetentionInterval = time.Hour // only the bound prunes
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); v.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for i := 0; v.Snapshot().DeltaHeldBytes() <= limit; i++ {
		in := decodedInstance(appName(i%25), i)
		apply(actors.ActionAdded, in)
		g := in.Clone()
		apply(actors.ActionDeleted, g)
		clock.Advance(time.Millisecond)
	}
	require.Eventually(t, func() bool { return v.Snapshot().DeltaHeldBytes() <= limit },
		10*time.Second, time.Millisecond, "Run pruned the delta past its bound")
}

// A bound smaller than one change empties the delta, the change of the
// current millisecond too: the delta never holds more than the bound for
// longer than it takes Run to prune (clients see the gap in the hashcode).
func TestTinyBoundEmptiesTheDelta(t *testing.T) {
	v, _, apply := manualViewWith(func(c *view.Config) { c.DeltaMaxBytes = 1 })
	in := decodedInstance(appName(0), 0)
	apply(actors.ActionAdded, in)
	require.Equal(t, 1, v.Snapshot().DeltaLen())
	v.PruneDelta() // at the same millisecond as the change, as Run does at once
	assert.Zero(t, v.Snapshot().DeltaLen())
	assert.Zero(t, v.Snapshot().DeltaHeldBytes())
	assert.Equal(t, 1, v.Snapshot().Count(), "the registry keeps the instance")
}
