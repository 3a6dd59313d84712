//go:build sabotage

package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/memnet"
)

// With dial-per-message on, the fan-out of TestPeerStreamsFlatDialsMemNetwork
// dials a stream for every message (run with -tags sabotage): the dials
// grow with the messages, and with the cluster size.
func TestSabotageDialPerMessage(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.DialPerMessage))
	defer func() { require.NoError(t, sabotage.Set()) }()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	nodes := streamCluster(t, n, nil, nil, "a", "b", "c")
	registerAll(t, nodes[0], nodes, "WARM", 0, 1)
	d0, msgs0 := dials(nodes), nodes[0].repl.Stats().Messages
	for i := range 30 {
		registerAll(t, nodes[i%3], nodes, "ORDERS", i, 1)
	}
	sent := nodes[0].repl.Stats().Messages - msgs0
	out, _ := nodes[0].m.StreamSessions()
	assert.Zero(t, out, "no session")
	assert.GreaterOrEqual(t, dials(nodes)-d0, 3*sent/2, "a dial per message: %d messages from a alone", sent)
}

// With dial-per-message on, TestExchangesRideOnThePeerSession's pulls
// are dialled one by one again: the check sees a dial per pull.
func TestSabotageDialPerMessageExchanges(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.DialPerMessage))
	defer func() { require.NoError(t, sabotage.Set()) }()
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	nodes := streamCluster(t, n, nil, nil, "a", "b")
	registerAll(t, nodes[1], nodes, "ORDERS", 0, 3)
	assert.GreaterOrEqual(t, exchangeDials(t, nodes[0], "b", 20), uint64(20), "a dial per pull")
}
