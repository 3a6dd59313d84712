//go:build sabotage

package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With lease-duration-unbounded on, TestAbsurdLeaseDurationRefused fails:
// the registration is taken, its lease overflowed.
func TestSabotageLeaseDurationUnbounded(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.LeaseDurationUnbounded))
	defer func() { require.NoError(t, sabotage.Set()) }()
	j, _, installed := absurdLeaseCodes(t)
	assert.NotEqual(t, http.StatusBadRequest, j.code)
	assert.True(t, installed)
}
