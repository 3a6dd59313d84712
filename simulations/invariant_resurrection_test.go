package simulations

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eureka"
)

// TestLiveResurrectionIsCaught breaks a real cluster on purpose: after a
// client cancelled its instance and every node dropped it, the instance is
// put back into one node's registry behind the clients' back. The
// no-resurrection checker, fed by the same sampler as the scenarios, must
// report it.
func TestLiveResurrectionIsCaught(t *testing.T) {
	t.Parallel()
	ghost := Scenario{
		Name:       "broken-resurrection",
		Summary:    "A cancelled instance is put back into a registry directly.",
		Invariants: []string{InvNoResurrection},
		Drive: func(s *Sim) error {
			names := s.Cluster().Names()
			cl := s.NewClient("GHOST", names[0])
			if err := s.WaitRegistered([]*Client{cl}, registerWithin); err != nil {
				return err
			}
			if err := s.Sleep(time.Second); err != nil {
				return err
			}
			s.StopClients([]*Client{cl}, true)
			if err := s.Sleep(time.Second); err != nil {
				return err
			}
			// A newer lastDirtyTimestamp than the cancelled life's: the
			// nodes refuse a registration that carries the cancelled one
			// (a cancel outranks it), and the point here is an instance
			// put back behind the clients' back, not that refusal.
			body := strings.Replace(cl.registerBody(), fmt.Sprintf(`"lastDirtyTimestamp":"%d"`, cl.lastDirty),
				fmt.Sprintf(`"lastDirtyTimestamp":"%d"`, time.Now().UnixMilli()), 1)
			inst, err := eureka.DecodeInstance("application/json", []byte(body))
			if err != nil {
				return err
			}
			nd := s.Cluster().Node(names[len(names)-1])
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := nd.Registry().Register(ctx, inst, false); err != nil {
				return err
			}
			s.Event("sabotage", "%s put back into %s's registry", cl.ID, names[len(names)-1])
			return s.Sleep(1500 * time.Millisecond)
		},
	}
	cfg := DefaultConfig()
	cfg.Seed = testSeed
	cfg.Nodes = 3
	cfg.Duration = time.Second
	cfg.SettleTail = 500 * time.Millisecond
	res, err := Run(context.Background(), ghost, cfg)
	require.NoError(t, err)
	require.Len(t, res.Verdicts, 1)
	v := res.Verdicts[0]
	assert.False(t, v.Pass, "the resurrection went unnoticed: %s", v.Measured)
	assert.False(t, res.Pass)
	assert.Contains(t, strings.Join(v.Details, "\n"), "ghost-001 back on", "details: %v", v.Details)
	assert.False(t, republishedOnly(v), "a registration behind the clients' back is not BUG-1: %v", v.Details)
}

// TestRepublishedByFreshCopyIsCaught replays BUG-1 as the probes saw it
// before the fix: a node that had just received a copy of an instance from
// a peer (a restart's initial sync) answered the owner's eviction by
// publishing the instance anew, so no node was ever sampled without it.
// The version evidence alone must fail the run, with BUG-1's signature.
func TestRepublishedByFreshCopyIsCaught(t *testing.T) {
	// build: u-8's client renews on renewedOn until it dies at 5.6s; n1
	// is down until 6.2s, then syncs n0's copy; at republishAt the owner
	// n0 evicts and n1 publishes the instance anew at once.
	build := func(renewedOn string, republishAt float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.LeaseDuration = 3 * time.Second
		h.life("USERS", "u-8", "n0", 0, 5.6, false)
		h.o.Instances["u-8"].Lives[0].Renewed = map[string]time.Time{renewedOn: h.at(5.5)}
		hlc := func(sec float64) uint64 { return uint64(h.at(sec).UnixMilli()) << 16 }
		h.samples("n0", "USERS", 0, 12, nil, always("u-8"))
		h.samples("n1", "USERS", 6.2, 12, nil, always("u-8"))
		h.probes(0, 12, func(sec float64, p *Probe) {
			own := fmt.Sprintf("UP_1_|USERS/u-8@%d.n0", hlc(0.01))
			p.Fingerprint["n0"], p.Fingerprint["n1"] = own, own
			if sec < 6.2 {
				p.Up, p.Live["n0"] = []string{"n0"}, []string{"n0"}
				delete(p.Fingerprint, "n1")
			}
			if sec >= republishAt {
				again := fmt.Sprintf("UP_1_|USERS/u-8@%d.n1", hlc(republishAt))
				p.Fingerprint["n0"], p.Fingerprint["n1"] = again, again
			}
		})
		return h.o
	}
	th := DefaultThresholds(DefaultTimers())
	v := CheckNoResurrection(build("n0", 8.7), th)
	require.False(t, v.Pass, "%s", v.Measured)
	require.Len(t, v.Details, 1)
	assert.Contains(t, v.Details[0], "u-8 re-published by n1 with a version stamped at +8.7s")
	assert.Contains(t, v.Details[0], "n1 held a copy made by another node since +6.2s ("+FreshCopySignature+")")
	assert.True(t, republishedOnly(v))
	// The legitimate path: the client's last renewal went to n1, less than
	// a lease before n1 overruled the eviction.
	v = CheckNoResurrection(build("n1", 7.5), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
}

// republishedOnly reports whether a failed no-resurrection verdict consists
// of re-publications by a node holding a fresh copy only: BUG-1's evidence
// (the matcher of its KnownBugs entry while it was open).
func republishedOnly(v Verdict) bool {
	if !strings.Contains(v.Measured, " 0 cancelled instances left") || len(v.Details) == 0 {
		return false
	}
	for _, d := range v.Details {
		if !strings.Contains(d, RepublishedSignature) || !strings.Contains(d, FreshCopySignature) {
			return false
		}
	}
	return true
}

func TestCheckNoResurrection(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	t.Run("cancelled and gone stays gone", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.life("APP", "a", "n0", 0, 5, true)
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 10, nil, func(sec float64) []string {
				if sec < 5.3 {
					return []string{"a"}
				}
				return nil
			})
		}
		v := CheckNoResurrection(h.o, th)
		assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	})
	t.Run("a registry that brings a cancelled instance back fails", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.life("APP", "a", "n0", 0, 5, true)
		h.samples("n0", "APP", 0, 10, nil, func(sec float64) []string {
			if sec < 5.3 {
				return []string{"a"}
			}
			return nil
		})
		// n1 drops it after the cancel, then serves it again from 7s on.
		h.samples("n1", "APP", 0, 10, nil, func(sec float64) []string {
			if sec < 5.3 || sec >= 7 {
				return []string{"a"}
			}
			return nil
		})
		v := CheckNoResurrection(h.o, th)
		require.False(t, v.Pass)
		assert.Contains(t, v.Details[0], "a back on n1 at +7.0s")
		assert.Contains(t, strings.Join(v.Details, "\n"), "a still on n1", "it is also left at the end")
	})
	t.Run("an instance registered again is not a resurrection", func(t *testing.T) {
		h := newHistory("n0")
		h.life("APP", "a", "n0", 0, 3, true)
		h.life("APP", "a", "n0", 6, -1, false)
		h.samples("n0", "APP", 0, 10, nil, func(sec float64) []string {
			if sec < 3.3 || sec >= 6.1 {
				return []string{"a"}
			}
			return nil
		})
		v := CheckNoResurrection(h.o, th)
		assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	})
	// A cancel answered by a node that crashed before replicating it is
	// lost with the node; one answered by a node that stayed up is not.
	lostCancel := func(crashAfter float64) Verdict {
		h := newHistory("n0", "n1")
		h.life("APP", "a", "n0", 0, 5, true)
		h.o.Instances["a"].Lives[0].CancelledBy = "n0"
		h.o.Crashes = []NodeCrash{{Node: "n0", At: h.at(5 + crashAfter)}}
		h.samples("n1", "APP", 0, 10, nil, always("a"))
		return CheckNoResurrection(h.o, th)
	}
	t.Run("a cancel lost with the node that answered it is not counted", func(t *testing.T) {
		v := lostCancel(0.1)
		assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
		assert.Contains(t, v.Measured, "1 (instance, node) left by a cancel lost with the node that answered it (not counted)")
		require.Len(t, v.Details, 1)
		assert.Contains(t, v.Details[0], "not counted: a still on n1 at +9.8s, cancelled at +5.0s; the cancel was answered by n0, which crashed at +5.1s")
	})
	t.Run("a cancel whose node stayed up past the grace is left", func(t *testing.T) {
		v := lostCancel(1)
		require.False(t, v.Pass, "%s %v", v.Measured, v.Details)
		assert.Contains(t, v.Details[0], "a still on n1 at +9.8s, cancelled at +5.0s")
	})
	t.Run("a node that never had it may learn of it late", func(t *testing.T) {
		h := newHistory("n0")
		h.life("APP", "a", "n0", 0, 3, false) // died silently
		h.samples("n0", "APP", 0, 10, nil, func(sec float64) []string {
			if sec >= 5 && sec < 8 {
				return []string{"a"}
			}
			return nil
		})
		v := CheckNoResurrection(h.o, th)
		assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	})
}

// TestNodeCatchingUpWithAnOverruleIsNoResurrection: a node whose own
// (wrong) eviction was overruled elsewhere by a renewal it did not see
// lists the instance again when the overruling version reaches it; that is
// not a resurrection. The same return carrying a version made by a node
// without such a renewal is.
func TestNodeCatchingUpWithAnOverruleIsNoResurrection(t *testing.T) {
	build := func(renewedOn string) *Observations {
		h := newHistory("n2", "n4")
		h.o.LeaseDuration = 3 * time.Second
		h.life("CART", "c5", "n4", 1, 4.7, false)
		h.o.Instances["c5"].Lives[0].Renewed = map[string]time.Time{renewedOn: h.at(4.2)}
		hlc := func(sec float64) uint64 { return uint64(h.at(sec).UnixMilli()) << 16 }
		h.samples("n4", "CART", 0, 12, nil, func(sec float64) []string {
			if sec >= 1.1 && sec < 10 {
				return []string{"c5"}
			}
			return nil
		})
		// n2 evicts it at 5.5 (stalled, it missed the renewals), and gets
		// n4's overruling version at 8.4.
		h.samples("n2", "CART", 0, 12, nil, func(sec float64) []string {
			if sec >= 1.1 && sec < 5.5 || sec >= 8.4 && sec < 10 {
				return []string{"c5"}
			}
			return nil
		})
		h.probes(0, 12, func(sec float64, p *Probe) {
			first := fmt.Sprintf("UP_1_|CART/c5@%d.n4", hlc(1.05))
			again := fmt.Sprintf("UP_1_|CART/c5@%d.n4", hlc(5.5))
			p.Fingerprint["n2"], p.Fingerprint["n4"] = "UP_0_", "UP_0_"
			switch {
			case sec >= 1.1 && sec < 5.5:
				p.Fingerprint["n2"], p.Fingerprint["n4"] = first, first
			case sec >= 5.5 && sec < 10:
				p.Fingerprint["n4"] = again
				if sec >= 8.4 {
					p.Fingerprint["n2"] = again
				}
			}
		})
		return h.o
	}
	th := DefaultThresholds(DefaultTimers())
	v := CheckNoResurrection(build("n4"), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "1 returns on a node catching up with an overruled deletion (not counted)")
	v = CheckNoResurrection(build("n2"), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "c5 re-published by n4")
}

// TestBriefReturnSeenOnlyInProbesIsCaught: an old copy installed and
// deleted again within a sampling interval is still a resurrection.
func TestBriefReturnSeenOnlyInProbesIsCaught(t *testing.T) {
	h := newHistory("n0", "n1")
	h.life("APP", "a", "n0", 0, 5, true)
	gone := func(sec float64) []string {
		if sec < 5.3 {
			return []string{"a"}
		}
		return nil
	}
	h.samples("n0", "APP", 0, 10, nil, gone)
	h.samples("n1", "APP", 0, 10, nil, gone)
	h.probes(0, 10, func(sec float64, p *Probe) {
		if sec >= 5.3 && !(sec > 7.05 && sec < 7.15) {
			p.Fingerprint["n0"], p.Fingerprint["n1"] = "UP_0_", "UP_0_"
		} else if sec > 7.05 && sec < 7.15 {
			p.Fingerprint["n0"] = "UP_0_"
		}
	})
	v := CheckNoResurrection(h.o, DefaultThresholds(DefaultTimers()))
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Details[0], "a back on n1 at +7.1s (in a probe)")
}

// A version stamped minutes ahead (its author's clock runs ahead) is held
// against a client's end only if the probes show it made after that end:
// one made just before the cancel and first listed just after it is no
// resurrection (clock-skew seed 1 once failed so), one first listed after
// probes that listed it nowhere, all after the cancel, is.
func TestFutureStampedVersionIsJudgedByTheProbes(t *testing.T) {
	build := func(appears float64) *Observations {
		h := newHistory("n2", "n4")
		h.o.LeaseDuration = 3 * time.Second
		h.life("CART", "c5", "n4", 1, 4.7, true)
		hlc := func(sec float64) uint64 { return uint64(h.at(sec).UnixMilli()) << 16 }
		h.samples("n4", "CART", 0, 12, nil, func(sec float64) []string {
			if sec >= 1.1 && sec < 4.7 {
				return []string{"c5"}
			}
			return nil
		})
		h.probes(0, 12, func(sec float64, p *Probe) {
			first := fmt.Sprintf("UP_1_|CART/c5@%d.n4", hlc(1.05))
			ahead := fmt.Sprintf("UP_1_|CART/c5@%d.n4", hlc(appears+180)) // stamped 3 min ahead
			p.Fingerprint["n2"], p.Fingerprint["n4"] = "UP_0_", "UP_0_"
			switch {
			case sec >= 1.1 && sec < appears:
				p.Fingerprint["n2"], p.Fingerprint["n4"] = first, first
			case sec >= appears && sec < appears+0.3:
				p.Fingerprint["n4"] = ahead
			}
		})
		return h.o
	}
	th := DefaultThresholds(DefaultTimers())
	v := CheckNoResurrection(build(4.75), th) // made by 4.8, maybe before the cancel at 4.7
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckNoResurrection(build(6.05), th) // made after 6.0, surely after the cancel
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "c5 re-published by n4")
}
