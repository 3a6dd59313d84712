package simulations

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPhasesFaultsOver: the end of the faults is marked once; FaultsEnd is
// the last lift, and a run without faults has none.
func TestPhasesFaultsOver(t *testing.T) {
	var quiet Phases
	mark := quiet.FaultsOver()
	require.NotNil(t, mark)
	var o Observations
	mark(&o)
	assert.False(t, o.QuietStart.IsZero())
	assert.True(t, o.FaultsEnd.IsZero(), "no fault, no FaultsEnd")
	assert.Nil(t, quiet.FaultsOver(), "the faults end once")

	var p Phases
	p.Fault()
	p.Lifted()
	time.Sleep(time.Millisecond)
	o = Observations{}
	p.FaultsOver()(&o)
	assert.True(t, o.FaultsEnd.Before(o.QuietStart), "the faults end at the last lift")
}

// TestPhasesChurn: the churn starts clients until the faults are over and
// ends the lives that run out before.
func TestPhasesChurn(t *testing.T) {
	var p Phases
	var started, ended atomic.Int32
	p.Churn(func() time.Duration { return time.Millisecond }, func() (time.Duration, func()) {
		started.Add(1)
		return time.Millisecond, func() { ended.Add(1) }
	})
	require.Eventually(t, func() bool { return ended.Load() >= 3 }, 5*time.Second, time.Millisecond)
	require.NotNil(t, p.FaultsOver())
	n := started.Load()
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, n, started.Load(), "no client starts after the churn stopped")
}
