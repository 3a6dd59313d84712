package simulations

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckNoMissingRenewer(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	t.Run("a short replication lag passes", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.life("APP", "a", "n0", 0, -1, false)
		h.samples("n0", "APP", 0, 10, nil, always("a"))
		h.samples("n1", "APP", 0, 10, nil, func(sec float64) []string {
			if sec < 0.5 {
				return nil
			}
			return []string{"a"}
		})
		v := CheckNoMissingRenewer(h.o, th)
		assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	})
	t.Run("a renewing client missing for 5s on a reachable node fails", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.life("APP", "a", "n0", 0, -1, false)
		h.samples("n0", "APP", 0, 10, nil, always("a"))
		h.samples("n1", "APP", 0, 10, nil, func(sec float64) []string {
			if sec >= 2 && sec < 7 {
				return nil
			}
			return []string{"a"}
		})
		v := CheckNoMissingRenewer(h.o, th)
		require.False(t, v.Pass)
		assert.Contains(t, v.Details[0], "a missing on n1 from +2.0s for 5.00s")
	})
	t.Run("missing on a node across a partition does not count", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.life("APP", "a", "n0", 0, -1, false)
		cut := &Topology{Groups: [][]string{{"n0"}, {"n1"}}}
		h.samples("n0", "APP", 0, 10, cut, always("a"))
		h.samples("n1", "APP", 0, 10, cut, always())
		v := CheckNoMissingRenewer(h.o, th)
		assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	})
}

// TestCheckNoMissingRenewerAroundAHeal: misses over the bound fail the
// verdict wherever they fall, right after a heal (BUG-2's evidence: a
// stalled sync) or long before it.
func TestCheckNoMissingRenewerAroundAHeal(t *testing.T) {
	build := func(missFrom, missTo float64) *Result {
		h := newHistory("n0", "n1")
		h.o.Timeline = []Event{{At: 10 * time.Second, Kind: "heal"}}
		h.life("APP", "a", "n0", 0, -1, false)
		h.samples("n0", "APP", 0, 20, nil, always("a"))
		h.samples("n1", "APP", 0, 20, nil, func(sec float64) []string {
			if sec >= missFrom && sec < missTo {
				return nil
			}
			return []string{"a"}
		})
		r := &Result{Timers: DefaultTimers(), Thresholds: DefaultThresholds(DefaultTimers()), Observations: h.o}
		r.Verdicts = []Verdict{CheckNoMissingRenewer(h.o, r.Thresholds)}
		return r
	}
	r := build(10.2, 13.6)
	assert.False(t, r.Verdicts[0].Pass, "a 3.4s miss right after the heal")
	r = build(4, 8)
	assert.False(t, r.Verdicts[0].Pass, "a miss long before the heal")
	r = build(10.2, 19)
	assert.False(t, r.Verdicts[0].Pass, "a miss longer than the stall")
}

func TestCheckRenewerKept(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	// a registers at 1s and renews until 9s; reg re-registers it at 5s
	// after a 404. The owner evicts it at evictAt and n1 (where it renews)
	// overrules at once with a new version.
	build := func(evictAt float64) *Observations {
		h := newHistory("n0", "n1")
		h.life("APP", "a", "n1", 1, 9, true)
		lf := &h.o.Instances["a"].Lives[0]
		lf.AckedBy = "n1"
		lf.Registrations = []Span{{From: h.at(1), To: h.at(1.01)}, {From: h.at(5), To: h.at(5.02)}}
		hlc := func(sec float64) uint64 { return uint64(h.at(sec).UnixMilli()) << 16 }
		h.probes(0, 12, func(sec float64, p *Probe) {
			fp := "UP_0_"
			switch {
			case sec >= 9:
			case evictAt > 0 && sec >= evictAt:
				fp = fmt.Sprintf("UP_1_|APP/a@%d.n1", hlc(evictAt))
			case sec >= 5.02:
				fp = fmt.Sprintf("UP_1_|APP/a@%d.n1", hlc(5.01))
			case sec >= 1.01:
				fp = fmt.Sprintf("UP_1_|APP/a@%d.n1", hlc(1.005))
			}
			p.Fingerprint["n0"], p.Fingerprint["n1"] = fp, fp
		})
		return h.o
	}
	v := CheckRenewerKept(build(0), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckRenewerKept(build(7), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Details[0], "a re-published by n1 at +7.0s while its client was renewing")
}

// TestCheckRenewerKeptAfterAStall: a version of a renewing client's
// instance that none of its registrations made fails the verdict, whether
// the client's own node made it right after a stalled owner read again
// (BUG-6's evidence: an eviction overruled at once), later, or another node
// made it.
func TestCheckRenewerKeptAfterAStall(t *testing.T) {
	build := func(evictAt float64, author string) *Result {
		h := newHistory("n0", "n3")
		h.o.Timeline = []Event{{At: 13200 * time.Millisecond, Kind: "unstall", Detail: "n3 reads its streams again"}}
		h.life("ORDERS", "o5", "n0", 9.5, 18, true)
		lf := &h.o.Instances["o5"].Lives[0]
		lf.Registrations = []Span{{From: h.at(9.5), To: h.at(9.51)}}
		hlc := func(sec float64) uint64 { return uint64(h.at(sec).UnixMilli()) << 16 }
		h.probes(0, 20, func(sec float64, p *Probe) {
			fp := "UP_0_"
			switch {
			case sec >= 18:
			case sec >= evictAt:
				fp = fmt.Sprintf("UP_1_|ORDERS/o5@%d.%s", hlc(evictAt), author)
			case sec >= 9.51:
				fp = fmt.Sprintf("UP_1_|ORDERS/o5@%d.n0", hlc(9.505))
			}
			p.Fingerprint["n0"], p.Fingerprint["n3"] = fp, fp
		})
		r := &Result{Observations: h.o}
		r.Verdicts = []Verdict{CheckRenewerKept(h.o, DefaultThresholds(DefaultTimers()))}
		return r
	}
	r := build(13.5, "n0")
	assert.False(t, r.Verdicts[0].Pass, "the client's node, right after the unstall")
	r = build(16, "n0")
	assert.False(t, r.Verdicts[0].Pass, "long after the unstall")
	r = build(13.5, "n3")
	assert.False(t, r.Verdicts[0].Pass, "not the client's node")
}
