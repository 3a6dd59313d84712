//go:build sabotage

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With sync-answer-dialled on, b of TestPullThroughOneWayBlock never gets
// a's registration while the block lasts (run with -tags sabotage): every
// answer of a's travels on a stream a dials, and a cannot dial b.
func TestSabotageSyncAnswerDialled(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.SyncAnswerDialled))
	defer func() { require.NoError(t, sabotage.Set()) }()
	b := oneWayBlocked(t, nil)
	assert.Never(t, func() bool { return b.has("ONEWAY", "i-1") }, 3*time.Second, tick,
		"b gets nothing of a's through the block (30 anti-entropy rounds)")
}
