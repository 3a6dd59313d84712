package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copiesAfterRecovery starts a registry whose self-preservation recovered
// (released by recovery) at the wall clock's now, then applies a heal's
// transfers: copies of three instances registered before the release (two
// renewed within their lease, one whose copy ran out ten minutes ago) and
// of one registered after it. It returns the expectation once the counts
// are in.
func copiesAfterRecovery(t *testing.T) int {
	t.Helper()
	clock := NewManualClock(testEpoch)
	r := newTestRegistry(t, func(c *Config) { c.Clock = clock })
	released := clock.Now()
	r.spMeasuredBefore.Store(released.UnixMilli())
	r.spMeasuredUntil.Store(released.Add(15 * time.Minute).UnixMilli())
	clock.Advance(time.Second)
	now := clock.Now()
	copyOf := func(id string, registered, renewed time.Time) Record {
		in := regInstance("APP", id, 90)
		in.LeaseInfo.RegistrationTimestamp = registered.UnixMilli()
		in.LeaseInfo.LastRenewalTimestamp = renewed.UnixMilli()
		return Record{App: "APP", ID: id, Instance: in, Version: hlcAt(now, "node-b"), LastRenewal: renewed.UnixMilli()}
	}
	recs := []Record{
		copyOf("live-1", released.Add(-time.Hour), now.Add(-10*time.Second)),
		copyOf("live-2", released.Add(-time.Hour), now.Add(-20*time.Second)),
		copyOf("dead-1", released.Add(-time.Hour), now.Add(-10*time.Minute)),
		copyOf("new-1", now, now),
	}
	st, err := r.ApplyRecords(t.Context(), "APP", recs, false)
	require.NoError(t, err)
	require.Equal(t, len(recs), st.Applied)
	var expected int
	require.Eventually(t, func() bool {
		_ = r.Count() // the counts reach the actor asynchronously
		sp := r.SelfPreservation()
		if sp == nil {
			return false
		}
		expected = sp.Expected
		return r.spAdded.Load() == 0 && r.spSilentAdded.Load() == 0 && expected > 0
	}, 5*time.Second, 10*time.Millisecond, fmt.Sprintf("counts taken (expected %d)", expected))
	return expected
}

// A heal's transfers that arrive after a recovery release do not count the
// clients it measured twice: only the instance registered after it raises
// the expectation (the two that renew are in the rate it adopted, the one
// whose copy ran out is silent).
func TestMeasuredLeasesNotCountedTwice(t *testing.T) {
	assert.Equal(t, 1, copiesAfterRecovery(t))
}
