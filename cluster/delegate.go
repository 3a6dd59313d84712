package cluster

// memberlist's delegates: the hooks memberlist calls with its locks held.

import (
	"slices"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/heureka/heureka/internal/sabotage"
)

// hooks implements memberlist's delegate interfaces for a Membership, so
// that those methods stay off Membership's own API. memberlist calls them
// with its locks held: they only touch m.mu and the user's delegates.
type hooks struct{ m *Membership }

var (
	_ memberlist.Delegate      = (*hooks)(nil)
	_ memberlist.EventDelegate = (*hooks)(nil)
	_ memberlist.AliveDelegate = (*hooks)(nil)
	_ memberlist.MergeDelegate = (*hooks)(nil)
	_ memberlist.PingDelegate  = (*hooks)(nil)
)

// NodeMeta returns the meta header followed by the user delegate's meta.
func (h *hooks) NodeMeta(limit int) []byte {
	var flags byte
	if h.m.leaving.Load() {
		flags |= metaLeaving
	}
	if !h.m.cfg.noStreams {
		flags |= metaStreams
		if !h.m.cfg.noSessionExchanges {
			flags |= metaSessionExchanges
		}
	}
	lo, hi := h.m.protocolRange()
	if sabotage.On(sabotage.ProtocolRangeNotAdvertised) {
		lo = hi // advertise the highest version only, as before the range
	}
	flags |= (hi - lo) << metaSpanShift
	meta := []byte{metaMagic, lo, flags}
	if d := h.m.cfg.Delegate; d != nil {
		user := d.NodeMeta(limit - metaHeaderLen)
		if len(user) > limit-metaHeaderLen {
			// memberlist would panic; drop the user part rather than
			// truncate it into something that misreads.
			h.m.log.Error("cluster: delegate NodeMeta too long, dropped", "len", len(user), "limit", limit-metaHeaderLen)
			user = nil
		}
		meta = append(meta, user...)
	}
	return meta
}

// NotifyMsg handles Membership's control messages and passes every other
// user message to the user delegate.
func (h *hooks) NotifyMsg(b []byte) {
	if len(b) > 0 && b[0] == controlPrefix {
		h.m.handleControl(b[1:])
		return
	}
	if d := h.m.cfg.Delegate; d != nil {
		d.NotifyMsg(b)
	}
}

// GetBroadcasts asks the user delegate for broadcasts.
func (h *hooks) GetBroadcasts(overhead, limit int) [][]byte {
	if d := h.m.cfg.Delegate; d != nil {
		return d.GetBroadcasts(overhead, limit)
	}
	return nil
}

// NotifyAlive refuses peers on another wire protocol, then asks the user's
// AliveDelegate.
func (h *hooks) NotifyAlive(n *memberlist.Node) error {
	if err := h.m.checkPeer(n); err != nil {
		h.m.noteRefused(n.Name, err)
		return err
	}
	if a := h.m.cfg.Alive; a != nil {
		return a.NotifyAlive(n)
	}
	return nil
}

// NotifyMerge cancels a join with a cluster that has a live member on
// another wire protocol; memberlist then fails the join on both sides.
func (h *hooks) NotifyMerge(peers []*memberlist.Node) error {
	h.m.noteHeardDead(peers)
	if slices.ContainsFunc(peers, func(n *memberlist.Node) bool { return n.Name == h.m.cfg.NodeName }) {
		// A joiner's state does not list its seed unless the two met
		// before; the seeds' state lists a fresh process only if it
		// lists a previous one. Only joinLoop reads this, after its join.
		h.m.predecessor.Store(true)
	}
	for _, n := range peers {
		if n.State != memberlist.StateAlive && n.State != memberlist.StateSuspect {
			continue
		}
		if err := h.m.checkPeer(n); err != nil {
			h.m.noteRefused(n.Name, err)
			return err
		}
	}
	h.m.noteMerge(peers)
	return nil
}

// AckPayload puts this process's boot id in probe acks (see bootID).
func (h *hooks) AckPayload() []byte { return h.m.boot.payload() }

// NotifyPingComplete notes that a peer answered one of memberlist's probes
// directly, and clears this node's suspicion of it (memberlist reports no
// event when a suspect refutes).
func (h *hooks) NotifyPingComplete(n *memberlist.Node, _ time.Duration, payload []byte) {
	m := h.m
	m.noteBoot(n, payload)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.members[n.Name]
	if mem == nil || !mem.State.Live() {
		return
	}
	mem.lastAck = now
	if mem.State == StateSuspect {
		mem.State, mem.Since = StateAlive, now
		m.enqueueLocked(queued{ev: MemberEvent{Member: mem.Member}, msg: "cluster: member no longer suspected"})
	}
}

// NotifyJoin records a member as alive (joined, or back from dead) and
// lets the peer streams dial it at once.
func (h *hooks) NotifyJoin(n *memberlist.Node) {
	h.m.record(MemberJoin, n, "cluster: member joined")
	h.m.mu.Lock()
	sp := h.m.streams
	h.m.mu.Unlock()
	if sp != nil {
		sp.rejoined(n.Name)
	}
}

// NotifyUpdate records a member's new meta.
func (h *hooks) NotifyUpdate(n *memberlist.Node) {
	h.m.record(MemberUpdate, n, "cluster: member updated")
}

// NotifyLeave records a member as dead or left.
func (h *hooks) NotifyLeave(n *memberlist.Node) {
	h.m.record(MemberLeave, n, "")
}
