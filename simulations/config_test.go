package simulations

import (
	"testing"
	"time"

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
