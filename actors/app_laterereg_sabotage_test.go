//go:build sabotage

package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With late-registration-outranks-cancel on, the checks of
// app_laterereg_test.go fail: the late registration is taken at the node that
// serves it and installed by every node that knew of the cancel, so the
// cancelled instance comes back everywhere (run with -tags sabotage).
func TestSabotageLateRegistrationOutranksCancel(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.LateRegistrationOutranksCancel))
	defer func() { require.NoError(t, sabotage.Set()) }()

	const dirty = 7000
	c := newLateNodes("a", "b", "c")
	a, b := c.nodes["a"], c.nodes["b"]
	c.send(t, b.register(dirtyInstance("i-1", dirty), false), "a", "c")
	c.clock.Advance(time.Second)
	cancel, _ := b.remove("i-1", CauseCancel, false)
	c.send(t, cancel, "a", "c")
	c.clock.Advance(time.Second)

	late, ok := a.tryRegister(dirtyInstance("i-1", dirty), false)
	assert.True(t, ok, "the check that refuses it is off")
	assert.Empty(t, c.send(t, late, "b", "c"), "nobody refuses the late copy")
	assert.ElementsMatch(t, []string{"a", "b", "c"}, c.live("i-1"), "the cancelled instance is back everywhere")
}
