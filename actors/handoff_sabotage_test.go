//go:build sabotage

package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With no-ownership-handoff on, the check of
// TestHandedLeaseExpiresALeaseAfterItsRenewal fails: the handed ages are
// dropped, and the dead client's lease runs a whole lease of grace from the
// takeover instead of a lease from its last renewal (run with -tags
// sabotage).
func TestSabotageNoOwnershipHandoff(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.NoOwnershipHandoff))
	defer func() { require.NoError(t, sabotage.Set()) }()

	r, wall, mono := takeoverFixture(t)
	adopt(t, r, []LeaseAge{{ID: "live", Age: 2 * time.Second}, {ID: "dead", Age: 20 * time.Second}})
	elapse(11*time.Second, wall, mono)
	assert.False(t, expired(t, r, "dead"), "the handoff was dropped, yet the lease ran out before its grace")
}
