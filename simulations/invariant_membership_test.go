package simulations

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckMembershipAfterARestartInAPartition: after the heal, a node
// restarted during the partition that misses the other side (BUG-4's
// evidence), or a node that misses its own side, fails the verdict, and the
// evidence says what the node sees.
func TestCheckMembershipAfterARestartInAPartition(t *testing.T) {
	build := func(gapNode string, gapSees []string) *Result {
		h := newHistory("n0", "n1", "n2")
		h.o.FaultsEnd = h.at(10)
		h.o.QuietEnd = h.at(30)
		h.o.Timeline = []Event{{At: 7 * time.Second, Kind: "restart", Detail: "n0 restarted (fresh process, same address)"}}
		cut := &Topology{Groups: [][]string{{"n0", "n1"}, {"n2"}}}
		h.probes(0, 30, func(sec float64, p *Probe) {
			if sec < 10 {
				p.Topo = cut
			}
			if sec >= 10 && sec < 25 {
				p.Live[gapNode] = gapSees
			}
		})
		r := &Result{Timers: DefaultTimers(), Thresholds: DefaultThresholds(DefaultTimers()), Observations: h.o}
		r.Verdicts = []Verdict{CheckMembership(h.o, r.Thresholds)}
		return r
	}
	r := build("n0", []string{"n0", "n1"})
	require.False(t, r.Verdicts[0].Pass)
	assert.Contains(t, strings.Join(r.Verdicts[0].Details, "\n"), "n0 sees n0,n1")
	r = build("n1", []string{"n1"})
	assert.False(t, r.Verdicts[0].Pass, "n1 misses its own side")
}
