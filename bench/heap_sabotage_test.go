//go:build sabotage

package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With view-leaf-keeps-replaced-key on, TestReregistrationKeepsHeap's bound
// fails: every B+tree leaf whose first instance was registered again keeps
// the replaced state's strings (run with -tags sabotage).
func TestSabotageViewLeafKeepsReplacedKey(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ViewLeafKeepsReplacedKey))
	defer func() { require.NoError(t, sabotage.Set()) }()
	assert.Greater(t, reregistrationGrowth(t), reregistrationBound, "the check sees the replaced states kept")
}
