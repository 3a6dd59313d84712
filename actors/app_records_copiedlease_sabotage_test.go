//go:build sabotage

package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With copied-lease-fresh on, the checks of
// TestCopyKeepsTheSendersLastRenewal fail: the restarted node's copy is
// born renewed at its receipt, sent on as renewed then, and the side that
// cancelled the instance installs it again (run with -tags sabotage).
func TestSabotageCopiedLeaseFresh(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.CopiedLeaseFresh))
	defer func() { require.NoError(t, sabotage.Set()) }()

	sent, res := copiedScenario(t)
	assert.Greater(t, sent.LastRenewal, ms(testEpoch), "sent on as renewed at its receipt")
	assert.Equal(t, ApplyInstalled, res, "the cancelled instance is back")
}
