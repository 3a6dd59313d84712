package simulations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecorderLives: lives are recorded per instance, AllAcked follows the
// current life, and Observations is a copy the recorder no longer changes.
func TestRecorderLives(t *testing.T) {
	t0 := time.Now()
	var events []Event
	r := NewRecorder(t0, []string{"n0", "n1"}, func(ev Event) { events = append(events, ev) })
	life := r.LifeStarted("B", "b-1", "n0", t0)
	r.LifeStarted("A", "a-1", "n1", t0)
	assert.Equal(t, []string{"A", "B"}, r.AppNames())
	assert.False(t, r.AllAcked([]string{"b-1"}))
	r.Acked("b-1", life, "n0", t0, t0.Add(time.Millisecond))
	assert.True(t, r.AllAcked([]string{"b-1"}))
	assert.False(t, r.AllAcked([]string{"b-1", "a-1"}))
	r.Renewed("b-1", life, "n1", t0.Add(time.Second))
	r.Event("clients", "two")
	require.Len(t, events, 1)

	o := r.Observations()
	r.Renewed("b-1", life, "n0", t0.Add(2*time.Second))
	r.LifeEnded("b-1", life, t0.Add(3*time.Second), "n0")
	lf := o.Instances["b-1"].Lives[0]
	assert.Equal(t, "n0", lf.AckedBy)
	assert.Equal(t, map[string]time.Time{"n1": t0.Add(time.Second)}, lf.Renewed)
	assert.True(t, lf.End.IsZero())
	assert.Len(t, o.Timeline, 1)
}

// TestRecorderRounds: samples come out sorted by time; the last probe and
// the finished rounds are what was added.
func TestRecorderRounds(t *testing.T) {
	t0 := time.Now()
	r := NewRecorder(t0, []string{"n0"}, nil)
	assert.Nil(t, r.LastProbe())
	r.AddSamples([]Sample{{At: t0.Add(2 * time.Second)}, {At: t0.Add(time.Second)}})
	r.AddProbe(Probe{At: t0})
	r.AddProbe(Probe{At: t0.Add(time.Second)})
	r.RoundDone(t0.Add(time.Second))
	assert.Equal(t, t0.Add(time.Second), r.LastProbe().At)
	assert.True(t, r.SampledSince(t0))
	assert.False(t, r.SampledSince(t0.Add(time.Second)))
	o := r.Observations()
	require.Len(t, o.Samples, 2)
	assert.True(t, o.Samples[0].At.Before(o.Samples[1].At))
}
