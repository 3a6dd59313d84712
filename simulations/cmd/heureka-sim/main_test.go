package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportDirAndProgress runs one short scenario with -report: the
// directory gets report.md, report.html and the charts, standard output
// stays empty, and standard error (not a terminal) has one line for the
// finished run and none per event.
func TestReportDirAndProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario")
	}
	dir := filepath.Join(t.TempDir(), "report")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-scenario", "lossy-network", "-short", "-report", dir}, &stdout, &stderr)
	require.Contains(t, []int{0, 1}, code, stderr.String())
	assert.Empty(t, stdout.String())
	for _, f := range []string{"report.md", "report.html", "lossy-network-seed1-registry.svg", "lossy-network-seed1-convergence.svg"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if assert.NoError(t, err, f) {
			assert.Positive(t, st.Size(), f)
		}
	}
	out := stderr.String()
	assert.NotContains(t, out, "\r")
	assert.Contains(t, out, "[1/1] lossy-network")
	assert.NotContains(t, out, "+  0.0s  start", "events only with -v")
	var runLines int
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[") {
			runLines++
		}
	}
	assert.Equal(t, 1, runLines, out)
}

func TestReportRejectedWithSabotage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"-sabotage", "all", "-report", t.TempDir()}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-report does not apply to -sabotage")
}
