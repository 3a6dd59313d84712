package view

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// A batch gives the same registry, delta and VIP documents as the same
// events applied one by one, in one new snapshot.
func TestViewApplyBatchEqualsSequential(t *testing.T) {
	var evs []actors.Event
	for i := 0; i < 30; i++ {
		in := testInst(fmt.Sprintf("APP%d", i%4), fmt.Sprintf("i-%d", i%11), actors.StatusUp)
		action := actors.ActionAdded
		if i%7 == 6 {
			action = actors.ActionDeleted
		}
		in.ActionType = action
		evs = append(evs, actors.Event{Action: action, Instance: in, Version: actors.Version{Clock: uint64(i + 1), Node: "n1"}})
	}
	one, _, _ := testView(t, nil)
	for i := range evs {
		one.Apply(&evs[i])
	}
	batch, _, _ := testView(t, nil)
	before := batch.Snapshot().Version()
	batch.ApplyBatch(evs)
	require.Equal(t, before+1, batch.Snapshot().Version(), "one snapshot per batch")

	a, b := one.Snapshot(), batch.Snapshot()
	for f := Format(0); f < NumFormats; f++ {
		assert.Equal(t, string(a.Full(f, false)), string(b.Full(f, false)))
		assert.Equal(t, string(a.VIP("app1", f, false)), string(b.VIP("app1", f, false)))
	}
	assert.Equal(t, a.HashCode(), b.HashCode())
	assert.Equal(t, a.Count(), b.Count())
	assert.Equal(t, a.DeltaLen(), b.DeltaLen())
}
