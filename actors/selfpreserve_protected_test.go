package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closes runs n window closes of renews each on sp, a quarter window apart
// from *now.
func closes(sp *selfPreservation, now *time.Time, n int, renews int64) {
	for range n {
		*now = now.Add(sp.window / windowQuarters)
		sp.closeWindow(*now, renews, 0, 0)
	}
}

// engagedWithDeadExpected is a core whose expectation counts dead clients
// waiting for eviction, as under churn: 52 expected and held, 46 renew
// (92 a window, above the threshold of 88). A fault silences 10 of them
// (72: engaged); while it lasts 4 more die silently, and at the heal the
// 42 that live renew again (84 a window).
func engagedWithDeadExpected(t *testing.T) *selfPreservation {
	t.Helper()
	sp := &selfPreservation{enabled: true, percent: 0.85, expectedInterval: prodRenew, window: prodWindow,
		releaseAfter: prodRecount, expected: 52, held: 52}
	now := testEpoch
	closes(sp, &now, 8, 92)
	require.True(t, sp.expirationEnabled(), sp.reason())
	closes(sp, &now, 4, 72)
	require.True(t, sp.engaged(), sp.reason())
	closes(sp, &now, 4, 84)
	return sp
}

// An engagement protects the fleet that renewed in the window before it,
// not the expectation, which also counts the dead leases waiting for
// eviction: the 42 clients left after the fault send more than 85% of what
// the 46 that renewed before it sent, so it recovers (against the
// expectation of 52 they never would, and only the recount would release).
func TestRecoveryProtectsTheFleetThatRenewed(t *testing.T) {
	sp := engagedWithDeadExpected(t)
	assert.True(t, sp.expirationEnabled(), sp.reason())
	assert.Equal(t, 42, sp.expected, "the clients that renew are expected")
	assert.Equal(t, 10, sp.silent, "the dead leases are given up on")
}

// faultThenUnheard is engagedWithDeadExpected's core up to the fault, then
// four closes at the level of the 42 clients that live while one member
// stays unheard (its reports do not come).
func faultThenUnheard(t *testing.T) (*selfPreservation, *time.Time) {
	t.Helper()
	sp := &selfPreservation{enabled: true, percent: 0.85, expectedInterval: prodRenew, window: prodWindow,
		releaseAfter: prodRecount, expected: 52, held: 52}
	now := testEpoch
	closes(sp, &now, 8, 92)
	closes(sp, &now, 4, 72)
	require.True(t, sp.engaged(), sp.reason())
	sp.unheard = 1
	closes(sp, &now, 4, 84)
	return sp, &now
}

// Recovery waits while an alive member is unheard: the count may climb
// over the protected fleet's threshold on the members still heard while
// that member's clients renew where no renewal reaches this node.
func TestRecoveryWaitsForUnheardMembers(t *testing.T) {
	sp, now := faultThenUnheard(t)
	assert.True(t, sp.engaged(), "a member is unheard: %s", sp.reason())
	assert.Contains(t, sp.reason(), "1 alive member(s) unheard")
	sp.unheard = 0
	closes(sp, now, 2, 84)
	assert.True(t, sp.expirationEnabled(), "every member heard: %s", sp.reason())
}

// A window too short for the expected renewal interval rounds the threshold
// down to 0, which keeps every expired lease whatever the count (Eureka's
// rule): the reason says so and names the two settings, instead of calling
// 31 renewals "at or below the threshold of 0".
func TestZeroThresholdReasonNamesTheSettings(t *testing.T) {
	sp := &selfPreservation{enabled: true, percent: 0.85, expectedInterval: prodRenew, window: 500 * time.Millisecond,
		releaseAfter: prodRecount, expected: 36, held: 36}
	now := testEpoch
	closes(sp, &now, 8, 31)
	require.Zero(t, sp.threshold())
	assert.True(t, sp.engaged(), sp.reason())
	assert.Contains(t, sp.reason(), "the threshold is 0")
	assert.Contains(t, sp.reason(), "--renewal-window")
	assert.NotContains(t, sp.reason(), "at or below the threshold of 0")
}
