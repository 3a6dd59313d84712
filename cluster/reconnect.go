package cluster

// Staying joined: failed members (and the seeds, when the node finds
// itself alone) are re-dialled until ReconnectTimeout, and members heard
// of are reaped when they are gone for good.

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
)

// maintain runs the periodic duties: forget long-gone members and reconnect
// to failed ones. It starts after a random stagger so that nodes started
// together do not tick together.
func (m *Membership) maintain() {
	defer m.wg.Done()
	iv := m.cfg.ReconnectInterval
	stagger := time.NewTimer(rand.N(iv) + 1)
	select {
	case <-stagger.C:
	case <-m.stop:
		stagger.Stop()
		return
	}
	// Members that left are re-dialled at a faster pace for a while
	// (redialLeft): a restarted seed that was started without --join
	// finds nobody by itself, so the others must find it, within seconds.
	fast := min(iv, leftRedialInterval)
	tick := time.NewTicker(fast)
	defer tick.Stop()
	last := time.Time{}
	for {
		if time.Since(last) >= iv-fast/2 {
			last = time.Now()
			m.reap()
			m.reconnect()
		} else {
			m.redialLeft()
		}
		select {
		case <-tick.C:
		case <-m.stop:
			return
		}
	}
}

// heardOf is a failed member known only from a peer's state.
type heardOf struct {
	addr string
	at   time.Time
}

// reap forgets members dead longer than ReconnectTimeout or left longer than
// TombstoneTimeout.
func (m *Membership) reap() {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, h := range m.heardDead {
		if _, known := m.members[name]; known || now.Sub(h.at) > m.cfg.ReconnectTimeout {
			delete(m.heardDead, name)
		}
	}
	for name, mem := range m.members {
		if (mem.State == StateDead && now.Sub(mem.Since) > m.cfg.ReconnectTimeout) ||
			(mem.State == StateLeft && now.Sub(mem.Since) > m.cfg.TombstoneTimeout) {
			delete(m.members, name)
			m.enqueueLocked(queued{ev: MemberEvent{Member: mem.Member}, msg: "cluster: forgot member", debug: true})
		}
	}
}

// reconnectPerRound bounds how many failed members one reconnect round
// dials (memberlist's Join dials them one after another, each up to its
// timeout).
const reconnectPerRound = 3

// reconnect tries to join failed members, up to reconnectPerRound a round
// in turn (sorted by name, continuing where the last round stopped), so
// each is tried within a bounded number of rounds however many there are;
// and the seeds when this node has joined before but now sees no live peer
// (a partition that outlasted memberlist's gossip to the dead, or peers
// that all restarted elsewhere).
func (m *Membership) reconnect() {
	m.mu.Lock()
	dead := map[string]string{} // name → address
	alone := true
	for name, mem := range m.members {
		switch {
		case name == m.cfg.NodeName:
		case mem.State == StateDead:
			dead[name] = mem.Address
		case mem.State == StateLeft && !sabotage.On(sabotage.NoRedialLeft):
			// A member that left may come back at the same address
			// without any seed of its own (a restarted seed): keep
			// dialling it until it is forgotten (TombstoneTimeout).
			dead[name] = mem.Address
		case mem.State.Live():
			alone = false
		}
	}
	for name, h := range m.heardDead {
		if _, known := m.members[name]; !known {
			dead[name] = h.addr
		}
	}
	left := m.left
	var targets []string
	targets, m.reconnectAfter = reconnectTargets(dead, m.reconnectAfter, reconnectPerRound)
	m.mu.Unlock()
	if left {
		return
	}
	select {
	case <-m.joined:
		if alone && len(m.cfg.Join) > 0 {
			seeds, _, _ := m.resolveSeeds(context.Background())
			targets = append(targets, seeds...)
		}
	default: // joinLoop is still at it
	}
	if len(targets) == 0 {
		return
	}
	n, err := m.ml.Join(targets)
	if n > 0 {
		m.log.Debug("cluster: reconnected", "targets", targets, "answered", n)
	} else {
		m.log.Debug("cluster: reconnect failed", "targets", targets, "err", err)
	}
}

// reconnectTargets returns the addresses of up to n of the failed members
// dead (name → address) in name order, starting after the name after, and
// the name of the last one returned.
func reconnectTargets(dead map[string]string, after string, n int) ([]string, string) {
	names := slices.Sorted(maps.Keys(dead))
	start, found := slices.BinarySearch(names, after)
	if found {
		start++ // the first name after the last one dialled
	}
	var targets []string
	for i := range min(len(names), n) {
		after = names[(start+i)%len(names)]
		targets = append(targets, dead[after])
	}
	return targets, after
}
