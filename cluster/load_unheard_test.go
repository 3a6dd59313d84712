package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
)

// A member whose reports stop reaching this node (its traffic to it
// blocked one way) is unheard while memberlist still counts it alive, and
// heard again once its reports flow.
func TestUnheardMembers(t *testing.T) {
	n := memnet.New(1)
	t.Cleanup(n.Shutdown)
	a, ma := startMemReplNode(t, n, nil, "a")
	_, mb := startMemReplNode(t, n, nil, "b", "a")
	for _, m := range []*Membership{ma, mb} {
		waitView(t, m, allAre(StateAlive, "a", "b"))
	}
	require.Eventually(t, func() bool { return a.repl.UnheardMembers() == 0 }, waitFor, tick, "b's reports reach a")
	n.BlockOneWay([]string{"b"}, []string{"a"})
	require.Eventually(t, func() bool { return a.repl.UnheardMembers() == 1 }, waitFor, tick, "b is unheard")
	n.UnblockOneWay([]string{"b"}, []string{"a"})
	waitView(t, ma, allAre(StateAlive, "a", "b"))
	require.Eventually(t, func() bool { return a.repl.UnheardMembers() == 0 }, waitFor, tick, "b heard again")
}
