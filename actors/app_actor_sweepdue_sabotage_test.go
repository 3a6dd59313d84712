//go:build sabotage

package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With sweep-skips-changed-apps on, the check of TestSweepVisitsChangedApps
// fails: a registration leaves SVC's due time an hour ahead, so the sweeps
// skip SVC and its unrenewed 1 s lease is never evicted (run with -tags
// sabotage).
func TestSabotageSweepSkipsChangedApps(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SweepSkipsChangedApps))
	defer func() { require.NoError(t, sabotage.Set()) }()

	r, short := sweepDueFixture(t)
	assert.Never(t, func() bool { return !exists(t, r, short) }, 3*time.Second, 50*time.Millisecond,
		"the lease was evicted although the sweeps skip its application")
}
