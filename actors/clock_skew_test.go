package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// behindScenario: this node's clock is 9 minutes behind (more than a
// 10-minute TTL less a 90 s lease) and two peers apply their fresh
// changes here; it returns what Skew then says.
func behindScenario(t *testing.T) ClockSkew {
	peerNow := time.Now()
	clock := NewManualClock(peerNow.Add(-9 * time.Minute))
	r := newTestRegistry(t, func(c *Config) { c.Clock = clock })
	for i, peer := range []string{"node-b", "node-c"} {
		in := regInstance("APP", peer+"-1", 90)
		_, err := r.ApplyRecords(t.Context(), "APP", []Record{{App: "APP", ID: in.ID(), Instance: in,
			Version: hlcAt(peerNow.Add(time.Duration(i)*time.Millisecond), peer), LastRenewal: peerNow.UnixMilli()}}, false)
		require.NoError(t, err)
	}
	return r.HLC().Skew()
}

// A node whose clock is behind most peers' by more than the HLC tolerance
// knows it (and so refuses writes: see httpapi).
func TestClockBehindPeersDetected(t *testing.T) {
	s := behindScenario(t)
	assert.True(t, s.Behind, "%+v", s)
	assert.Equal(t, 2, s.Peers)
	assert.Equal(t, 2, s.Ahead)
	assert.Contains(t, s.Reason, "behind 2 of the 2 peers")
}

// One peer ahead is outvoted by the others; old records say nothing.
func TestClockSkewOutvoted(t *testing.T) {
	clock := NewManualClock(testEpoch)
	h := NewHLC(clock)
	h.ObserveFrom("fast", uint64(testEpoch.Add(time.Hour).UnixMilli())<<hlcLogicalBits)
	h.ObserveFrom("b", uint64(testEpoch.UnixMilli())<<hlcLogicalBits)
	h.ObserveFrom("c", uint64(testEpoch.Add(-time.Second).UnixMilli())<<hlcLogicalBits)
	h.ObserveFrom("old", uint64(testEpoch.Add(-time.Hour).UnixMilli())<<hlcLogicalBits)
	s := h.Skew()
	assert.False(t, s.Behind, "%+v", s)
	assert.Equal(t, 3, s.Peers, "the old record is no reading")
	assert.Equal(t, 1, s.Ahead)

	alone := NewHLC(clock)
	assert.False(t, alone.Skew().Behind, "a node alone never judges itself behind")
}
