//go:build sabotage

package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With renew-not-found-before-ready on, the renewal of
// TestRenewWaitsForTheInitialSync answers 404 before the sync brings the
// instance.
func TestSabotageRenewNotFoundBeforeReady(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.RenewNotFoundBeforeReady))
	defer func() { require.NoError(t, sabotage.Set()) }()
	assert.Equal(t, http.StatusNotFound, renewBeforeReady(t))
}
