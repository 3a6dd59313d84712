package simulations

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The open bugs' matchers take only their own evidence.
func TestOpenBugMatchersAreNarrow(t *testing.T) {
	r := &Result{Scenario: "rolling-restart-quiet", Timers: DefaultTimers()}
	short := Verdict{Invariant: InvSPQuiet, Measured: "engaged in 1.09% of 459 node-probes from +4.0s: 1 engagements, longest 0.50s"}
	long := Verdict{Invariant: InvSPQuiet, Measured: "engaged in 18.33% of 442 node-probes from +4.0s: 5 engagements, longest 9.40s"}
	late := Verdict{Invariant: InvEvictionLatency, Measured: "p99 7.23s …; 5 over the bound, 0 still listed at the end"}
	lost := Verdict{Invariant: InvEvictionLatency, Measured: "p99 7.23s …; 5 over the bound, 1 still listed at the end"}
	assert.True(t, explainedByRestartGrace(r, short))
	assert.False(t, explainedByRestartGrace(r, long), "an engagement longer than a window")
	assert.False(t, explainedByRestartGrace(r, late), "the eviction bound is never explained")
	assert.False(t, explainedByRestartGrace(r, lost), "a dead client never evicted")
	assert.False(t, explainedByRestartGrace(&Result{Scenario: "rolling-restart", Timers: DefaultTimers()}, late), "another scenario")

	s := &Result{Scenario: "silent-member", Timers: DefaultTimers()}
	bound := Verdict{Invariant: InvSilentMemberBound, Measured: "1 killed clients, …; hold seen in 1 readings, missing on 0 nodes"}
	assert.True(t, explainedBySilentSP(s, short), "a moment's engagement at the unblock")
	assert.False(t, explainedBySilentSP(s, long), "an engagement longer than a window")
	assert.False(t, explainedBySilentSP(s, bound), "the eviction bound is never explained")
	assert.False(t, explainedBySilentSP(&Result{Scenario: "partition-heal", Timers: DefaultTimers()}, short), "another scenario")
}
