package cluster

// Membership's part of memberlist's push/pull state and its control
// messages: the members this node holds as failed, versioned on its own
// (statePartVersion) so that a node skips what it does not know.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// Membership's push/pull part (see hooks.LocalState) has a version of its
// own, independent of the wire protocol: statePartVersion, in the part's
// header entry (a failed-member entry with an empty name, which the
// previous release skips). Parts other than stateFailed are
// controlPrefix, tag, uvarint length, body: a node skips a part it does
// not know instead of dropping the whole state.
const statePartVersion = 1

// Control messages: a user message whose first byte is controlPrefix is
// Membership's own and is not passed to Config.Delegate. Wire frames start
// with wire.ProtocolVersion, which is never 0 (the constant below fails to
// compile if it ever were).
const (
	controlPrefix byte = 0x00
	// ctlLeaving + node name: "I am about to leave", sent reliably to every
	// live member just before memberlist's leave message.
	ctlLeaving byte = 'L'
	// stateFailed starts Membership's part of a push/pull state (after
	// controlPrefix): the members this node holds as failed, so that a
	// node that started during a partition, whose side's memberlist has
	// already forgotten the other side (GossipToTheDeadTime), learns
	// whom to re-dial after the heal. See hooks.LocalState.
	stateFailed byte = 'F'
	// maxFailedInState bounds how many failed members one push/pull state
	// carries.
	maxFailedInState = 128
)

const _ = uint8(wire.ProtocolVersion - 1) // wire.ProtocolVersion must be > controlPrefix

// LocalState returns the push/pull state: Membership's part, when this
// node holds failed members, followed by the user delegate's state.
//
// memberlist's own state lists a failed member only until
// GossipToTheDeadTime, while Membership keeps it, and re-dials it, until
// ReconnectTimeout. A node that starts during a partition longer than that
// would hear nothing of the other side from its own, and would wait for
// the other side's reconnect attempts or memberlist's periodic push/pull
// after the heal (BUG-4 of the simulations: 12–19 s). With the failed
// members' names and addresses in the state it re-dials them itself (see
// reconnect).
//
// Membership's part is controlPrefix, stateFailed, a uvarint count, then
// for each member its name and address as uvarint-length-prefixed
// strings. The first entry is the part's header: an empty name (which the
// previous release skips as it skips any entry without a name) and, in
// the address's place, statePartVersion as a uvarint followed by optional
// fields a reader ignores when it does not know them. The user's state is
// a wire frame, which never starts with controlPrefix; without failed
// members the state is the user's alone.
func (h *hooks) LocalState(join bool) []byte {
	var user []byte
	if d := h.m.cfg.Delegate; d != nil {
		user = d.LocalState(join)
	}
	failed := h.m.failedMembers()
	if len(failed) == 0 {
		return user
	}
	if len(failed) > maxFailedInState-1 {
		failed = failed[:maxFailedInState-1] // the header counts as one
	}
	out := []byte{controlPrefix, stateFailed}
	out = binary.AppendUvarint(out, uint64(len(failed)+1))
	header := binary.AppendUvarint(nil, statePartVersion)
	out = append(out, 0) // the header's empty name
	out = binary.AppendUvarint(out, uint64(len(header)))
	out = append(out, header...)
	for _, f := range failed {
		out = binary.AppendUvarint(out, uint64(len(f.name)))
		out = append(out, f.name...)
		out = binary.AppendUvarint(out, uint64(len(f.addr)))
		out = append(out, f.addr...)
	}
	return append(out, user...)
}

// MergeRemoteState takes Membership's part of a peer's push/pull state
// (see LocalState) and gives the rest to the user delegate.
func (h *hooks) MergeRemoteState(buf []byte, join bool) {
	for len(buf) > 0 && buf[0] == controlPrefix {
		if len(buf) > 1 && buf[1] != stateFailed {
			// A part of a later release: skip it, keep the rest.
			rest, err := skipStatePart(buf)
			if err != nil {
				h.m.log.Warn("cluster: bad push/pull state from a peer, ignored", "err", err)
				return
			}
			buf = rest
			continue
		}
		failed, rest, err := parseFailedState(buf)
		if err != nil {
			h.m.log.Warn("cluster: bad push/pull state from a peer, ignored", "err", err)
			return
		}
		h.m.noteHeardFailed(failed)
		buf = rest
	}
	if d := h.m.cfg.Delegate; d != nil && len(buf) > 0 {
		d.MergeRemoteState(buf, join)
	}
}

// failedPeer is a failed member's name and address in a push/pull state.
type failedPeer struct{ name, addr string }

// failedMembers lists the members this node holds as failed (dead, not
// left), itself excluded, at most maxFailedInState of them. Members only
// heard of are not passed on: each node speaks only of the failures it saw,
// so a member stays on the lists no longer than ReconnectTimeout after the
// last node that saw it fail.
func (m *Membership) failedMembers() []failedPeer {
	if sabotage.On(sabotage.NoFailedMembersInState) {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []failedPeer
	for name, mem := range m.members {
		if mem.State == StateDead && name != m.cfg.NodeName && len(out) < maxFailedInState {
			out = append(out, failedPeer{name: name, addr: mem.Address})
		}
	}
	return out
}

// parseFailedState splits a push/pull state that starts with Membership's
// part into the failed members and the user's state.
func parseFailedState(buf []byte) ([]failedPeer, []byte, error) {
	if len(buf) < 2 || buf[1] != stateFailed {
		return nil, nil, errors.New("unknown membership state part")
	}
	b := buf[2:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	str := func() (string, bool) {
		l, ok := next()
		if !ok || l > uint64(len(b)) {
			return "", false
		}
		v := string(b[:l])
		b = b[l:]
		return v, true
	}
	count, ok := next()
	if !ok || count > maxFailedInState {
		return nil, nil, errors.New("bad failed-member count")
	}
	out := make([]failedPeer, 0, count)
	for range count {
		name, ok1 := str()
		addr, ok2 := str()
		if !ok1 || !ok2 {
			return nil, nil, errors.New("truncated failed-member list")
		}
		if name == "" {
			// The part's header (statePartVersion, then fields this
			// node may not know): nothing in it is needed yet. The
			// previous release writes none.
			continue
		}
		out = append(out, failedPeer{name: name, addr: addr})
	}
	return out, b, nil
}

// skipStatePart returns what follows a push/pull part other than
// stateFailed: controlPrefix, tag, uvarint length, body.
func skipStatePart(buf []byte) ([]byte, error) {
	if len(buf) < 2 {
		return nil, errors.New("truncated membership state part")
	}
	l, n := binary.Uvarint(buf[2:])
	if n <= 0 || l > uint64(len(buf)-2-n) {
		return nil, fmt.Errorf("bad membership state part %q", buf[1])
	}
	return buf[2+n+int(l):], nil
}

// noteHeardFailed remembers the failed members of a peer's push/pull state
// that this node does not know, as candidates for reconnect. A member
// heard of again keeps the time it was first heard of, so that peers
// repeating it cannot keep it listed for ever.
func (m *Membership) noteHeardFailed(peers []failedPeer) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range peers {
		if p.name == m.cfg.NodeName || p.name == "" || p.addr == "" {
			continue
		}
		if _, known := m.members[p.name]; known {
			continue
		}
		if m.heardDead == nil {
			m.heardDead = map[string]heardOf{}
		}
		if _, heard := m.heardDead[p.name]; !heard {
			m.heardDead[p.name] = heardOf{addr: p.addr, at: now}
		}
	}
}

// noteHeardDead remembers the failed members of a peer's state that this
// node does not know, as candidates for reconnect. (In a merge, memberlist
// fills Node.State from the peer's state; it is the one place it does.)
func (m *Membership) noteHeardDead(peers []*memberlist.Node) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range peers {
		if n.State != memberlist.StateDead || n.Name == m.cfg.NodeName {
			continue
		}
		if _, known := m.members[n.Name]; known {
			continue
		}
		if m.heardDead == nil {
			m.heardDead = map[string]heardOf{}
		}
		m.heardDead[n.Name] = heardOf{addr: n.Address(), at: now}
	}
}
