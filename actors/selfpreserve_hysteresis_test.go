package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scaleDownSP is self-preservation with the scale-down simulation's timers:
// a 2 s window closed every quarter, clients renewing every second, a
// release after 8 s; 10 clients expected (threshold 17).
func scaleDownSP() *selfPreservation {
	return &selfPreservation{enabled: true, percent: 0.85, expectedInterval: time.Second,
		window: 2 * time.Second, releaseAfter: 8 * time.Second, expected: 10}
}

const quarter = 500 * time.Millisecond

// closeAll closes one quarter window per count, from at, and returns the
// time of the next close.
func closeAll(sp *selfPreservation, at time.Time, counts ...int64) time.Time {
	for _, c := range counts {
		sp.closeWindow(at, c, 0, 0)
		at = at.Add(quarter)
	}
	return at
}

// engageAndRelease engages sp on 14–15 renewals (7 live clients of 10) and
// closes quarters until the release rule fires; the close at which it
// fires reads high, at the threshold (a noisy sum of out-of-step member
// windows). It returns the time of the next close.
func engageAndRelease(t *testing.T, sp *selfPreservation) time.Time {
	t.Helper()
	at := testEpoch
	for i := 0; ; i++ {
		c := int64(14 + i%2)
		if i >= 16 {
			c = 17 // the close at which the release fires reads high
		}
		sp.closeWindow(at, c, 0, 0)
		at = at.Add(quarter)
		if !sp.released.IsZero() {
			return at
		}
		require.True(t, sp.engaged(), "close %d", i)
		require.Less(t, i, 40, "never released")
	}
}

// The release takes the lowest count of the last window, not one high
// close: 14 renewals a window are 7 clients, and the live fleet's 14–15
// stay above the new threshold.
func TestReleaseTakesLowestCountOfWindow(t *testing.T) {
	sp := scaleDownSP()
	at := engageAndRelease(t, sp)
	assert.Equal(t, 7, sp.expected, "lowest of 15, 14, 15, 17 is 14 = 7 clients (17 would make 9, threshold 15)")
	assert.Equal(t, 11, sp.threshold())
	assert.False(t, sp.engaged())
	for i := range 20 {
		at = closeAll(sp, at, int64(14+i%2))
		require.False(t, sp.engaged(), "close %d after the release", i)
	}
}

// Within a recount interval of a release a low close holds: it takes a
// whole window of low closes to engage again, and a close above the
// threshold starts the count again.
func TestNoReengageOnOneLowCloseAfterRelease(t *testing.T) {
	sp := scaleDownSP()
	at := engageAndRelease(t, sp) // expected 7, threshold 11
	at = closeAll(sp, at, 9)      // one noisy low close
	assert.False(t, sp.engaged(), "one low close after a release does not engage")
	assert.True(t, sp.expirationEnabled())
	st := sp.status()
	assert.False(t, st.Engaged)
	assert.True(t, st.ExpirationEnabled)
	assert.Contains(t, st.Reason, "holding")
	at = closeAll(sp, at, 10, 11) // still low, half a window in all
	assert.False(t, sp.engaged())
	at = closeAll(sp, at, 14) // back above: the run starts again
	assert.True(t, sp.lowSince.IsZero())
	at = closeAll(sp, at, 9, 9, 9, 9)
	assert.False(t, sp.engaged(), "low for less than a window (four closes span 1.5 s)")
	closeAll(sp, at, 9)
	assert.True(t, sp.engaged(), "low for a whole window: a real fault engages it again")
	assert.Contains(t, sp.status().Reason, "engaged")
}

// Once a recount interval has passed since the release, the rule is
// Eureka's again: one low close engages at once.
func TestEurekaRuleAfterSettling(t *testing.T) {
	sp := scaleDownSP()
	at := engageAndRelease(t, sp)
	for range 16 { // 8 s of healthy closes
		at = closeAll(sp, at, 15)
	}
	require.False(t, sp.settling(at))
	closeAll(sp, at, 9)
	assert.True(t, sp.engaged())
}

// Without a release there is no hysteresis: the first low close engages,
// as in Eureka.
func TestNoHysteresisWithoutRelease(t *testing.T) {
	sp := scaleDownSP()
	at := closeAll(sp, testEpoch, 20, 20)
	assert.False(t, sp.engaged())
	closeAll(sp, at, 17)
	assert.True(t, sp.engaged())
}

// recent keeps one window of closes, whatever the run's length.
func TestRecentClosesBounded(t *testing.T) {
	sp := scaleDownSP()
	closeAll(sp, testEpoch, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20)
	assert.Len(t, sp.recent, 4, "a 2 s window closed every 0.5 s")
}

// As the count falls through the threshold after deaths it crosses it more
// than once (seed 11 of scale-down: 17, 18, 15 against 17). One close above
// the threshold keeps self-preservation engaged, and its engagement keeps
// its start (the release rule's clock); two in a row release it.
func TestOneHighCloseDoesNotFlap(t *testing.T) {
	sp := scaleDownSP()
	at := closeAll(sp, testEpoch, 20, 20, 17)
	require.True(t, sp.engaged())
	since := sp.engagedSince
	at = closeAll(sp, at, 18)
	assert.True(t, sp.engaged(), "one close above the threshold")
	assert.False(t, sp.expirationEnabled())
	at = closeAll(sp, at, 15)
	assert.True(t, sp.engaged())
	assert.Equal(t, since, sp.engagedSince, "one engagement all along")
	at = closeAll(sp, at, 19)
	assert.True(t, sp.engaged())
	closeAll(sp, at, 19)
	assert.False(t, sp.engaged(), "two closes in a row above the threshold release it")
	assert.True(t, sp.engagedSince.IsZero())
}

// An engagement that ends between two closes (evictions lowered the
// expectation, and with it the threshold, below the count) is over: the
// next close above the new threshold does not bring it back as if it had
// lasted (seed 4 of scale-down).
func TestEngagementEndedByEventsStaysEnded(t *testing.T) {
	sp := scaleDownSP() // expected 10, threshold 17
	at := closeAll(sp, testEpoch, 20, 20, 16)
	require.True(t, sp.engaged())
	sp.onEvent(&Event{Action: ActionDeleted})
	sp.onEvent(&Event{Action: ActionDeleted}) // expected 8, threshold 13
	assert.False(t, sp.engaged(), "16 renewals are above the new threshold")
	closeAll(sp, at, 15)
	assert.False(t, sp.engaged(), "the next close above it does not re-engage")
}
