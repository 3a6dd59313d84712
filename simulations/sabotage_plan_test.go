package simulations

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

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
