//go:build sabotage

package actors

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With fast-renew-not-applied on, the check of
// TestFastRenewAppliedBeforeReads fails: the renewal was answered 200 but
// the lease expires a lease after its registration (run with -tags
// sabotage).
func TestSabotageFastRenewNotApplied(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.FastRenewNotApplied))
	defer func() { require.NoError(t, sabotage.Set()) }()

	r, clock := fastRenewFixture(t, nil)
	clock.Advance(20 * time.Second)
	_, ok := r.fastRenew(RenewRequest{App: "APP", ID: "i-1"})
	require.True(t, ok)
	clock.Advance(20 * time.Second)
	_, expired, found, err := r.Get(context.Background(), "APP", "i-1")
	require.NoError(t, err)
	require.True(t, found)
	assert.True(t, expired, "the renewal answered 200 was lost")
}
