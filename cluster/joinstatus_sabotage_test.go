//go:build sabotage

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With ready-despite-refusal on, the wrong-key joiner of
// TestWrongKeyJoinerNeverReady becomes ready by its ready timeout (run with
// -tags sabotage): it would serve its own empty registry.
func TestSabotageReadyDespiteRefusal(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ReadyDespiteRefusal))
	defer func() { require.NoError(t, sabotage.Set()) }()
	key := []byte("0123456789abcdef")
	x, _ := refusedJoiner(t, nil, replNodeOpts{key: key}, replNodeOpts{key: []byte("fedcba9876543210")})
	assert.Eventually(t, x.repl.Ready, waitFor, tick, "the refused node is ready by the timeout")
}

// With no-redial-left on, the seed of TestRestartedSeedRejoinsAfterLeave,
// restarted without seeds, stays a cluster of its own: after many
// reconnect rounds it still lists only itself.
func TestSabotageNoRedialLeft(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.NoRedialLeft))
	defer func() { require.NoError(t, sabotage.Set()) }()
	nodes, ms := restartSeed(t, false)
	rounds := 10 * ms[1].cfg.ReconnectInterval
	time.Sleep(rounds)
	assert.Equal(t, allAre(StateAlive, "a"), states(ms[0]), "the restarted seed found nobody")
	assert.False(t, holdsAll(nodes), "the restarted seed does not hold the registry")
}
