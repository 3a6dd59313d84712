//go:build sabotage

package federation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
)

// With remote-echo-overwrites-local on, each of the three defences against
// echoes is gone: the pull looks like a client's read, a marked (re-exported)
// instance is served, and a remote copy replaces the local instance with its
// id (run with -tags sabotage).
func TestSabotageRemoteEchoOverwritesLocal(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RemoteEchoOverwritesLocal))
	defer func() { require.NoError(t, sabotage.Set()) }()

	p := onePull(t)
	assert.Empty(t, p.query, "the sabotaged pull asks for every region")
	assert.NotEqual(t, UserAgent, p.agent)
	assert.Empty(t, p.identity)

	r := newRegionState("dc2", "dc1")
	echo := inst("A", "a1", actors.StatusUp, 1)
	echo.Metadata = map[string]string{MarkerKey: "dc1"}
	r.replace([]*actors.Instance{echo}, time.Unix(1, 0))
	assert.Len(t, r.snapshot().apps["A"].instances, 1, "the echo is served")

	f, v := mergeFixture(t)
	assert.Equal(t, "the remote copy of BOTH/same-id replaced the local one", localWins(f, v.Snapshot()))
}
