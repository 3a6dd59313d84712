package cluster

// Sending to a member: messages of the replication layer, over a stream or
// in one packet, addressed by member name.

import (
	"fmt"

	"github.com/hashicorp/memberlist"
)

// SendReliable sends msg to the live member called node over a stream
// (memberlist's SendReliable): delivered in full if it returns nil, any size.
// The receiver gets it in its Config.Delegate's NotifyMsg. A message that
// cannot be written within Config.StreamTimeout (a peer that does not read,
// or died mid-transfer) fails with an error satisfying
// errors.Is(err, os.ErrDeadlineExceeded) (on memnet.Network and TCP alike).
func (m *Membership) SendReliable(node string, msg []byte) error {
	ml, n, err := m.target(node)
	if err != nil {
		return err
	}
	return ml.SendReliable(n, msg)
}

// SendBestEffort sends msg to the live member called node in one packet
// (memberlist's SendBestEffort): it may be lost, and must fit the transport's
// packet size (about 1.4 kB on UDP).
func (m *Membership) SendBestEffort(node string, msg []byte) error {
	ml, n, err := m.target(node)
	if err != nil {
		return err
	}
	return ml.SendBestEffort(n, msg)
}

// target returns the memberlist and a copy of the live node called name.
func (m *Membership) target(name string) (*memberlist.Memberlist, *memberlist.Node, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.state {
	case stateNew:
		return nil, nil, ErrNotStarted
	case stateStopped:
		return nil, nil, ErrShutdown
	}
	mem, ok := m.members[name]
	if !ok || !mem.State.Live() {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownMember, name)
	}
	n := mem.node
	return m.ml, &n, nil
}
