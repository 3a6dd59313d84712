package simulations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSkewClock checks the node clock the clock-skew scenario drives.
func TestSkewClock(t *testing.T) {
	var c SkewClock
	assert.WithinDuration(t, time.Now(), c.Now(), time.Second)
	c.Set(3 * time.Minute)
	assert.WithinDuration(t, time.Now().Add(3*time.Minute), c.Now(), time.Second)
	assert.Equal(t, 3*time.Minute, c.Offset())
	c.Set(-3 * time.Minute)
	assert.WithinDuration(t, time.Now().Add(-3*time.Minute), c.Now(), time.Second)
}
