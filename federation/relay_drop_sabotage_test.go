//go:build sabotage

package federation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// Each switch puts one of the relay drop bugs back, and the check of the
// test that covers it fails (run with -tags sabotage).
func TestSabotageRelayDrop(t *testing.T) {
	for _, c := range []struct {
		sw    sabotage.Switch
		check func(*testing.T) string
		says  string
	}{
		{sabotage.RelayStreamCutOnDrop, relayDropAndHeal, "the relay's stream was cut"},
		{sabotage.RelayHealNotRevived, relayDropAndHeal, "on the relay's keep-alives alone, the region is"},
		{sabotage.RelayFollowerDropsAhead, relayStaleThenHeal, "the follower dropped the region while its relay held it"},
	} {
		t.Run(string(c.sw), func(t *testing.T) {
			require.NoError(t, sabotage.Set(c.sw))
			defer func() { require.NoError(t, sabotage.Set()) }()
			assert.Contains(t, c.check(t), c.says)
		})
	}
}
