package simulations

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestCheckRestartConvergence builds the probes of a rolling restart: one
// where the cluster agrees 1 s after the restart passes; one where the
// restarted node stays empty (its initial sync never came) fails, as does a
// run without any restart.
func TestCheckRestartConvergence(t *testing.T) {
	start := time.Now()
	nodes := []string{"n0", "n1", "n2"}
	th := DefaultThresholds(DefaultTimers())
	probe := func(at time.Duration, fps ...string) Probe {
		p := Probe{At: start.Add(at), Up: nodes, Ready: map[string]bool{}, Fingerprint: map[string]string{}, Live: map[string][]string{}}
		for i, n := range nodes {
			p.Ready[n] = true
			p.Fingerprint[n] = fps[i]
			p.Live[n] = nodes
		}
		return p
	}
	obs := func(restartedFP string) *Observations {
		o := &Observations{Start: start, End: start.Add(30 * time.Second), Nodes: nodes,
			Timeline: []Event{{At: 2 * time.Second, Kind: "restart", Detail: "n2 restarted"}}}
		for at := 2 * time.Second; at < 30*time.Second; at += time.Second {
			fp := restartedFP
			if at >= 3*time.Second && restartedFP == "good" {
				fp = "A"
			}
			o.Probes = append(o.Probes, probe(at, "A", "A", fp))
		}
		return o
	}
	v := CheckRestartConvergence(obs("good"), th)
	assert.True(t, v.Pass, v.Measured)
	assert.InDelta(t, 1.0, v.Key.Value, 0.01)

	v = CheckRestartConvergence(obs("empty"), th)
	assert.False(t, v.Pass, v.Measured)
	assert.Contains(t, strings.Join(v.Details, "\n"), "never agreed again")

	o := obs("good")
	o.Timeline = nil
	assert.False(t, CheckRestartConvergence(o, th).Pass)
}
