package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
			sp.recount(tc.count)
			assert.Equal(t, tc.want, sp.expected)
		})
	}
}
