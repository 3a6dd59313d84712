package simulations

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/heureka/heureka/internal/sabotage"
)

// SabotagePlan names, for every switch of internal/sabotage, the scenarios
// that should catch the bug it puts back: the story that exercises the
// broken code path, and the invariant that would notice. The sabotage
// harness (RunSabotage, `make sabotage`) runs each switch with only these
// scenarios, to stay within a quarter of an hour on two CPUs.
var SabotagePlan = map[sabotage.Switch][]string{
	// BUG-1: a node holding an unexpired copy overrules the owner's
	// eviction. Best candidates: a node that learns of leases late (a
	// restart's initial sync) and an eviction soon after, and an owner
	// crash. Not caught since 5149916 (see simulations/FINDINGS.md,
	// Findings: "replica-overrules-eviction is not caught").
	sabotage.ReplicaOverrulesEviction: {"restart-during-eviction", "owner-crash"},
	// Tombstones aged by local receipt: the node restarted before the heal
	// and the other side at the heal learn deletions late and keep their
	// tombstones past the TTL (tombstone-ttl).
	sabotage.TombstoneReceiptAge: {"long-partition"},
	// No tombstones: a cancel one side has not seen comes back from its
	// copy at the heal (no-resurrection).
	sabotage.TombstonesDropped: {"partition-heal", "long-partition"},
	// A copied lease born fresh: the node restarted shortly before the heal
	// pushes the other side's old copies as live, and the side that
	// cancelled them installs them again (no-resurrection). In
	// long-partition-lone that node is its side's only source of them.
	sabotage.CopiedLeaseFresh: {"long-partition-lone", "long-partition", "restart-during-eviction"},
	// A live record older than the TTL installed although its lease is
	// dead: after a partition longer than the TTL the other side's copies
	// of cancelled instances come back (no-resurrection).
	sabotage.StaleRecordsAccepted: {"long-partition"},
	// Every node evicts every application: nodes that do not receive a
	// client's renewals (they go to the owner) evict it, the client's node
	// overrules (renewer-kept), dead clients come back (no-resurrection).
	sabotage.EvictWithoutOwnership: {"steady-churn", "owner-crash"},
	// No grace after start or takeover: the owner that takes over from a
	// crashed one evicts the leases whose renewals went to the crashed one;
	// the clients' nodes overrule (renewer-kept).
	sabotage.NoTakeoverGrace: {"owner-crash", "restart-during-eviction"},
	// No anti-entropy: a healed partition never converges, a restarted
	// node never syncs (convergence, no-missing-renewer; in a rolling
	// restart, restart-convergence after the first restart).
	sabotage.NoAntiEntropy: {"partition-heal", "owner-crash", "rolling-restart"},
	// Per-owner self-preservation: one silent death in an owner's few
	// instances engages it (sp-quiet, eviction-latency), and it does not
	// release after a scale-down (sp-recount-release).
	sabotage.SelfPreservationPerOwner: {"steady-churn", "scale-down", "mass-client-failure"},
	// Tombstones kept for the TTL alone: the long-lease clients cancelled
	// on one side come back from the other side's copies, whose leases
	// still run at the heal (no-resurrection).
	sabotage.TombstoneOutlivedByLease: {"long-lease"},
	// A silent member holds eviction for as long as it is silent: the
	// client killed during the one-way block stays listed until the block
	// ends (silent-member-bound).
	sabotage.SilentMemberHoldsForever: {"silent-member"},
	// The echo of remote regions put back: the polling nodes' pulls are
	// answered with the remote's union (transparent fallback), their
	// region's own instances come back marked and are served over the
	// local ones (region-no-echo).
	sabotage.RemoteEchoOverwritesLocal: {"datacenters"},
	// Every node holds the WAN link, as before links: three nodes of a
	// region follow the remote over the WAN outside every fallback
	// window (region-wan-links).
	sabotage.EveryNodeOnWAN: {"datacenters"},
	// A relayed copy refused as an echo: the node that follows a relay
	// serves none of the region (region-visibility, region-convergence).
	sabotage.RelayedCopyRefused: {"datacenters"},
}

// SabotageRun is one switch's runs (Switch "" for the control runs
// without any).
type SabotageRun struct {
	Switch  sabotage.Switch
	Results []*Result
}

// Catch is one failing verdict that caught a switch: it failed with the
// switch on and passed in the control run of the same scenario.
type Catch struct {
	Scenario string
	Seed     int64
	Verdict  Verdict
}

// Catches returns the verdicts of run that caught its switch against
// control: failed with the switch on and passed in the control run of the
// same scenario and seed. A failure a known server bug explains
// (KnownBugs) catches nothing: it is not the switch's doing.
func (run *SabotageRun) Catches(control *SabotageRun) []Catch {
	type key struct {
		scenario  string
		seed      int64
		invariant string
	}
	passed := map[key]bool{}
	if control != nil {
		for _, r := range control.Results {
			for _, v := range r.Verdicts {
				if v.Pass {
					passed[key{r.Scenario, r.Seed, v.Invariant}] = true
				}
			}
		}
	}
	var out []Catch
	for _, r := range run.Results {
		for _, v := range r.Verdicts {
			if !v.Pass && passed[key{r.Scenario, r.Seed, v.Invariant}] && ExplainFailure(r, v) == nil {
				out = append(out, Catch{Scenario: r.Scenario, Seed: r.Seed, Verdict: v})
			}
		}
	}
	return out
}

// Seeds returns the distinct seeds run ran, in order.
func (run *SabotageRun) Seeds() []int64 {
	var out []int64
	for _, r := range run.Results {
		if !slices.Contains(out, r.Seed) {
			out = append(out, r.Seed)
		}
	}
	slices.Sort(out)
	return out
}

// ErrSabotageNotBuilt is returned by RunSabotage in a build without the
// sabotage tag.
var ErrSabotageNotBuilt = errors.New("simulations: sabotage needs a build with -tags sabotage")

// RunSabotage runs, for every switch in switches (in order, one at a time:
// the switches are process-global), the scenarios plan (nil:
// SabotagePlan) names for it with that switch on, once per seed in seeds,
// parallel at a time; first it runs the union of those scenarios over the
// same seeds with every switch off, as the control. config gives a
// scenario's configuration for a seed. It returns the control first, then
// one SabotageRun per switch. progress, if set, gets one line per finished
// run.
func RunSabotage(ctx context.Context, switches []sabotage.Switch, plan map[sabotage.Switch][]string,
	seeds []int64, config func(Scenario, int64) Config, parallel int, progress func(string)) ([]*SabotageRun, error) {
	if len(seeds) == 0 {
		return nil, errors.New("simulations: RunSabotage needs at least one seed")
	}
	if !sabotage.Enabled {
		return nil, ErrSabotageNotBuilt
	}
	if plan == nil {
		plan = SabotagePlan
	}
	var union []string
	for _, sw := range switches {
		names, ok := plan[sw]
		if !ok {
			return nil, fmt.Errorf("simulations: no sabotage plan for switch %q", sw)
		}
		for _, n := range names {
			if _, ok := ScenarioByName(n); !ok {
				return nil, fmt.Errorf("simulations: sabotage plan for %q names unknown scenario %q", sw, n)
			}
			if !slices.Contains(union, n) {
				union = append(union, n)
			}
		}
	}
	defer func() { _ = sabotage.Set() }()
	runWith := func(sw sabotage.Switch, names []string) (*SabotageRun, error) {
		var err error
		if sw == "" {
			err = sabotage.Set()
		} else {
			err = sabotage.Set(sw)
		}
		if err != nil {
			return nil, err
		}
		jobs := make([]Job, 0, len(names)*len(seeds))
		for _, n := range names {
			sc, _ := ScenarioByName(n)
			for _, sd := range seeds {
				jobs = append(jobs, Job{Scenario: sc, Config: config(sc, sd)})
			}
		}
		label := string(sw)
		if label == "" {
			label = "control"
		}
		res := RunAll(ctx, jobs, parallel, func(_ int, r *Result) {
			if progress != nil {
				progress(fmt.Sprintf("%-28s %-24s seed %-3d %s", label, r.Scenario, r.Seed, VerdictLine(r)))
			}
		})
		if err := sabotage.Set(); err != nil {
			return nil, err
		}
		return &SabotageRun{Switch: sw, Results: res}, ctx.Err()
	}
	control, err := runWith("", union)
	if err != nil {
		return nil, err
	}
	out := []*SabotageRun{control}
	for _, sw := range switches {
		run, err := runWith(sw, plan[sw])
		if err != nil {
			return out, err
		}
		out = append(out, run)
	}
	return out, nil
}

// VerdictLine summarises a result in one line: PASS or FAIL and each
// invariant's mark.
func VerdictLine(r *Result) string {
	if r.Err != "" && len(r.Verdicts) == 0 {
		return "FAIL: " + r.Err
	}
	var parts []string
	for _, v := range r.Verdicts {
		mark := "ok"
		if !v.Pass {
			mark = "FAIL"
		}
		parts = append(parts, fmt.Sprintf("%s=%s", v.Invariant, mark))
	}
	out := passFail(r.Pass) + " (" + strings.Join(parts, ", ") + ")"
	if r.Err != "" {
		out += " run broke off: " + r.Err
	}
	return out
}

// WriteSabotageReport renders runs (the control first) as Markdown: a
// table switch → the scenarios and invariants that caught it, in how many
// of the seeds, with the figures of the first catch; then what the control
// runs measured. It reports whether every switch was caught (in at least
// one seed).
func WriteSabotageReport(w io.Writer, h ReportHeader, runs []*SabotageRun) (bool, error) {
	var b strings.Builder
	b.WriteString("# Heureka sabotage report\n\n")
	if h.Command != "" {
		fmt.Fprintf(&b, "Produced by `%s`", h.Command)
		if h.Revision != "" {
			fmt.Fprintf(&b, " at revision %s", h.Revision)
		}
		if !h.Generated.IsZero() {
			fmt.Fprintf(&b, " on %s", h.Generated.UTC().Format("2006-01-02 15:04 MST"))
		}
		b.WriteString(".\n")
	}
	var control *SabotageRun
	if len(runs) > 0 && runs[0].Switch == "" {
		control, runs = runs[0], runs[1:]
	}
	var seeds []int64
	if control != nil {
		seeds = control.Seeds()
	}
	fmt.Fprintf(&b, "Each switch of internal/sabotage puts one bug back; the scenarios of simulations.SabotagePlan run with it on "+
		"(short durations, %s). A switch is caught in a seed by a verdict that fails with the switch on and passed in the "+
		"control run of the same scenario and seed without any switch.\n\n", seedsText(seeds))
	all := true
	b.WriteString("| switch | caught | seeds that caught it | by (scenario: invariant — seeds; figures of the first) | scenarios run |\n|---|---|---:|---|---|\n")
	for _, run := range runs {
		catches := run.Catches(control)
		sort.SliceStable(catches, func(i, j int) bool {
			if catches[i].Scenario != catches[j].Scenario {
				return catches[i].Scenario < catches[j].Scenario
			}
			return catches[i].Seed < catches[j].Seed
		})
		type byKey struct{ scenario, invariant string }
		var order []byKey
		first := map[byKey]Catch{}
		bySeeds := map[byKey][]int64{}
		caughtSeeds := map[int64]bool{}
		for _, c := range catches {
			k := byKey{c.Scenario, c.Verdict.Invariant}
			if _, ok := first[k]; !ok {
				order = append(order, k)
				first[k] = c
			}
			bySeeds[k] = append(bySeeds[k], c.Seed)
			caughtSeeds[c.Seed] = true
		}
		var by []string
		for _, k := range order {
			by = append(by, fmt.Sprintf("%s: **%s** — %d of %d (%s); %s", k.scenario, k.invariant,
				len(bySeeds[k]), len(run.Seeds()), seedsText(bySeeds[k]), first[k].Verdict.Measured))
		}
		ran := map[string][2]int{} // scenario → failed, runs
		var names []string
		for _, r := range run.Results {
			if _, ok := ran[r.Scenario]; !ok {
				names = append(names, r.Scenario)
			}
			c := ran[r.Scenario]
			c[1]++
			if !r.Pass {
				c[0]++
			}
			ran[r.Scenario] = c
		}
		var ranS []string
		for _, n := range names {
			ranS = append(ranS, fmt.Sprintf("%s FAIL in %d of %d", n, ran[n][0], ran[n][1]))
		}
		caught := "**yes**"
		if len(catches) == 0 {
			caught, all = "**NO**", false
			by = []string{"nothing failed that passed in the control"}
		}
		fmt.Fprintf(&b, "| %s | %s | %d of %d | %s | %s |\n", run.Switch, caught, len(caughtSeeds), len(run.Seeds()),
			mdEscape(strings.Join(by, "<br>")), mdEscape(strings.Join(ranS, ", ")))
	}
	if all {
		fmt.Fprintf(&b, "\n**Every switch (%d) was caught.**\n", len(runs))
	} else {
		b.WriteString("\n**Some switch was not caught.**\n")
	}
	if control != nil {
		b.WriteString("\n## Control runs (no switch)\n\n| scenario | seed | result | failed invariants |\n|---|---:|---|---|\n")
		for _, r := range control.Results {
			var failed []string
			for _, v := range r.Verdicts {
				if !v.Pass {
					failed = append(failed, v.Invariant+" — "+v.Measured)
				}
			}
			if r.Err != "" {
				failed = append(failed, "broke off: "+r.Err)
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", r.Scenario, r.Seed, passFail(r.Pass), mdEscape(strings.Join(failed, "; ")))
		}
		b.WriteString("\nA verdict that failed in the control cannot catch a switch in that seed.\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return all, err
}

// seedsText names seeds for a sentence: "seed 1", "seeds 1–20".
func seedsText(seeds []int64) string {
	switch len(seeds) {
	case 0:
		return "no seed"
	case 1:
		return fmt.Sprintf("seed %d", seeds[0])
	}
	return "seeds " + compactSeeds(seeds)
}
