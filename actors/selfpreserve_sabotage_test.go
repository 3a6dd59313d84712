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
