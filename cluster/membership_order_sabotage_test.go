//go:build sabotage

package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With members-applied-out-of-order on, the held call applies the list from
// before the join last: the node loses its member and its link.
func TestSabotageMembersAppliedOutOfOrder(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.MembersAppliedOutOfOrder))
	defer func() { require.NoError(t, sabotage.Set()) }()
	members, linked := membersAppliedAfterRace(t, true)
	assert.Equal(t, []string{"a"}, members)
	assert.False(t, linked)
}
