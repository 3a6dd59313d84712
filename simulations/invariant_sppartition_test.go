package simulations

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

func TestCheckSPPartition(t *testing.T) {
	th := DefaultThresholds(DefaultTimers()) // engage ≤ 5s, release ≤ 7s
	build := func(n1Engages float64) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timeline = []Event{{At: 5 * time.Second, Kind: "partition"}, {At: 15 * time.Second, Kind: "heal"}}
		h.o.QuietEnd = h.at(30)
		for i := range 10 {
			h.life("ORDERS", fmt.Sprintf("o%d", i), "n0", 1, -1, false)
		}
		h.probes(0, 30, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				engaged := sec >= 6 && sec < 17
				if n == "n1" {
					engaged = sec >= n1Engages && sec < 17
				}
				p.SP[n] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, ExpirationEnabled: !engaged}
			}
		})
		return h.o
	}
	v := CheckSPPartition(build(7), th)
	assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
	assert.Contains(t, v.Measured, "engaged within 2.00s")
	v = CheckSPPartition(build(99), th) // the minority never engages
	require.False(t, v.Pass)
	assert.Contains(t, v.Details[0], "n1 never engaged")
	v = CheckSPPartition(build(12), th) // 7 s after the split
	require.False(t, v.Pass)
	assert.Contains(t, v.Details[0], "n1 engaged 7.00s after the split")

	// Never released after the heal: a failure while the clients alive could
	// renew above the threshold, none when too many died while engaged.
	stuck := func(alive int) *Observations {
		h := newHistory("n0", "n1")
		h.o.Timeline = []Event{{At: 5 * time.Second, Kind: "partition"}, {At: 15 * time.Second, Kind: "heal"}}
		h.o.QuietEnd = h.at(30)
		for i := range 10 {
			end := -1.0
			if i >= alive {
				end = 10 // died silently during the partition
			}
			h.life("ORDERS", fmt.Sprintf("o%d", i), "n0", 1, end, false)
		}
		h.probes(0, 30, func(sec float64, p *Probe) {
			for _, n := range p.Up {
				p.SP[n] = actors.SelfPreservationStatus{Enabled: true, Expected: 10, Threshold: 17, ExpirationEnabled: sec < 6}
			}
		})
		return h.o
	}
	v = CheckSPPartition(stuck(10), th)
	assert.False(t, v.Pass, "every client alive, yet no release")
	assert.Contains(t, strings.Join(v.Details, "; "), "never released")
	v = CheckSPPartition(stuck(9), th)
	assert.False(t, v.Pass, "9 of 10 alive is above 85%%: the release is due")
	v = CheckSPPartition(stuck(8), th)
	assert.True(t, v.Pass, "%v", v.Details)
	assert.Contains(t, strings.Join(v.Details, "; "), "8 clients alive when it was due (+22.0s), below 85% of the 10 its engagement protected")

	// Clients that registered and died while engaged put Expected at 13
	// against the 10 alive, but the engagement protected 10: the recovery
	// release is due, and never releasing fails.
	churned := stuck(10)
	for i := range churned.Probes {
		for n, sp := range churned.Probes[i].SP {
			sp.Expected, sp.Protected = 13, 10
			churned.Probes[i].SP[n] = sp
		}
	}
	v = CheckSPPartition(churned, th)
	assert.False(t, v.Pass, "the dead of the partition are no excuse")
	assert.Contains(t, strings.Join(v.Details, "; "), "never released")
}
