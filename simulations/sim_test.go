package simulations

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a run leaves a goroutine behind: the
// harness must stop every client, node and network it started. Stopped
// nodes wind down asynchronously for a moment, so poll.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(20 * time.Second)
		err := goleak.Find()
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testSeed is the seed the tests run every scenario with.
const testSeed = 1

// raceSlack multiplies the time bounds under the race detector: the nodes
// then run several times slower (and CI machines are shared), so renewals,
// forwarded renewals and replication lag in ways that say nothing about
// the protocol. The shares and counts (survivors, resurrections) stay
// strict.
const raceSlack = 2

// testConfig is the scenarios' configuration in tests: the fixed seed, each
// scenario's shortest duration, a one-second settle tail, time bounds
// widened under -race, and in -short mode three nodes instead of five.
func testConfig(t *testing.T, sc Scenario) Config {
	cfg := ShortConfig(sc, testSeed)
	if raceEnabled {
		th := &cfg.Thresholds
		th.MaxMissing *= raceSlack
		th.Convergence *= raceSlack
		th.Membership *= raceSlack
		th.SPEngage *= raceSlack
		th.SPRelease *= raceSlack
		th.SPRecountSlack *= raceSlack
		th.EvictAfterRelease *= raceSlack
		th.EvictionLatency *= raceSlack
		th.EvictionAfterHeal *= raceSlack
		th.Visibility *= raceSlack
	}
	if testing.Short() {
		cfg.Nodes = 3
	}
	cfg.Progress = func(name string, ev Event) {
		t.Logf("%s +%.1fs %s: %s", name, ev.At.Seconds(), ev.Kind, ev.Detail)
	}
	return cfg
}
