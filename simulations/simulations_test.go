package simulations

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/internal/sabotage"
)

// TestMain fails the package if a run leaves a goroutine behind: the
// harness must stop every client, node and network it started. Stopped
// nodes wind down asynchronously for a moment, so poll.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(20 * time.Second)
		err := goleak.Find()
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testSeed is the seed the tests run every scenario with.
const testSeed = 1

// raceSlack multiplies the time bounds under the race detector: the nodes
// then run several times slower (and CI machines are shared), so renewals,
// forwarded renewals and replication lag in ways that say nothing about
// the protocol. The shares and counts (survivors, resurrections) stay
// strict.
const raceSlack = 2

// testConfig is the scenarios' configuration in tests: the fixed seed, each
// scenario's shortest duration, a one-second settle tail, time bounds
// widened under -race, and in -short mode three nodes instead of five.
func testConfig(t *testing.T, sc Scenario) Config {
	cfg := ShortConfig(sc, testSeed)
	if raceEnabled {
		th := &cfg.Thresholds
		th.MaxMissing *= raceSlack
		th.Convergence *= raceSlack
		th.Membership *= raceSlack
		th.SPEngage *= raceSlack
		th.SPRelease *= raceSlack
		th.SPRecountSlack *= raceSlack
		th.EvictAfterRelease *= raceSlack
		th.EvictionLatency *= raceSlack
		th.Visibility *= raceSlack
	}
	if testing.Short() {
		cfg.Nodes = 3
	}
	cfg.Progress = func(name string, ev Event) {
		t.Logf("%s +%.1fs %s: %s", name, ev.At.Seconds(), ev.Kind, ev.Detail)
	}
	return cfg
}

// parallelScenarios is how many scenarios the tests run at once. A
// scenario mostly waits (its clients renew once a second), so a few
// clusters side by side stay far from saturating two CPUs even under -race,
// and the package finishes in about half the time.
const parallelScenarios = 3

// TestScenarios runs every scenario with a fixed seed and a reduced
// duration and requires every invariant to pass, except where a known
// server bug (KnownBugs) explains the failure: that is logged, loudly. On
// failure the test log holds the scenario's full Markdown report.
func TestScenarios(t *testing.T) {
	slots := make(chan struct{}, parallelScenarios)
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			res, err := Run(context.Background(), sc, testConfig(t, sc))
			require.NoError(t, err)
			require.Len(t, res.Verdicts, len(sc.Invariants))
			for _, v := range res.Verdicts {
				t.Logf("%s: %s — %s", passFail(v.Pass), v.Invariant, v.Measured)
				if bug := ExplainFailure(res, v); bug != nil {
					// A server bug, not the harness: report it, do not fail.
					t.Logf("KNOWN SERVER BUG %s reproduced (%s): %s\n%s", bug.ID, bug.Title, v.Measured, strings.Join(v.Details, "\n"))
					continue
				}
				assert.True(t, v.Pass, "%s failed: %s; threshold: %s; details:\n%s", v.Invariant, v.Measured, v.Threshold, strings.Join(v.Details, "\n"))
			}
			assert.Empty(t, res.Err)
			assert.Positive(t, res.Clients.Renewals, "clients did not renew")
			assert.Positive(t, res.Samples, "nothing was sampled")
			if t.Failed() {
				var b bytes.Buffer
				require.NoError(t, WriteReport(&b, ReportHeader{Command: "go test ./simulations/"}, []*Result{res}))
				t.Log("\n" + b.String())
			}
		})
	}
}

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

// ---- the checkers on made-up histories ----------------------------------------

// history builds Observations by hand: one node list, a start time, and
// helpers to add lives, samples and probes at offsets.
type history struct {
	o *Observations
}

func newHistory(nodes ...string) *history {
	start := time.Unix(1_700_000_000, 0)
	return &history{o: &Observations{
		Start: start, Nodes: nodes, SampleInterval: 200 * time.Millisecond,
		Instances: map[string]*InstanceLog{}, QuietEnd: start.Add(60 * time.Second), End: start.Add(61 * time.Second),
	}}
}

func (h *history) at(sec float64) time.Time {
	return h.o.Start.Add(time.Duration(sec * float64(time.Second)))
}

// life adds a life of id from start to end seconds (end < 0: still running).
func (h *history) life(app, id, loc string, start, end float64, deregistered bool) {
	l := h.o.Instances[id]
	if l == nil {
		l = &InstanceLog{App: app, ID: id, Location: loc}
		h.o.Instances[id] = l
	}
	lf := Life{Start: h.at(start), Acked: h.at(start + 0.01), Deregistered: deregistered}
	if end >= 0 {
		lf.End = h.at(end)
	}
	l.Lives = append(l.Lives, lf)
}

// samples adds samples of app on node every 200ms in [from, to) seconds;
// present says whether id is listed at a time.
func (h *history) samples(node, app string, from, to float64, topo *Topology, ids func(sec float64) []string) {
	for i := 0; from+float64(i)*0.2 < to; i++ {
		sec := from + float64(i)*0.2
		set := map[string]bool{}
		for _, id := range ids(sec) {
			set[id] = true
		}
		h.o.Samples = append(h.o.Samples, Sample{At: h.at(sec), Node: node, App: app, Incarnation: 1, Ready: true, Topo: topo, IDs: set})
	}
}

// probes adds probes every 100ms in [from, to) seconds built by fn.
func (h *history) probes(from, to float64, fn func(sec float64, p *Probe)) {
	for i := 0; from+float64(i)*0.1 < to; i++ {
		sec := from + float64(i)*0.1
		p := Probe{At: h.at(sec), Ready: map[string]bool{}, Fingerprint: map[string]string{},
			Live: map[string][]string{}, SP: map[string]actors.SelfPreservationStatus{}}
		for _, n := range h.o.Nodes {
			p.Up = append(p.Up, n)
			p.Ready[n] = true
			p.Fingerprint[n] = "UP_1_|APP/a@1.n0"
			p.Live[n] = h.o.Nodes
		}
		fn(sec, &p)
		h.o.Probes = append(h.o.Probes, p)
	}
}

func always(ids ...string) func(float64) []string { return func(float64) []string { return ids } }

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

func TestCheckConvergenceAndMembership(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	th.Convergence, th.Membership = 2*time.Second, 2*time.Second
	t.Run("converging in time passes", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.o.FaultsEnd = h.at(1)
		h.o.QuietEnd = h.at(6)
		h.probes(0, 6, func(sec float64, p *Probe) {
			if sec < 2 {
				p.Fingerprint["n1"] = "UP_0_"
				p.Live["n1"] = []string{"n1"}
			}
		})
		assert.True(t, CheckConvergence(h.o, th).Pass)
		assert.True(t, CheckMembership(h.o, th).Pass)
	})
	t.Run("a node that keeps another registry fails", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.o.FaultsEnd = h.at(1)
		h.o.QuietEnd = h.at(6)
		h.probes(0, 6, func(_ float64, p *Probe) { p.Fingerprint["n1"] = "UP_2_|APP/a@1.n0|APP/b@2.n1" })
		v := CheckConvergence(h.o, th)
		require.False(t, v.Pass)
		assert.Equal(t, "never converged", v.Measured)
		assert.Contains(t, strings.Join(v.Details, "\n"), `n1 hold 2 instances, hashcode "UP_2_"`)
	})
	t.Run("converging too late fails", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.o.FaultsEnd = h.at(1)
		h.o.QuietEnd = h.at(8)
		h.probes(0, 8, func(sec float64, p *Probe) {
			if sec < 4 {
				p.Fingerprint["n1"] = "UP_0_"
				p.Live["n1"] = []string{"n1"}
			}
		})
		assert.False(t, CheckConvergence(h.o, th).Pass)
		assert.False(t, CheckMembership(h.o, th).Pass)
	})
}

func TestCheckSelfPreservation(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(engages bool, evictAt float64) *Observations {
		h := newHistory("n0")
		h.o.ClientsCrashed = h.at(5)
		h.o.ClientsRecovered = h.at(12)
		h.o.CrashedIDs = []string{"a"}
		h.life("APP", "a", "n0", 0, 5, false)
		h.life("APP", "a", "n0", 12, -1, false)
		h.samples("n0", "APP", 0, 15, nil, always("a"))
		h.probes(0, 15, func(sec float64, p *Probe) {
			enabled := sec < 7 || sec >= 14 || !engages
			p.SP["n0"] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 20, ExpirationEnabled: enabled}
			if evictAt > 0 && sec >= evictAt && sec < 12 {
				p.Fingerprint["n0"] = "UP_0_"
			}
		})
		return h.o
	}
	v := CheckSelfPreservation(build(true, 0), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckSelfPreservation(build(false, 0), th)
	require.False(t, v.Pass)
	assert.Contains(t, strings.Join(v.Details, "\n"), "n0 never engaged self-preservation")
	// An eviction before self-preservation engaged (at 7s) is tolerated;
	// one after it is not.
	v = CheckSelfPreservation(build(true, 6), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "evicted before engagement 1, after 0")
	v = CheckSelfPreservation(build(true, 9), th)
	require.False(t, v.Pass)
	assert.Contains(t, strings.Join(v.Details, "\n"), "a evicted (missing on n0 at +9.0s) after self-preservation had engaged everywhere")
}

func TestTopologyReachable(t *testing.T) {
	topo := &Topology{Down: map[string]bool{"n4": true}, Groups: [][]string{{"n0", "n1"}, {"n2", "n3"}}}
	assert.True(t, topo.Reachable("n0", "n1"))
	assert.False(t, topo.Reachable("n0", "n2"), "across the partition")
	assert.False(t, topo.Reachable("n0", "n4"), "crashed")
	assert.True(t, (&Topology{}).Reachable("n0", "n2"))
	var none *Topology
	assert.True(t, none.Reachable("n0", "n1"))
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	c.Nodes = 2
	assert.ErrorIs(t, c.Validate(), ErrInvalidConfig)
	c = DefaultConfig()
	c.Timers.LeaseDuration = 1500 * time.Millisecond
	assert.ErrorIs(t, c.Validate(), ErrInvalidConfig)
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

// TestSabotagePlanCoversEverySwitch: every switch of internal/sabotage has
// scenarios in SabotagePlan, and they exist (`make sabotage` relies on it).
func TestSabotagePlanCoversEverySwitch(t *testing.T) {
	for _, sw := range sabotage.All {
		names := SabotagePlan[sw]
		require.NotEmpty(t, names, "switch %s has no scenarios", sw)
		for _, n := range names {
			_, ok := ScenarioByName(n)
			require.True(t, ok, "switch %s: unknown scenario %s", sw, n)
		}
	}
	assert.Len(t, SabotagePlan, len(sabotage.All), "a plan for a switch that does not exist")
}

func TestCheckSPQuiet(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(engagedFrom, engagedTo float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.SteadyAt = h.at(1)
		h.o.QuietEnd = h.at(20)
		h.probes(0, 20, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				p.SP[n] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 20, ExpirationEnabled: true}
			}
			if sec >= engagedFrom && sec < engagedTo {
				p.SP["n1"] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, RenewsLastWindow: 16, LocalRenewals: 8, PeerRenewals: 8, Members: 2}
			}
		})
		return h.o
	}
	// Engaged during the warm-up only (before SteadyAt + two windows).
	v := CheckSPQuiet(build(0, 4.5), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	// Engaged for 2s of the 15s judged on one of two nodes: ~6.7%.
	v = CheckSPQuiet(build(10, 12), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "1 engagements, longest 2.00s")
	assert.Contains(t, v.Details[0], "n1 engaged from +10.0s for 2.00s")
	assert.Contains(t, v.Details[0], "renews 16 (local 8 + peers 8, 2 members), threshold 17, expected 10")
	assert.InDelta(t, 100*20.0/300, v.Key.Value, 0.5)
}

func TestCheckEvictionLatency(t *testing.T) {
	th := DefaultThresholds(DefaultTimers()) // bound 3s + 0.25s + 1s
	build := func(goneAfter float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.QuietEnd = h.at(20)
		for i, id := range []string{"a", "b", "c"} {
			start := float64(i)
			h.life("APP", id, "n0", start, start+2, false)
			h.o.Instances[id].Lives[0].Renewed = map[string]time.Time{"n0": h.at(start + 1.9)}
		}
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 20, nil, func(sec float64) []string {
				var ids []string
				for i, id := range []string{"a", "b", "c"} {
					if sec < float64(i)+1.9+goneAfter {
						ids = append(ids, id)
					}
				}
				return ids
			})
		}
		return h.o
	}
	v := CheckEvictionLatency(build(3.4), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "over 6 (instance, node) pairs of 3 silently dead clients")
	v = CheckEvictionLatency(build(6), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "p99 6.10s")
	assert.Contains(t, v.Details[0], "last renewal at +")
	// Never evicted: still listed when observation ends.
	v = CheckEvictionLatency(build(100), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "6 still listed at the end")
	assert.Contains(t, v.Details[0], "still listed when observation ended")
}

func TestCheckVisibility(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	// Registrations acked by n0 every second; n1 lists each lag seconds
	// later; n2 is stalled from 4s to 8s and never lists anything then.
	build := func(lag float64) *Observations {
		h := newHistory("n0", "n1", "n2")
		h.o.QuietEnd = h.at(15)
		var ids []string
		for i := 0; i < 12; i++ {
			id := fmt.Sprintf("r%d", i)
			ids = append(ids, id)
			h.life("APP", id, "n0", float64(i), -1, false)
			h.o.Instances[id].Lives[0].AckedBy = "n0"
		}
		stalled := &Topology{Stalled: map[string]bool{"n2": true}}
		h.probes(0, 15, func(sec float64, p *Probe) {
			if sec >= 4 && sec < 8 {
				p.Topo = stalled
			}
			for _, n := range p.Up {
				fp := "UP_1_"
				for i, id := range ids {
					acked := float64(i) + 0.01
					switch {
					case n == "n0" && sec >= acked,
						n == "n1" && sec >= acked+lag,
						n == "n2" && sec >= acked+0.1 && (sec < 4 || sec >= 8):
						fp += "|APP/" + id + "@1.n0"
					}
				}
				p.Fingerprint[n] = fp
			}
		})
		return h.o
	}
	v := CheckVisibility(build(0.3), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckVisibility(build(2), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Details[0], "listed on n1 2.0")
}

func TestCheckSPRecountRelease(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	// Two clients of five die for good at 5s; n0 and n1 engage at 7s.
	build := func(releaseAt, goneAt float64, engage bool) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.Timers.RecountInterval = 8 * time.Second
		h.o.ClientsCrashed = h.at(5)
		h.o.CrashedIDs = []string{"d1", "d2"}
		h.o.QuietEnd = h.at(30)
		h.life("APP", "d1", "n0", 0, 5, false)
		h.life("APP", "d2", "n1", 0, 5, false)
		h.life("APP", "a", "n0", 0, -1, false)
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 30, nil, func(sec float64) []string {
				if sec < goneAt {
					return []string{"a", "d1", "d2"}
				}
				return []string{"a"}
			})
		}
		h.probes(0, 30, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				st := actors.SelfPreservationStatus{Enabled: true, Expected: 5, Threshold: 8, RenewsLastWindow: 10, ExpirationEnabled: true}
				if engage && sec >= 7 && sec < releaseAt {
					st.RenewsLastWindow, st.ExpirationEnabled = 6, false
				}
				p.SP[n] = st
			}
		})
		return h.o
	}
	v := CheckSPRecountRelease(build(15.5, 16, true), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "released within 8.50s of engaging")
	v = CheckSPRecountRelease(build(100, 100, true), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "n0 still engaged at the end, 23.00s after engaging at +7.0s (bound 10.50s)")
	assert.Contains(t, strings.Join(v.Details, "\n"), "d1 (died silently at +5.0s) still on n0 at the end")
	v = CheckSPRecountRelease(build(15.5, 25, true), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "d1 gone from every node only at +25.0s, 9.50s after the last release at +15.5s")
	v = CheckSPRecountRelease(build(0, 8, false), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "n0 never engaged self-preservation")
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

func TestCheckTombstoneTTL(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(oldest float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.Timers.TombstoneTTL = 8 * time.Second
		h.probes(0, 20, func(sec float64, p *Probe) {
			if int(sec*10)%10 != 0 {
				return // a census once a second
			}
			p.Tombstones = map[string]TombstoneCensus{
				"n0": {Count: 3, Oldest: 5 * time.Second, OldestID: "APP/a"},
				"n1": {Count: 4, Oldest: time.Duration(min(sec, oldest) * float64(time.Second)), OldestID: "APP/b"},
			}
		})
		return h.o
	}
	v := CheckTombstoneTTL(build(8.5), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	// n1 keeps serving b's tombstone up to 15s after the deletion (aged by
	// its receipt, or re-seeded by a peer).
	v = CheckTombstoneTTL(build(15), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Measured, "oldest tombstone served 15.00s old (TTL 8.00s), 1 (node, tombstone) over the bound")
	assert.Contains(t, v.Details[0], "n1 still served APP/b's tombstone at +15.0s, 15.00s after the deletion")
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

// TestCheckSPRecountReleaseEngagingAgain: engaging again after the release,
// at once (BUG-5's evidence: a recount right after the release) or later,
// fails the verdict, as never releasing does.
func TestCheckSPRecountReleaseEngagingAgain(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	build := func(releaseAt, againAt float64) *Result {
		h := newHistory("n0", "n1")
		h.o.Timers = DefaultTimers()
		h.o.Timers.RecountInterval = 8 * time.Second
		h.o.ClientsCrashed = h.at(5)
		h.o.CrashedIDs = []string{"d1"}
		h.o.QuietEnd = h.at(30)
		h.life("APP", "d1", "n0", 0, 5, false)
		for _, n := range h.o.Nodes {
			h.samples(n, "APP", 0, 30, nil, func(sec float64) []string {
				if sec < releaseAt+0.3 {
					return []string{"d1"}
				}
				return nil
			})
		}
		h.probes(0, 30, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				st := actors.SelfPreservationStatus{Enabled: true, Expected: 5, Threshold: 8, RenewsLastWindow: 10, ExpirationEnabled: true}
				engaged := sec >= 7 && sec < releaseAt
				if n == "n0" && sec >= againAt && sec < againAt+2 {
					engaged = true
				}
				if engaged {
					st.RenewsLastWindow, st.ExpirationEnabled = 6, false
				}
				p.SP[n] = st
			}
		})
		r := &Result{Timers: h.o.Timers, Thresholds: th, Observations: h.o}
		r.Verdicts = []Verdict{CheckSPRecountRelease(h.o, th)}
		return r
	}
	r := build(15.5, 16)
	assert.False(t, r.Verdicts[0].Pass, "engaging again right after the release")
	r = build(15.5, 20)
	assert.False(t, r.Verdicts[0].Pass, "engaging again long after the release")
	r = build(100, 200)
	assert.False(t, r.Verdicts[0].Pass, "never releasing")
}

// TestCheckMembershipAfterARestartInAPartition: after the heal, a node
// restarted during the partition that misses the other side (BUG-4's
// evidence), or a node that misses its own side, fails the verdict, and the
// evidence says what the node sees.
func TestCheckMembershipAfterARestartInAPartition(t *testing.T) {
	build := func(gapNode string, gapSees []string) *Result {
		h := newHistory("n0", "n1", "n2")
		h.o.FaultsEnd = h.at(10)
		h.o.QuietEnd = h.at(30)
		h.o.Timeline = []Event{{At: 7 * time.Second, Kind: "restart", Detail: "n0 restarted (fresh process, same address)"}}
		cut := &Topology{Groups: [][]string{{"n0", "n1"}, {"n2"}}}
		h.probes(0, 30, func(sec float64, p *Probe) {
			if sec < 10 {
				p.Topo = cut
			}
			if sec >= 10 && sec < 25 {
				p.Live[gapNode] = gapSees
			}
		})
		r := &Result{Timers: DefaultTimers(), Thresholds: DefaultThresholds(DefaultTimers()), Observations: h.o}
		r.Verdicts = []Verdict{CheckMembership(h.o, r.Thresholds)}
		return r
	}
	r := build("n0", []string{"n0", "n1"})
	require.False(t, r.Verdicts[0].Pass)
	assert.Contains(t, strings.Join(r.Verdicts[0].Details, "\n"), "n0 sees n0,n1")
	r = build("n1", []string{"n1"})
	assert.False(t, r.Verdicts[0].Pass, "n1 misses its own side")
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

func TestCheckSPPartition(t *testing.T) {
	th := DefaultThresholds(DefaultTimers()) // engage ≤ 5s, release ≤ 7s
	build := func(n1Engages float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timeline = []Event{{At: 5 * time.Second, Kind: "partition"}, {At: 15 * time.Second, Kind: "heal"}}
		h.o.QuietEnd = h.at(30)
		for i := range 10 {
			h.life("ORDERS", fmt.Sprintf("o%d", i), "n0", 1, -1, false)
		}
		h.probes(0, 30, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				engaged := sec >= 6 && sec < 17
				if n == "n1" {
					engaged = sec >= n1Engages && sec < 17
				}
				p.SP[n] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, ExpirationEnabled: !engaged}
			}
		})
		return h.o
	}
	v := CheckSPPartition(build(7), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "engaged within 2.00s")
	v = CheckSPPartition(build(99), th) // the minority never engages
	require.False(t, v.Pass)
	assert.Contains(t, v.Details[0], "n1 never engaged")
	v = CheckSPPartition(build(12), th) // 7 s after the split
	require.False(t, v.Pass)
	assert.Contains(t, v.Details[0], "n1 engaged 7.00s after the split")

	// Never released after the heal: a failure while the clients alive could
	// renew above the threshold, none when too many died while engaged.
	stuck := func(alive int) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timeline = []Event{{At: 5 * time.Second, Kind: "partition"}, {At: 15 * time.Second, Kind: "heal"}}
		h.o.QuietEnd = h.at(30)
		for i := range 10 {
			end := -1.0
			if i >= alive {
				end = 10 // died silently during the partition
			}
			h.life("ORDERS", fmt.Sprintf("o%d", i), "n0", 1, end, false)
		}
		h.probes(0, 30, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				p.SP[n] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, ExpirationEnabled: sec < 6}
			}
		})
		return h.o
	}
	v = CheckSPPartition(stuck(10), th)
	assert.False(t, v.Pass, "every client alive, yet no release")
	assert.Contains(t, strings.Join(v.Details, "; "), "never released")
	v = CheckSPPartition(stuck(9), th)
	assert.False(t, v.Pass, "9 of 10 alive is above 85%%: the release is due")
	v = CheckSPPartition(stuck(8), th)
	assert.True(t, v.Pass, "%v", v.Details)
	assert.Contains(t, strings.Join(v.Details, "; "), "8 clients alive when it was due (+22.0s), below 85% of the 10 it expected")
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
