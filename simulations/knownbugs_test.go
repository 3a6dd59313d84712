package simulations

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKnownBugIsReported checks what an entry of KnownBugs does, whatever
// the open bugs are (their matchers have tests of their own): with a
// made-up one, ExplainFailure names it for the failed verdicts its matcher
// takes and for nothing else, the report marks those verdicts and lists the
// bug, and a sabotage run's failure it explains catches nothing. Not
// parallel: it replaces KnownBugs.
func TestKnownBugIsReported(t *testing.T) {
	saved := KnownBugs
	t.Cleanup(func() { KnownBugs = saved })
	KnownBugs = []KnownBug{{ID: "BUG-0", Title: "a made-up bug",
		Explains: func(r *Result, v Verdict) bool { return v.Invariant == InvMembership }}}

	failed := Verdict{Invariant: InvMembership, Property: 4, Measured: "m"}
	r := &Result{Scenario: "partition-heal", Seed: 1, Verdicts: []Verdict{failed}}
	bug := ExplainFailure(r, failed)
	require.NotNil(t, bug)
	assert.Equal(t, "BUG-0", bug.ID)
	passed := failed
	passed.Pass = true
	assert.Nil(t, ExplainFailure(r, passed), "a passing verdict needs no explanation")
	assert.Nil(t, ExplainFailure(r, Verdict{Invariant: InvConvergence}), "not the bug's evidence")

	var b bytes.Buffer
	require.NoError(t, WriteReport(&b, ReportHeader{Command: "test"}, []*Result{r}))
	assert.Contains(t, b.String(), "| FAIL (known server bug BUG-0) |")
	assert.Contains(t, b.String(), "## Known server bugs seen in this run\n\n- **BUG-0**: a made-up bug.")

	control := &SabotageRun{Results: []*Result{{Scenario: "partition-heal", Seed: 1,
		Verdicts: []Verdict{passed}}}}
	sabotaged := &SabotageRun{Switch: "no-anti-entropy", Results: []*Result{r}}
	assert.Empty(t, sabotaged.Catches(control), "a failure a known bug explains is not the switch's doing")
}
