package simulations

// Invariant checkers
//
// Each checker reads the Observations of one run and returns a Verdict:
// PASS or FAIL against an explicit threshold, the figure it measured and,
// when it fails, the evidence (which instance, which node, when). The
// checkers are plain functions of plain data, so a test can hand them a
// made-up history (a resurrected instance, a node that never converges) and
// see them fail.
//
// Times in details are offsets from the scenario's start ("+12.4s").
//
// Each checker has a file of its own, invariant_<name>.go; this one holds
// what they share: the invariants' names, the Checkers table, Verdict and
// the helpers that read samples, versions and latencies.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Names of the invariants, as scenarios list them.
const (
	InvNoMissingRenewer   = "no-missing-renewer"  // property 1
	InvConvergence        = "convergence"         // property 2
	InvNoResurrection     = "no-resurrection"     // property 3
	InvMembership         = "membership"          // property 4
	InvSelfPreservation   = "self-preservation"   // property 5
	InvSPRecount          = "sp-recount-release"  // property 5
	InvSPQuiet            = "sp-quiet"            // property 5
	InvEvictionLatency    = "eviction-latency"    // property 5
	InvVisibility         = "visibility"          // property 2
	InvTombstoneGC        = "tombstone-ttl"       // property 3
	InvRenewerKept        = "renewer-kept"        // property 1
	InvRestartConvergence = "restart-convergence" // property 2
	InvSilentMemberBound  = "silent-member-bound" // property 5
	InvSPPartition        = "sp-partition"        // property 5
	InvSPAfterHeal        = "sp-after-heal"       // property 5
	InvEvictionAfterHeal  = "eviction-after-heal" // property 5
)

// Verdict is one invariant's judgement of one run.
type Verdict struct {
	// Invariant is the checker's name; Property the number of the property
	// in ARCHITECTURE.md it stands for.
	Invariant string
	Property  int
	// Threshold states the bound; Measured the figure observed.
	Threshold string
	Measured  string
	Pass      bool
	// Details are the evidence: the worst cases, and on failure what broke.
	Details []string
	// Key is the verdict's key figure, for the summaries over many seeds
	// (RESULTS.md).
	Key KeyFigure
}

// KeyFigure is one number a checker measured: the one to compare across
// runs (the worst latency, a share, a count).
type KeyFigure struct {
	// Name says what it is ("max missing", "p99 visibility").
	Name string
	// Value is in Unit; NaN when the run gave none (never converged).
	Value float64
	// Unit is "s", "%" or "" (a count).
	Unit string
}

// keySecs is a key figure in seconds.
func keySecs(name string, d time.Duration) KeyFigure {
	return KeyFigure{Name: name, Value: d.Seconds(), Unit: "s"}
}

// noKey is the key figure of a run that produced no value.
func noKey(name, unit string) KeyFigure { return KeyFigure{Name: name, Value: math.NaN(), Unit: unit} }

// Checker judges observations against thresholds.
type Checker func(o *Observations, th Thresholds) Verdict

// Checkers maps invariant names to their checkers.
var Checkers = map[string]Checker{
	InvNoMissingRenewer:   CheckNoMissingRenewer,
	InvConvergence:        CheckConvergence,
	InvNoResurrection:     CheckNoResurrection,
	InvMembership:         CheckMembership,
	InvSelfPreservation:   CheckSelfPreservation,
	InvSPRecount:          CheckSPRecountRelease,
	InvSPQuiet:            CheckSPQuiet,
	InvEvictionLatency:    CheckEvictionLatency,
	InvVisibility:         CheckVisibility,
	InvTombstoneGC:        CheckTombstoneTTL,
	InvRenewerKept:        CheckRenewerKept,
	InvRestartConvergence: CheckRestartConvergence,
	InvSilentMemberBound:  CheckSilentMemberBound,
	InvSPPartition:        CheckSPPartition,
	InvSPAfterHeal:        CheckSPAfterHeal,
	InvEvictionAfterHeal:  CheckEvictionAfterHeal,
}

// maxDetails caps the evidence lines of a verdict.
const maxDetails = 8

// offset formats t as an offset from the scenario's start.
func (o *Observations) offset(t time.Time) string {
	return fmt.Sprintf("+%.1fs", t.Sub(o.Start).Seconds())
}

// sampleIndex groups the samples by node and application, in time order.
func (o *Observations) sampleIndex() map[[2]string][]*Sample {
	idx := map[[2]string][]*Sample{}
	for i := range o.Samples {
		s := &o.Samples[i]
		k := [2]string{s.Node, s.App}
		idx[k] = append(idx[k], s)
	}
	return idx
}

// sortedInstances returns the instance logs ordered by id.
func (o *Observations) sortedInstances() []*InstanceLog {
	out := make([]*InstanceLog, 0, len(o.Instances))
	for _, l := range o.Instances {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// notCounted adds to v the findings ds that the verdict does not count: how
// many, as what, and the first of them.
func (v *Verdict) notCounted(ds []string, what string) {
	if len(ds) == 0 {
		return
	}
	v.Measured += fmt.Sprintf("; %d %s (not counted)", len(ds), what)
	for i, d := range ds {
		if i == maxDetails/2 {
			break
		}
		v.Details = append(v.Details, "not counted: "+d)
	}
}

// versionIn parses the version of app/id out of a fingerprint: its HLC
// clock and its author.
func versionIn(fp, app, id string) (clock uint64, author string, ok bool) {
	key := "|" + app + "/" + id + "@"
	k := strings.Index(fp, key)
	if k < 0 {
		return 0, "", false
	}
	rest := fp[k+len(key):]
	if e := strings.IndexByte(rest, '|'); e >= 0 {
		rest = rest[:e]
	}
	c, author, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, "", false
	}
	clock, err := strconv.ParseUint(c, 10, 64)
	return clock, author, err == nil
}

// hlcTime is the wall-clock part of an HLC reading.
func hlcTime(clock uint64) time.Time { return time.UnixMilli(int64(clock >> 16)) }

// percentile returns the nearest-rank q-quantile of sorted ds (0 if empty).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(k, 0), len(ds)-1)]
}

// lastRenewal returns when lf's client last registered or renewed
// successfully anywhere (its acknowledgement if nothing else is known).
func lastRenewal(lf *Life) time.Time {
	t := lf.Acked
	for _, r := range lf.Renewed {
		if r.After(t) {
			t = r
		}
	}
	return t
}

// latencyCase is one measured latency with its evidence.
type latencyCase struct {
	id, node string
	from     time.Time
	d        time.Duration
	censored bool // still not done when observation ended
}

// sortCases orders cs longest first and returns their durations ascending.
func sortCases(cs []latencyCase) []time.Duration {
	sort.Slice(cs, func(i, j int) bool { return cs[i].d > cs[j].d })
	ds := make([]time.Duration, len(cs))
	for i, c := range cs {
		ds[len(cs)-1-i] = c.d
	}
	return ds
}
