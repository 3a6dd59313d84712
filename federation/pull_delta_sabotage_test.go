//go:build sabotage

package federation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/internal/sabotage"
)

// With delta-forgotten-by-full-fetch on, the poll of
// TestPollPublishesMismatchedDelta leaves the copy holding a2 while the
// ?regions= read serves the region as it was (run with -tags sabotage).
func TestSabotageDeltaForgottenByFullFetch(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.DeltaForgottenByFullFetch))
	defer func() { require.NoError(t, sabotage.Set()) }()

	remote := newTwoMomentsRemote(t)
	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.Stream = false
	c.Remotes = []Remote{{Name: "dc2", URL: remote.URL + "/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	p := f.pullers[0]
	local := view.New(view.DefaultConfig(eureka.Encoders())).Snapshot()

	remote.serve(appsDoc("UP_1_", "a1:UP"), appsDoc("UP_1_"))
	p.tick(context.Background())
	require.Equal(t, []string{"a1"}, servedIDs(t, f, local, false))
	remote.serve(appsDoc("UP_2_", "a1:UP", "a2:UP"), appsDoc("UP_3_", "a2:UP:ADDED"))
	p.tick(context.Background())
	assert.Equal(t, 2, f.Status()[0].Instances, "the copy holds a2")
	assert.Equal(t, []string{"a1"}, servedIDs(t, f, local, false), "the read is the cached document of before")
}
