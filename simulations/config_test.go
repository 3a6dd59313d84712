package simulations

import (
	"testing"
	"time"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/node"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	c.Nodes = 2
	assert.ErrorIs(t, c.Validate(), ErrInvalidConfig)
	c = DefaultConfig()
	c.Timers.LeaseDuration = 1500 * time.Millisecond
	assert.ErrorIs(t, c.Validate(), ErrInvalidConfig)
}

// TestTimersApplyTo: every node timer lands in the node's config, the
// rest of it stays the default.
func TestTimersApplyTo(t *testing.T) {
	tm := DefaultTimers()
	tm.RecountInterval = 8 * time.Second // as scale-down
	cfg := node.DefaultConfig("n0")
	cfg.Replication = cluster.DefaultReplicatorConfig()
	tm.ApplyTo(&cfg)
	assert.Equal(t, 250*time.Millisecond, cfg.Registry.EvictionInterval)
	assert.Equal(t, 2*time.Second, cfg.Registry.RenewalWindow)
	assert.Equal(t, time.Second, cfg.Registry.ExpectedClientRenewalInterval)
	assert.Equal(t, 20*time.Second, cfg.Registry.TombstoneTTL)
	assert.Equal(t, 8*time.Second, cfg.Registry.RenewalThresholdUpdateInterval)
	assert.Equal(t, 100*time.Millisecond, cfg.Replication.RenewFlushInterval)
	assert.Equal(t, 500*time.Millisecond, cfg.Replication.AntiEntropyInterval)
	assert.Equal(t, 500*time.Millisecond, cfg.Replication.LoadInterval)
	assert.Equal(t, 10*time.Second, cfg.Replication.ReadyTimeout)
	assert.Equal(t, node.DefaultConfig("n0").Registry.RenewalPercentThreshold, cfg.Registry.RenewalPercentThreshold)
}

// TestTimersFlags: the flags carry the timers ApplyTo sets, by the heureka
// command's names; the load interval has no flag, and the command's node
// takes a quarter of the renewal window, which DefaultTimers says too.
func TestTimersFlags(t *testing.T) {
	tm := DefaultTimers()
	tm.TombstoneTTL = 8 * time.Second // as long-partition's short runs
	flags := tm.Flags()
	require.Len(t, flags, 16)
	assert.Equal(t, []string{"--tombstone-ttl", "8s"}, flags[6:8])
	assert.NotContains(t, flags, "--load-interval")
	assert.Equal(t, DefaultTimers().RenewalWindow/4, DefaultTimers().LoadInterval)
}
