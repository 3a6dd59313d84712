//go:build linux

package netns

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestServerFlagsAreTheSimulationsTimers: the flags the nodes run with,
// rendered from the simulations' timers, are the ones this harness passed
// when they were written out by hand. Needs no root.
func TestServerFlagsAreTheSimulationsTimers(t *testing.T) {
	assert.Equal(t, []string{
		"--eviction-interval", "250ms",
		"--renewal-window", "2s",
		"--expected-client-renewal-interval", "1s",
		"--tombstone-ttl", "20s",
		"--renewal-threshold-update-interval", "30s",
		"--renew-forward-interval", "100ms",
		"--anti-entropy-interval", "500ms",
		"--ready-timeout", "10s",
	}, ServerFlags)
}
