package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// churnLife is how long a churn client of partitionUnderChurn lives.
const churnLife = 2 * time.Minute

// partitionUnderChurn drives the plain core with production timers through
// a fault under churn: 100 steady clients, and a new client every 2 s that
// lives two minutes, then cancels (three in four) or dies without a word
// (one in four). After five minutes of that, the renewals of 40 steady
// clients stop reaching the registry for split (a registry partition: they
// renew on the other side, whose reports do not come); churn goes on. At
// the heal their renewals count again. It returns the fleet at the heal
// and a func that goes on with the churn for d (joining, cancelling and
// killing on schedule).
func partitionUnderChurn(t *testing.T, split time.Duration) (*fleet, func(d time.Duration)) {
	t.Helper()
	f := newFleet(100)
	var ends []time.Time // ends[i-100]: when churn client i stops
	step := func(d time.Duration) {
		for end := f.now.Add(d); f.now.Before(end); {
			f.join()
			ends = append(ends, f.now.Add(churnLife))
			for j := 100; j < len(f.renewing); j++ {
				if f.gone[j] || !f.renewing[j] || f.now.Before(ends[j-100]) {
					continue
				}
				if j%4 == 0 {
					f.renewing[j] = false // dies silently
				} else {
					f.cancel(j)
				}
			}
			f.run(2 * time.Second)
		}
	}
	step(5 * time.Minute)
	require.True(t, f.sp.expirationEnabled(), "a healthy fleet under churn expires: %s", f.sp.reason())
	for i := range 40 {
		f.renewing[i] = false
	}
	step(split)
	require.True(t, f.sp.engaged(), "the partition engages self-preservation: %s", f.sp.reason())
	for i := range 40 {
		f.renewing[i] = true
	}
	return f, step
}

// silentlyDead lists the leases held whose churn client died silently.
func (f *fleet) silentlyDead() []int {
	var dead []int
	for i := 100; i < len(f.renewing); i++ {
		if !f.gone[i] && !f.renewing[i] {
			dead = append(dead, i)
		}
	}
	return dead
}

// A five-minute registry partition under churn: while engaged, the churn
// clients that register and die silently stay in the expectation, so
// after the heal the live share stays under 85% (Eureka and the first
// release rule then stayed engaged until the recount, ten more minutes).
// Recovery releases once the fleet that was protected renews again: within
// a window and two closes of the heal, and the silently dead churn clients
// are evicted within two more eviction runs; no steady client is lost.
func TestRecoveryReleasesAfterPartitionUnderChurn(t *testing.T) {
	f, churn := partitionUnderChurn(t, 5*time.Minute)
	dead := f.silentlyDead()
	require.Greater(t, len(dead), 15, "the partition left silently dead churn clients")
	held, live := f.registered(), f.registered()-len(dead)
	require.Less(t, float64(live), 0.85*float64(held),
		"the live share is below the threshold: only recovery can release before the recount")
	heal := f.now
	churn(prodWindow + prodWindow/2)
	assert.True(t, f.sp.expirationEnabled(), "released within a window and two closes of the heal: %s", f.sp.reason())
	assert.False(t, f.sp.released.IsZero())
	assert.LessOrEqual(t, f.sp.released.Sub(heal), prodWindow+prodWindow/2)
	assert.Contains(t, f.sp.reason(), "came back")
	churn(2*prodEviction + prodLease)
	for _, i := range dead {
		assert.True(t, f.gone[i], "churn client %d, dead at the heal, is evicted", i)
	}
	for i := range 100 {
		assert.False(t, f.gone[i], "steady client %d kept", i)
	}
	assert.True(t, f.sp.expirationEnabled(), "and it stays released: %s", f.sp.reason())
}

// Recovery is no way out while the fault lasts: with 40% of the steady
// clients still silent, the renewals stay under 85% of the protected
// fleet's, whatever the churn does, and self-preservation keeps every
// lease until the release rule's recount interval.
func TestRecoveryNotWhileFaultLasts(t *testing.T) {
	f, churn := partitionUnderChurn(t, 2*time.Minute)
	for i := range 40 {
		f.renewing[i] = false // the fault goes on
	}
	churn(prodRecount - 4*prodWindow)
	assert.True(t, f.sp.engaged(), f.sp.reason())
	for i := range 40 {
		assert.False(t, f.gone[i], "silent steady client %d kept", i)
	}
	assert.Contains(t, f.sp.reason(), "until renewals pass")
}

// live counts the clients that renew (steady and churn).
func (f *fleet) live() int {
	n := 0
	for i := range f.renewing {
		if !f.gone[i] && f.renewing[i] {
			n++
		}
	}
	return n
}

// After a recovery the expectation follows the live fleet through the
// churn that goes on: the deaths after the release lower it (the release's
// silent count covers only the leases it gave up on), and the
// registrations raise it, so eight minutes later it is within a tenth of
// the clients that renew and self-preservation stays off.
func TestRecoveryExpectationFollowsTheFleet(t *testing.T) {
	f, churn := partitionUnderChurn(t, 5*time.Minute)
	churn(prodWindow + prodWindow/2)
	require.True(t, f.sp.expirationEnabled(), f.sp.reason())
	for range 8 {
		churn(time.Minute)
		live := f.live()
		assert.InDelta(t, live, f.sp.expected, 0.1*float64(live), "expected %d, %d clients renew, %d held, %d silent",
			f.sp.expected, live, f.registered(), f.sp.silent)
		assert.True(t, f.sp.expirationEnabled(), f.sp.reason())
	}
}

// silentAfterRelease is a core just released by the release rule with 5
// of its 25 leases given up on (silent).
func silentAfterRelease(t *testing.T) *selfPreservation {
	t.Helper()
	sp := &selfPreservation{enabled: true, percent: 0.85, expectedInterval: prodRenew, window: prodWindow,
		releaseAfter: prodRecount, expected: 25, held: 25}
	sp.adopt(testEpoch, 40, 40) // 20 clients renew
	require.Equal(t, 20, sp.expected)
	require.Equal(t, 5, sp.silent)
	return sp
}

// Only evictions come out of the leases a release gave up on: cancels of
// live clients lower the expectation, and the silent leases, when evicted,
// leave it as it is.
func TestSilentDrainedByEvictionsOnly(t *testing.T) {
	sp := silentAfterRelease(t)
	sp.onCounts(0, 3, 0) // three live clients cancel
	assert.Equal(t, 17, sp.expected, "cancels lower the expectation")
	assert.Equal(t, 5, sp.silent)
	sp.onCounts(0, 5, 5) // the silent leases are evicted
	assert.Equal(t, 17, sp.expected, "their evictions do not")
	assert.Zero(t, sp.silent)
}
