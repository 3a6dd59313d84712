package simulations

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckConvergenceAndMembership(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	th.Convergence, th.Membership = 2*time.Second, 2*time.Second
	t.Run("converging in time passes", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.o.FaultsEnd = h.at(1)
		h.o.QuietEnd = h.at(6)
		h.probes(0, 6, func(sec float64, p *Probe) {
			if sec < 2 {
				p.Fingerprint["n1"] = "UP_0_"
				p.Live["n1"] = []string{"n1"}
			}
		})
		assert.True(t, CheckConvergence(h.o, th).Pass)
		assert.True(t, CheckMembership(h.o, th).Pass)
	})
	t.Run("a node that keeps another registry fails", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.o.FaultsEnd = h.at(1)
		h.o.QuietEnd = h.at(6)
		h.probes(0, 6, func(_ float64, p *Probe) { p.Fingerprint["n1"] = "UP_2_|APP/a@1.n0|APP/b@2.n1" })
		v := CheckConvergence(h.o, th)
		require.False(t, v.Pass)
		assert.Equal(t, "never converged", v.Measured)
		assert.Contains(t, strings.Join(v.Details, "\n"), `n1 hold 2 instances, hashcode "UP_2_"`)
	})
	t.Run("converging too late fails", func(t *testing.T) {
		h := newHistory("n0", "n1")
		h.o.FaultsEnd = h.at(1)
		h.o.QuietEnd = h.at(8)
		h.probes(0, 8, func(sec float64, p *Probe) {
			if sec < 4 {
				p.Fingerprint["n1"] = "UP_0_"
				p.Live["n1"] = []string{"n1"}
			}
		})
		assert.False(t, CheckConvergence(h.o, th).Pass)
		assert.False(t, CheckMembership(h.o, th).Pass)
	})
}
