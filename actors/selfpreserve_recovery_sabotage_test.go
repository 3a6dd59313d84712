//go:build sabotage

package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With sp-no-recovery on, self-preservation stays engaged after the heal
// of a partition under churn: the silently dead churn clients keep the
// live share under the threshold, and nothing is evicted for a window and
// a half (the checks of TestRecoveryReleasesAfterPartitionUnderChurn fail).
func TestSabotageSPNoRecovery(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SPNoRecovery))
	defer func() { require.NoError(t, sabotage.Set()) }()

	f, churn := partitionUnderChurn(t, 5*time.Minute)
	dead := f.silentlyDead()
	churn(prodWindow + prodWindow/2)
	assert.True(t, f.sp.engaged(), "still engaged after the heal: %s", f.sp.reason())
	for _, i := range dead {
		assert.False(t, f.gone[i], "churn client %d, dead at the heal, is still listed", i)
	}
}
