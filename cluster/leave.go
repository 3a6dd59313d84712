package cluster

// Leaving: a node tells every live member before memberlist's own leave
// message, so that peers record it as left rather than dead.

import (
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/heureka/heureka/internal/sabotage"
)

// Leave announces to the cluster that this node leaves, and waits up to
// timeout (Config.LeaveTimeout if ≤ 0) for the announcement to be gossiped.
// Peers then list the node as "left". The node keeps answering gossip until
// Shutdown, but does not rejoin. Leave is idempotent.
func (m *Membership) Leave(timeout time.Duration) error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	m.mu.Lock()
	st, left := m.state, m.left
	m.mu.Unlock()
	switch {
	case st == stateNew:
		return ErrNotStarted
	case st == stateStopped:
		return ErrShutdown
	case left:
		return nil
	}
	return m.leaveLocked(timeout)
}

// leaveLocked does Leave; m.lifecycle must be held.
func (m *Membership) leaveLocked(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = m.cfg.LeaveTimeout
	}
	deadline := time.Now().Add(timeout)
	// Before memberlist's leave (a dead message about ourselves, which peers
	// cannot tell from a failure), tell every live member that we are
	// leaving: directly and reliably, then by gossiping the leaving flag in
	// our meta for any member the direct notice missed. Both are best
	// effort: a member that got neither records the node as dead, not left.
	m.leaving.Store(true)
	m.announceLeave(deadline)
	wait := leaveWait(deadline)
	if sabotage.On(sabotage.LeaveWaitsUnbounded) {
		wait = time.Until(deadline) // ≤ 0 once announceLeave used it all
	}
	if err := m.ml.UpdateNode(wait); err != nil {
		m.log.Debug("cluster: leave flag not fully gossiped", "err", err)
	}
	err := m.ml.Leave(leaveWait(deadline))
	m.mu.Lock()
	m.left = true
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("cluster: left the cluster, announcement not confirmed", "err", err)
		return fmt.Errorf("cluster: leave: %w", err)
	}
	m.log.Info("cluster: left the cluster")
	return nil
}

// leaveWait is how long memberlist may wait for a leave broadcast to go
// out: what is left until deadline, but at least a millisecond.
// memberlist's UpdateNode and Leave wait without limit for a timeout ≤ 0,
// and with the others gone the broadcast may never go out: announceLeave
// can spend the whole leave timeout (many members, slow streams), and the
// node's Stop then hung for good (BUG-8 of the simulations).
func leaveWait(deadline time.Time) time.Duration {
	return max(time.Until(deadline), time.Millisecond)
}

// announceLeave sends ctlLeaving to every live member in parallel and waits
// for the sends until deadline. Sends still running then finish on their own
// (within Config.StreamTimeout); Shutdown waits for them.
func (m *Membership) announceLeave(deadline time.Time) {
	m.mu.Lock()
	var peers []memberlist.Node
	for name, mem := range m.members {
		if name != m.cfg.NodeName && mem.State.Live() {
			peers = append(peers, mem.node)
		}
	}
	m.mu.Unlock()
	msg := append([]byte{controlPrefix, ctlLeaving}, m.cfg.NodeName...)
	done := make(chan struct{}, len(peers))
	for _, p := range peers {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			if err := m.ml.SendReliable(&p, msg); err != nil {
				m.log.Debug("cluster: leave notice not delivered", "member", p.Name, "err", err)
			}
			done <- struct{}{}
		}()
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for range peers {
		select {
		case <-done:
		case <-t.C:
			return
		}
	}
}

// handleControl applies a control message from a peer (without its prefix).
func (m *Membership) handleControl(b []byte) {
	if len(b) == 0 {
		return
	}
	switch b[0] {
	case ctlLeaving:
		name := string(b[1:])
		m.mu.Lock()
		if mem := m.members[name]; mem != nil && !mem.leaving {
			mem.leaving = true
			m.enqueueLocked(queued{ev: MemberEvent{Member: mem.Member}, msg: "cluster: member is leaving", debug: true})
		}
		m.mu.Unlock()
	}
}
