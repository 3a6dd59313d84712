package simulations

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run is a result of scenario sc with seed sd whose one verdict, inv,
// passed or not.
func run(sc string, sd int64, inv string, pass bool) *Result {
	return &Result{Scenario: sc, Seed: sd, Pass: pass,
		Verdicts: []Verdict{{Invariant: inv, Measured: "m", Pass: pass}}}
}

// Over many seeds a switch is caught only in the seeds whose control run
// of the same scenario passed: a failure the control shares in that seed
// catches nothing, and a switch that fails only where the control failed
// is reported as not caught.
func TestSabotageCatchesPerSeed(t *testing.T) {
	control := &SabotageRun{Results: []*Result{
		run("long-partition", 1, "no-resurrection", false), // the control fails seed 1
		run("long-partition", 2, "no-resurrection", true),
		run("long-partition", 3, "no-resurrection", true),
	}}
	caught := &SabotageRun{Switch: "tombstones-dropped", Results: []*Result{
		run("long-partition", 1, "no-resurrection", false),
		run("long-partition", 2, "no-resurrection", false),
		run("long-partition", 3, "no-resurrection", true),
	}}
	missed := &SabotageRun{Switch: "copied-lease-fresh", Results: []*Result{
		run("long-partition", 1, "no-resurrection", false),
		run("long-partition", 2, "no-resurrection", true),
		run("long-partition", 3, "no-resurrection", true),
	}}
	c := caught.Catches(control)
	require.Len(t, c, 1)
	assert.Equal(t, int64(2), c[0].Seed, "seed 1 failed in the control too")
	assert.Empty(t, missed.Catches(control), "failing only where the control failed is no catch")

	var b bytes.Buffer
	all, err := WriteSabotageReport(&b, ReportHeader{Command: "test"}, []*SabotageRun{control, caught, missed})
	require.NoError(t, err)
	assert.False(t, all, "copied-lease-fresh was not caught")
	assert.Contains(t, b.String(), "| tombstones-dropped | **yes** | 1 of 3 | long-partition: **no-resurrection** — 1 of 3 (seed 2)")
	assert.Contains(t, b.String(), "| copied-lease-fresh | **NO** | 0 of 3 |")
	assert.Contains(t, b.String(), "(short durations, seeds 1–3)")
}
