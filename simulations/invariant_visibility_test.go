package simulations

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckVisibility(t *testing.T) {
	th := DefaultThresholds(DefaultTimers())
	// Registrations acked by n0 every second; n1 lists each lag seconds
	// later; n2 is stalled from 4s to 8s and never lists anything then.
	build := func(lag float64) *Observations {
		h := newHistory("n0", "n1", "n2")
		h.o.QuietEnd = h.at(15)
		var ids []string
		for i := 0; i < 12; i++ {
			id := fmt.Sprintf("r%d", i)
			ids = append(ids, id)
			h.life("APP", id, "n0", float64(i), -1, false)
			h.o.Instances[id].Lives[0].AckedBy = "n0"
		}
		stalled := &Topology{Stalled: map[string]bool{"n2": true}}
		h.probes(0, 15, func(sec float64, p *Probe) {
			if sec >= 4 && sec < 8 {
				p.Topo = stalled
			}
			for _, n := range p.Up {
				fp := "UP_1_"
				for i, id := range ids {
					acked := float64(i) + 0.01
					switch {
					case n == "n0" && sec >= acked,
						n == "n1" && sec >= acked+lag,
						n == "n2" && sec >= acked+0.1 && (sec < 4 || sec >= 8):
						fp += "|APP/" + id + "@1.n0"
					}
				}
				p.Fingerprint[n] = fp
			}
		})
		return h.o
	}
	v := CheckVisibility(build(0.3), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	v = CheckVisibility(build(2), th)
	require.False(t, v.Pass, "%s", v.Measured)
	assert.Contains(t, v.Details[0], "listed on n1 2.0")
}
