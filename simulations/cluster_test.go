package simulations

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTopologyReachable(t *testing.T) {
	topo := &Topology{Down: map[string]bool{"n4": true}, Groups: [][]string{{"n0", "n1"}, {"n2", "n3"}}}
	assert.True(t, topo.Reachable("n0", "n1"))
	assert.False(t, topo.Reachable("n0", "n2"), "across the partition")
	assert.False(t, topo.Reachable("n0", "n4"), "crashed")
	assert.True(t, (&Topology{}).Reachable("n0", "n2"))
	var none *Topology
	assert.True(t, none.Reachable("n0", "n1"))
}
