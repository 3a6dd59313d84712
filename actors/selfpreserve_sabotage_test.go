//go:build sabotage

package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With release-without-hysteresis on, the checks of
// selfpreserve_hysteresis_test.go fail: the release takes the one high
// close as the expectation and the live fleet's next ordinary close
// engages self-preservation again at once (run with -tags sabotage).
func TestSabotageReleaseWithoutHysteresis(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ReleaseWithoutHysteresis))
	defer func() { require.NoError(t, sabotage.Set()) }()

	sp := scaleDownSP()
	at := engageAndRelease(t, sp)
	assert.Equal(t, 9, sp.expected, "17 renewals taken as 9 clients")
	closeAll(sp, at, 15)
	assert.True(t, sp.engaged(), "re-engaged half a second after the release")
}

// With the switch on, one high close releases self-preservation and the
// next low one engages it again: it flaps (the check of
// TestOneHighCloseDoesNotFlap fails).
func TestSabotageSelfPreservationFlaps(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.ReleaseWithoutHysteresis))
	defer func() { require.NoError(t, sabotage.Set()) }()

	sp := scaleDownSP()
	at := closeAll(sp, testEpoch, 20, 20, 17)
	require.True(t, sp.engaged())
	at = closeAll(sp, at, 18)
	assert.False(t, sp.engaged(), "released on one high close")
	closeAll(sp, at, 15)
	assert.True(t, sp.engaged(), "and engaged again")
}
