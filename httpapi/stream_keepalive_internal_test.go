package httpapi

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The keep-alive a watcher asks for is honoured between the floor (1 s, or
// the configured interval if shorter) and the configured interval.
func TestStreamKeepAliveClamped(t *testing.T) {
	for _, c := range []struct {
		ask        string
		configured time.Duration
		want       time.Duration
	}{
		{"", 15 * time.Second, 15 * time.Second},
		{"5s", 15 * time.Second, 5 * time.Second},
		{"1m", 15 * time.Second, 15 * time.Second},
		{"10ms", 15 * time.Second, time.Second},
		{"10ms", 50 * time.Millisecond, 50 * time.Millisecond},
		{"20ms", 50 * time.Millisecond, 50 * time.Millisecond},
	} {
		got, err := streamKeepAlive(url.Values{"keepalive": {c.ask}}, c.configured)
		if c.ask == "" {
			got, err = streamKeepAlive(url.Values{}, c.configured)
		}
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "keepalive=%s with %v configured", c.ask, c.configured)
	}
}
