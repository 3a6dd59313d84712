//go:build sabotage

package httpapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With stream-coalesce-trailing on, a lone change waits for the whole
// gathering, and TestStreamLoneChangeGoesOutAtOnce's first check fails:
// nothing goes out until the gate opens (run with -tags sabotage).
func TestSabotageStreamCoalesceTrailing(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.StreamCoalesceTrailing))
	defer func() { require.NoError(t, sabotage.Set()) }()
	h, v, w, gate := heldHub(t)
	addInstance(v, "i-1", 1)
	select {
	case <-w.notify:
		_, _, evs := h.take(w)
		require.Empty(t, evs, "the lone change waits for the gathering")
	case <-time.After(300 * time.Millisecond):
	}
	gate <- time.Now()
	require.Equal(t, []string{"i-1"}, nextEvents(t, h, w))
}
