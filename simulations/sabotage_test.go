//go:build sabotage

package simulations

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// TestSabotage puts every bug of internal/sabotage back, one switch at a
// time, runs the scenarios SabotagePlan names for it and requires that a
// verdict catches it (fails with the switch on, passed in the control run
// without). It runs only in a sabotage build:
//
//	go test -tags sabotage -run TestSabotage -timeout 60m ./simulations/
//
// `make sabotage` runs the same harness through heureka-sim.
func TestSabotage(t *testing.T) {
	runs, err := RunSabotage(context.Background(), sabotage.All, nil, []int64{testSeed}, func(sc Scenario, seed int64) Config {
		cfg := ShortConfig(sc, seed)
		if testing.Short() {
			cfg.Nodes = 3
		}
		return cfg
	}, parallelScenarios, func(line string) { t.Log(line) })
	require.NoError(t, err)
	var b bytes.Buffer
	caught, err := WriteSabotageReport(&b, ReportHeader{Command: "go test -tags sabotage -run TestSabotage ./simulations/"}, runs)
	require.NoError(t, err)
	t.Log("\n" + b.String())
	require.True(t, caught, "a switch was not caught; see the table above")
}
