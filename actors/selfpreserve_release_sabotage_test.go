//go:build sabotage

package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With release-on-collapse on, the release rule adopts the collapsed rate
// of a total outage longer than the recount: the expectation becomes 0,
// the threshold 0, and when 90% of the clients return expiration stays off
// ("nothing to protect"), the silent tenth listed (the checks of
// TestReleaseNeverAdoptsCollapse fail).
func TestSabotageReleaseOnCollapse(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ReleaseOnCollapse))
	defer func() { require.NoError(t, sabotage.Set()) }()

	f, _ := outageThenReturn(t, prodRecount+time.Minute, 10)
	assert.Equal(t, 0, f.sp.expected, "released to zero")
	assert.Contains(t, f.sp.reason(), "nothing to protect")
	assert.True(t, f.run(2*prodWindow+prodEviction).IsZero(), "expiration stays off")
	assert.Equal(t, 10, f.dead(), "the silent tenth is still listed")
}

// The same on a registry: the silent leases outlive the clients' return.
func TestSabotageRegistryReleaseOnCollapse(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ReleaseOnCollapse))
	defer func() { require.NoError(t, sabotage.Set()) }()

	r, keys := outageRegistry(t)
	stop := renewLoop(t, r, keys[2:], 333*time.Millisecond)
	defer stop()
	assert.Never(t, func() bool { return !exists(t, r, keys[0]) || !exists(t, r, keys[1]) },
		1500*time.Millisecond, 50*time.Millisecond, "the silent leases stay")
}

// With release-evictions-lower-expectation on, evicting the silent 70%
// after the release drives the expectation (30, the live fleet) to 0 and
// eviction stops with silent leases listed (the check of
// TestReleaseAfterRecountOnMassFailure fails).
func TestSabotageReleaseEvictionsLowerExpectation(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ReleaseEvictionsLowerExpectation))
	defer func() { require.NoError(t, sabotage.Set()) }()

	f := newFleet(100)
	f.run(5 * time.Minute)
	for i := range 70 {
		f.renewing[i] = false
	}
	f.run(prodRecount + 4*prodWindow + 8*prodEviction)
	assert.Positive(t, f.dead(), "silent leases still listed")
}
