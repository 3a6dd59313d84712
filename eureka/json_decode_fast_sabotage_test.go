//go:build sabotage

package eureka

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// TestSabotageFastJSONUnvalidated: without the strict validation, the fast
// decoder registers at least one body that JSON (and encoding/json)
// forbids: what TestDecodeInstanceJSONFastRefusesWhatJSONForbids guards.
func TestSabotageFastJSONUnvalidated(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.FastJSONUnvalidated))
	defer func() { require.NoError(t, sabotage.Set()) }()
	accepted := 0
	for _, body := range fastJSONLenientBodies {
		if _, err := decodeInstanceJSONFast([]byte(body)); err == nil {
			accepted++
		}
	}
	assert.Positive(t, accepted, "the sabotaged fast decoder accepts a body JSON forbids")
}
