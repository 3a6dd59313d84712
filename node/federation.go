package node

import (
	"net"

	"github.com/heureka/heureka/cluster"
)

// fedMembers adapts the node's membership to what federation needs to
// choose the nodes that hold each region's WAN link and to reach them as
// relays (federation.Members). The membership starts after the federation
// is built, before it starts: until then only this node is known.
type fedMembers struct{ n *Node }

// LocalName implements federation.Members.
func (m fedMembers) LocalName() string { return m.n.cfg.Name }

// AliveMembers implements federation.Members: the live members (alive or
// suspect), as the replicator counts them.
func (m fedMembers) AliveMembers() []string {
	if m.n.members == nil {
		return []string{m.n.cfg.Name}
	}
	return peers{m.n.members, m.n.cfg.Name}.AliveMembers()
}

// MemberURL implements federation.Members: the member's gossip host and
// the HTTP port it gossips (its meta), with this node's scheme (TLS is
// configured cluster-wide).
func (m fedMembers) MemberURL(name string) string {
	if m.n.members == nil {
		return ""
	}
	mb, ok := m.n.members.Member(name)
	if !ok || mb.State == cluster.StateLeft {
		return ""
	}
	host, _, err := net.SplitHostPort(mb.Address)
	if err != nil || len(mb.Meta) == 0 {
		return ""
	}
	return m.n.Scheme() + "://" + net.JoinHostPort(host, string(mb.Meta))
}

// RelayKeys implements federation.RelaySecrets: the gossip keyring, the
// cluster's shared secret, signs and checks relay requests (federation's
// relayauth.go), so that relays work with basic auth on and no other
// secret to configure.
func (m fedMembers) RelayKeys() [][]byte {
	c := m.n.cfg.Cluster
	switch {
	case c == nil:
		return nil
	case len(c.GossipKeys) > 0:
		return c.GossipKeys
	case len(c.GossipKey) > 0:
		return [][]byte{c.GossipKey}
	}
	return nil
}

// RelayNeedsAuth implements federation.RelaySecrets: with basic auth on,
// the relay route asks for credentials.
func (m fedMembers) RelayNeedsAuth() bool { return m.n.cfg.Auth.Enabled() }
