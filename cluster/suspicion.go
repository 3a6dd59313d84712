package cluster

// Suspicion: memberlist does not expose whom it suspects, so Membership
// watches the probes each member answers and pings a member that has
// answered none (see the Membership doc).

import (
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// suspectPings is how many pings (Memberlist.Ping) a member whose probes
// have gone unanswered must fail before it is suspect.
const suspectPings = 2

// watchProbes runs checkProbes every memberlist ProbeInterval, after a
// random stagger, until Shutdown.
func (m *Membership) watchProbes(iv time.Duration) {
	defer m.wg.Done()
	stagger := time.NewTimer(rand.N(iv) + 1)
	select {
	case <-stagger.C:
	case <-m.stop:
		stagger.Stop()
		return
	}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	for {
		m.checkProbes(iv)
		select {
		case <-tick.C:
		case <-m.stop:
			return
		}
	}
}

// checkProbes suspects the alive members that answered none of this node's
// probes for too long and fail suspectPings pings now (see Suspicion in the
// file comment). iv is memberlist's ProbeInterval.
//
// memberlist probes one live member per ProbeInterval, in a shuffled round
// over all of them, so a member that answers does so at least once every
// 2(n-1) intervals, plus one for slack. Probing can be slower than that
// (failed probes wait longer, and memberlist waits longer still when this
// node's health score is poor), which the window deliberately ignores: a
// member found silent too early is only pinged, and suspect only if it does
// not answer those pings either.
func (m *Membership) checkProbes(iv time.Duration) {
	start := time.Now()
	n := m.ml.NumMembers() // live members, this node included
	window := time.Duration(2*n-1) * iv
	type target struct {
		name string
		addr net.Addr
	}
	var targets []target
	m.mu.Lock()
	if m.left {
		m.mu.Unlock()
		return // memberlist no longer probes after a leave
	}
	for name, mem := range m.members {
		if name != m.cfg.NodeName && mem.State == StateAlive && start.Sub(mem.lastAck) > window {
			targets = append(targets, target{name, &net.UDPAddr{IP: mem.node.Addr, Port: int(mem.node.Port)}})
		}
	}
	m.mu.Unlock()
	if len(targets) == 0 {
		return
	}

	answered := make([]bool, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Go(func() {
			for range suspectPings {
				if _, err := m.ml.Ping(tg.name, tg.addr); err == nil {
					answered[i] = true
					return
				}
			}
		})
	}
	wg.Wait()

	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.stop:
		return // shutting down: pings fail for that reason
	default:
	}
	if m.left {
		return
	}
	for i, tg := range targets {
		mem := m.members[tg.name]
		if mem == nil || mem.State != StateAlive || mem.lastAck.After(start) {
			continue // it changed, or answered a probe, meanwhile
		}
		if answered[i] {
			mem.lastAck = now
			continue
		}
		mem.State, mem.Since = StateSuspect, now
		m.enqueueLocked(queued{ev: MemberEvent{Member: mem.Member}, msg: "cluster: member suspected"})
	}
}
