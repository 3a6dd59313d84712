package cluster

// The members as this node sees them: their states, the record Membership
// keeps of each, and the queries over them.

import (
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// State is a member's state as this node sees it.
type State string

// The member states.
const (
	// StateAlive: the member answers.
	StateAlive State = "alive"
	// StateSuspect: this node's probes of the member go unanswered;
	// unless it answers again in time it will be declared dead. Only this
	// node's own suspicions show, as observed by Membership (see the file
	// comment of membership.go); memberlist exposes none.
	StateSuspect State = "suspect"
	// StateDead: the member failed (declared dead by the cluster).
	StateDead State = "dead"
	// StateLeft: the member left gracefully.
	StateLeft State = "left"
)

// Live reports whether the state counts as a live member (alive or suspect),
// as memberlist counts them.
func (s State) Live() bool { return s == StateAlive || s == StateSuspect }

// Member is a node of the cluster as this node sees it.
type Member struct {
	// Name is the member's NodeName.
	Name string
	// Address is where the member gossips, "host:port".
	Address string
	// State is the member's state.
	State State
	// Meta is the member's Config.Delegate NodeMeta, without Membership's
	// header. Do not modify it.
	Meta []byte
	// Protocol is the wire protocol version the member advertises.
	Protocol uint8
	// Since is when this node saw the member enter State (local clock).
	Since time.Time
}

// member is Membership's record of one node.
type member struct {
	Member
	node    memberlist.Node // last known memberlist node, for sending
	leaving bool            // announced a graceful leave
	// lastAck is when the member last answered a probe of this node (or
	// joined, or stopped being suspect): the clock of suspicion.
	lastAck time.Time
}

// Members returns every member this node knows, itself included, in any
// state, sorted by name. Failed members stay listed for
// Config.ReconnectTimeout, departed ones for Config.TombstoneTimeout.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.membersLocked(func(State) bool { return true })
}

// LiveMembers returns the alive and suspect members, itself included, sorted
// by name: the set memberlist gossips with.
func (m *Membership) LiveMembers() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.membersLocked(State.Live)
}

func (m *Membership) membersLocked(keep func(State) bool) []Member {
	out := make([]Member, 0, len(m.members))
	for _, mem := range m.members {
		if keep(mem.State) {
			out = append(out, mem.Member)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Member returns the member called name, if this node knows it.
func (m *Membership) Member(name string) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.members[name]
	if !ok {
		return Member{}, false
	}
	return mem.Member, true
}

// LocalNode returns this node as a member (the zero Member before Start).
func (m *Membership) LocalNode() Member {
	mem, _ := m.Member(m.cfg.NodeName)
	return mem
}
