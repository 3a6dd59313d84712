package cluster

// Node meta: the header every node advertises in memberlist (its wire
// protocol range and flags), and the check that refuses a peer whose
// range does not overlap this node's.

import (
	"fmt"
	"strconv"

	"github.com/hashicorp/memberlist"

	"github.com/heureka/heureka/wire"
)

// Node meta header: every node's memberlist meta starts with these bytes,
// followed by its Config.Delegate's own NodeMeta.
const (
	metaMagic     = 'h' // marks heureka meta
	metaHeaderLen = 3   // magic, wire protocol version, flags
	// metaLeaving is the flag a node sets just before it leaves, so that
	// peers record it as "left" rather than "dead".
	metaLeaving = 1 << 0
	// metaStreams: the node takes peer streams (stream.go). Older nodes
	// ignore flag bits they do not know.
	metaStreams = 1 << 1
	// metaSessionExchanges: the node takes exchanges on its peer streams
	// (sessionMagic sessions, stream.go). Older nodes ignore it.
	metaSessionExchanges = 1 << 2
	// metaSpanShift: the top four bits of the flags byte say how many
	// versions above the version byte the node speaks. The version byte
	// is the lowest wire protocol the node speaks, so that the previous
	// release, which requires it to equal its own, accepts the node;
	// that release ignores these bits (it reads metaLeaving only). Bit 3
	// is free for flags.
	metaSpanShift = 4
)

// parseMeta splits a node meta into its header fields and user part:
// version is the highest wire protocol the node speaks (see metaRange).
func parseMeta(b []byte) (version, flags uint8, user []byte, ok bool) {
	_, hi, ok := metaRange(b)
	if !ok {
		return 0, 0, nil, false
	}
	return hi, b[2], b[metaHeaderLen:], true
}

// metaRange returns the lowest and highest wire protocol versions a node
// meta advertises: the version byte, and that plus the span in the flags
// byte's top bits (0 for the previous release, which speaks one version).
func metaRange(b []byte) (lo, hi uint8, ok bool) {
	if len(b) < metaHeaderLen || b[0] != metaMagic {
		return 0, 0, false
	}
	lo = b[1]
	span := b[2] >> metaSpanShift
	if int(lo)+int(span) > 255 {
		return 0, 0, false
	}
	return lo, lo + span, true
}

// protocolRange is the range of wire protocol versions this node speaks:
// wire.MinProtocolVersion to wire.ProtocolVersion, or the one version of
// the test-only Config.protocolVersion.
func (m *Membership) protocolRange() (lo, hi uint8) {
	if m.cfg.protocolVersion != 0 {
		return m.cfg.protocolVersion, m.cfg.protocolVersion
	}
	return wire.MinProtocolVersion, wire.ProtocolVersion
}

// commonVersion is the highest version two ranges share (false: none).
func commonVersion(aLo, aHi, bLo, bHi uint8) (uint8, bool) {
	v := min(aHi, bHi)
	if aLo > aHi || bLo > bHi || v < max(aLo, bLo) {
		return 0, false
	}
	return v, true
}

// formatRange writes a version range as "3" or "2-3".
func formatRange(lo, hi uint8) string {
	if lo == hi {
		return strconv.Itoa(int(lo))
	}
	return strconv.Itoa(int(lo)) + "-" + strconv.Itoa(int(hi))
}

// PeerProtocol is the wire protocol version to write the named member's
// frames in: the highest both sides speak. For a member not known (yet),
// or one that shares no version, it is this node's lowest, which every
// member it accepted reads.
func (m *Membership) PeerProtocol(name string) uint8 {
	lo, hi := m.protocolRange()
	m.mu.Lock()
	mem := m.members[name]
	var meta []byte
	if mem != nil {
		meta = mem.node.Meta
	}
	m.mu.Unlock()
	if pLo, pHi, ok := metaRange(meta); ok {
		if v, ok := commonVersion(lo, hi, pLo, pHi); ok {
			return v
		}
	}
	return lo
}

// LowestProtocol is the version to write a frame in when the reader is not
// known (a push/pull state): the oldest version that every member it knows
// reads, that is the highest of their lowest versions (and this node's),
// so that a member of the next release, which no longer reads this node's
// lowest version, reads it too. Without a version all share, this node's
// lowest.
func (m *Membership) LowestProtocol() uint8 {
	lo, hi := m.protocolRange()
	v := lo
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mem := range m.members {
		if mem == nil || (mem.State != StateAlive && mem.State != StateSuspect) {
			continue
		}
		if pLo, pHi, ok := metaRange(mem.node.Meta); ok && pLo <= pHi {
			if pLo > v {
				v = pLo
			}
			hi = min(hi, pHi)
		}
	}
	if v > hi {
		return lo
	}
	return v
}

// noteRefused logs, once per peer and reason, that a peer was refused.
func (m *Membership) noteRefused(peer string, err error) {
	reason := err.Error()
	m.mu.Lock()
	seen := m.refused[peer] == reason
	m.refused[peer] = reason
	m.mu.Unlock()
	m.join.noteRefusal(err)
	if !seen {
		m.log.Warn("cluster: refusing peer", "peer", peer, "reason", reason)
	}
}

// checkPeer returns an error if n shares no wire protocol version with
// this node (its advertised range and ours do not overlap).
func (m *Membership) checkPeer(n *memberlist.Node) error {
	pLo, pHi, ok := metaRange(n.Meta)
	lo, hi := m.protocolRange()
	if !ok {
		return fmt.Errorf("%w: %s advertises no heureka node meta", ErrProtocolMismatch, n.Name)
	}
	if _, ok := commonVersion(lo, hi, pLo, pHi); !ok {
		return fmt.Errorf("%w: %s speaks wire protocol %s, this node %s", ErrProtocolMismatch, n.Name,
			formatRange(pLo, pHi), formatRange(lo, hi))
	}
	return nil
}
