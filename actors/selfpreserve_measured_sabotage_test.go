//go:build sabotage

package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With measured-leases-counted-twice on, every copy raises the
// expectation: 4 where 1 client is new.
func TestSabotageMeasuredLeasesCountedTwice(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.MeasuredLeasesCountedTwice))
	defer func() { require.NoError(t, sabotage.Set()) }()
	assert.Equal(t, 4, copiesAfterRecovery(t))
}
