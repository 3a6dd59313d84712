package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eurekaSP returns a selfPreservation with Eureka's defaults (one-minute
// window, 30 s expected client interval, 85%).
func eurekaSP(enabled bool, expected int) *selfPreservation {
	return &selfPreservation{enabled: enabled, percent: 0.85, expectedInterval: 30 * time.Second,
		window: time.Minute, expected: expected}
}

// Spec §4.10: threshold = int(expected × (60 / 30) × 0.85), truncated.
func TestSelfPreservationThreshold(t *testing.T) {
	tests := []struct {
		expected, want int
	}{
		{0, 0}, {1, 1}, {2, 3}, {3, 5}, {10, 17}, {20, 34}, {100, 170},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, eurekaSP(true, tc.expected).threshold(), "expected=%d", tc.expected)
	}

	// A shrunken window keeps the same arithmetic: renewals per window.
	short := &selfPreservation{enabled: true, percent: 0.85, expectedInterval: 100 * time.Millisecond,
		window: 100 * time.Millisecond, expected: 20}
	assert.Equal(t, 17, short.threshold())
	short.window = 50 * time.Millisecond
	assert.Equal(t, 8, short.threshold(), "int(20 × 0.5 × 0.85) = int(8.5)")
}

func TestSelfPreservationExpirationEnabled(t *testing.T) {
	tests := []struct {
		name     string
		enabled  bool
		expected int
		renews   int64
		want     bool
	}{
		{"disabled, nothing renews", false, 10, 0, true},
		{"disabled, no expectation", false, 0, 0, true},
		{"threshold 0 never expires", true, 0, 1000, false},
		{"below threshold", true, 10, 16, false},
		{"at threshold", true, 10, 17, false},
		{"above threshold", true, 10, 18, true},
		{"one client, one renewal", true, 1, 1, false},
		{"one client, two renewals", true, 1, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := eurekaSP(tc.enabled, tc.expected)
			sp.renewsLastWindow = tc.renews
			assert.Equal(t, tc.want, sp.expirationEnabled())
			st := sp.status()
			assert.Equal(t, tc.want, st.ExpirationEnabled)
			assert.Equal(t, tc.enabled, st.Enabled)
			assert.Equal(t, tc.expected, st.Expected)
			assert.Equal(t, sp.threshold(), st.Threshold)
			assert.Equal(t, tc.renews, st.RenewsLastWindow)
			assert.Equal(t, time.Minute, st.Window)
		})
	}
}

func TestSelfPreservationOnEvent(t *testing.T) {
	sp := eurekaSP(true, 0)
	added := &Event{Action: ActionAdded, NewLease: true}
	reRegistered := &Event{Action: ActionAdded}
	modified := &Event{Action: ActionModified}
	deleted := &Event{Action: ActionDeleted}

	sp.onEvent(added)
	assert.Equal(t, 1, sp.expected, "counts from 0 (deliberate difference from Eureka)")
	sp.onEvent(added)
	sp.onEvent(reRegistered)
	sp.onEvent(modified)
	assert.Equal(t, 2, sp.expected, "only new leases count")
	sp.onEvent(deleted)
	sp.onEvent(deleted)
	assert.Equal(t, 0, sp.expected)
	sp.onEvent(deleted)
	assert.Equal(t, 0, sp.expected, "never below 0")
}

// Spec §4.10: the recount adopts the count only when it is above 85% of the
// expectation, or when self-preservation is off.
func TestSelfPreservationRecount(t *testing.T) {
	tests := []struct {
		name            string
		enabled         bool
		expected, count int
		want            int
	}{
		{"raise", true, 10, 15, 15},
		{"small drop adopted", true, 10, 9, 9},
		{"drop to exactly 85% refused", true, 20, 17, 20},
		{"big drop refused", true, 10, 2, 10},
		{"to zero refused", true, 10, 0, 10},
		{"from zero", true, 0, 3, 3},
		{"zero stays zero", true, 0, 0, 0},
		{"disabled adopts a drop", false, 10, 2, 2},
		{"disabled adopts zero", false, 10, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := eurekaSP(tc.enabled, tc.expected)
			sp.recount(tc.count, testEpoch)
			assert.Equal(t, tc.want, sp.expected)
		})
	}
}

// Cluster-wide windows: the peers' counts add to the local one, and
// engagement is dated.
func TestSelfPreservationCloseWindow(t *testing.T) {
	sp := eurekaSP(true, 10) // threshold 17 per minute
	sp.releaseAfter = 15 * time.Minute
	t0 := testEpoch
	sp.closeWindow(t0, 5, 15, 2)
	assert.Equal(t, int64(20), sp.renewsLastWindow)
	assert.False(t, sp.engaged(), "5 here + 15 on two peers is above 17")
	st := sp.status()
	assert.Equal(t, 3, st.Members)
	assert.Contains(t, st.Reason, "not engaged")

	sp.closeWindow(t0.Add(time.Minute), 5, 0, 0) // the peers are cut off
	assert.True(t, sp.engaged())
	assert.Equal(t, t0.Add(time.Minute), sp.engagedSince)
	assert.Contains(t, sp.status().Reason, "engaged: 5 renewals")

	sp.closeWindow(t0.Add(2*time.Minute), 5, 15, 2) // back
	assert.True(t, sp.engaged(), "one close above the threshold is not enough to let go")
	assert.Contains(t, sp.status().Reason, "for one close only")
	sp.closeWindow(t0.Add(3*time.Minute), 5, 15, 2)
	assert.False(t, sp.engaged(), "releases on the second close above the threshold")
	assert.True(t, sp.engagedSince.IsZero())
}

// The release rule: engaged for a whole recount interval, the measured rate
// becomes the expectation, so a scale-down never sticks (Eureka #1267).
func TestSelfPreservationReleasesAfterRecountInterval(t *testing.T) {
	sp := eurekaSP(true, 100) // 200 renewals a minute expected, threshold 170
	sp.releaseAfter = 15 * time.Minute
	t0 := testEpoch
	for m := 0; m < 15; m++ {
		sp.closeWindow(t0.Add(time.Duration(m)*time.Minute), 140, 0, 0) // 30 of 100 died silently
		require.True(t, sp.engaged(), "minute %d", m)
		// Eureka's own recount cannot let go: the dead are still counted.
		sp.recount(100, t0.Add(time.Duration(m)*time.Minute))
	}
	sp.closeWindow(t0.Add(15*time.Minute), 140, 0, 0)
	assert.False(t, sp.engaged(), "released one recount interval after engaging")
	assert.Equal(t, 70, sp.expected, "140 renewals a minute = 70 clients")
	assert.Contains(t, sp.status().Reason, "released")
	// A recount right after the release, while the registry still holds
	// the 30 dead, must not restore the expectation (BUG-5).
	sp.recount(100, t0.Add(15*time.Minute+time.Second))
	assert.Equal(t, 70, sp.expected, "no recount within an interval of the release")
	sp.closeWindow(t0.Add(15*time.Minute+15*time.Second), 140, 0, 0)
	assert.False(t, sp.engaged())
	// The dead are evicted: each eviction lowers the expectation; the live
	// 70 stay above the threshold of the rest.
	for range 30 {
		sp.onEvent(&Event{Action: ActionDeleted})
	}
	sp.closeWindow(t0.Add(16*time.Minute), 140, 0, 0)
	assert.False(t, sp.engaged())
	sp.recount(70, t0.Add(30*time.Minute))
	assert.Equal(t, 70, sp.expected, "the next recount brings the expectation back to the live fleet")
}

// Switched off at run time, it never engages; switched on, it recounts.
func TestSelfPreservationNotEngagedWhenOff(t *testing.T) {
	sp := eurekaSP(false, 10)
	sp.closeWindow(testEpoch, 0, 0, 0)
	assert.False(t, sp.engaged())
	assert.True(t, sp.expirationEnabled())
	assert.Contains(t, sp.status().Reason, "off")
}
