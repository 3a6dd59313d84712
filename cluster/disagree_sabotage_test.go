//go:build sabotage

package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With views-disagree-holds-forever on, the stranger of
// TestViewsDisagreeHoldIsBounded holds this node's eviction for as long as
// it reports: the dead client is never evicted.
func TestSabotageViewsDisagreeHoldsForever(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ViewsDisagreeHoldsForever))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a, mine, deadMine, _, _ := disagreeCluster(t, []string{"a", "b", "s"})
	bound := holdsLease + a.repl.silentBound()
	assert.Never(t, func() bool { return !a.has(mine, deadMine) }, 4*bound, tick, "the dead client is never evicted")
}

// With views-disagree-union-ring on, the node cut off one way evicts by one
// ring of its members and the strangers: the client that renews through
// the stranger, which does not count this node, is evicted.
func TestSabotageViewsDisagreeUnionRing(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ViewsDisagreeUnionRing))
	defer func() { require.NoError(t, sabotage.Set()) }()
	a, mine, viaStranger, _, _ := disagreeCluster(t, []string{"b", "s"})
	bound := holdsLease + a.repl.silentBound()
	require.Eventually(t, func() bool { return !a.has(mine, viaStranger) }, 4*bound, tick,
		"the client renewing through the stranger is evicted")
}
