//go:build sabotage

package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With lease-ages-wall-clock on, the checks of
// TestLeaseExpiresOnTimeAfterWallClockSetBack fail as BUG-10 did: after the
// wall clock is set back, the lease of a client silent for more than a
// lease looks fresh, and a peer's eviction of it is overruled (run with
// -tags sabotage).
func TestSabotageLeaseAgesWallClockSetBack(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.LeaseAgesWallClock))
	defer func() { require.NoError(t, sabotage.Set()) }()

	r := wallBackScenario(t)
	assert.False(t, expiredI1(t, r), "the dead lease looks fresh by the wall clock set back")
	assert.True(t, evictFromPeer(t, r), "the eviction of the dead lease is overruled")
}

// With lease-ages-wall-clock on, the check of
// TestRenewingLeaseSurvivesWallClockSetForward fails: a wall clock set
// forward expires the lease a client renewed 5 s ago.
func TestSabotageLeaseAgesWallClockSetForward(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.LeaseAgesWallClock))
	defer func() { require.NoError(t, sabotage.Set()) }()

	r, wall, mono := skewFixture(t)
	elapse(20*time.Second, wall, mono)
	renewI1(t, r)
	wall.Advance(3 * time.Minute)
	elapse(5*time.Second, wall, mono)
	assert.True(t, expiredI1(t, r), "the renewing lease looks expired by the wall clock set forward")
}
