package cluster

// Subscribing to membership changes: the subscribers and the queue of
// changes the dispatcher (events.go) delivers to them in order.

import (
	"slices"

	"github.com/hashicorp/memberlist"
)

// queued is one item for the dispatcher: a change to log and, if notify,
// to deliver to subscribers and Config.Events.
type queued struct {
	seq    uint64
	ev     MemberEvent
	node   memberlist.Node // copy for Config.Events
	notify bool
	msg    string // log message
	debug  bool   // log at Debug, not Info/Warn
}

// subscriber is one Subscribe callback; it sees events with seq > since.
type subscriber struct {
	id    int
	since uint64
	fn    func(MemberEvent)
}

// Subscribe registers fn to be told of every membership change from now on
// and returns the members as they stand (as Members would), so a caller can
// build its view from the snapshot and keep it current with the events,
// missing nothing and seeing nothing twice. fn is called in order, from one
// goroutine shared by all subscribers; it may call Membership's methods but
// should not block for long, as it delays later events (and Shutdown, which
// delivers the last ones), and must not call Leave or Shutdown. cancel stops
// delivery to fn.
func (m *Membership) Subscribe(fn func(MemberEvent)) (current []Member, cancel func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextSub++
	id := m.nextSub
	m.subs = append(m.subs, subscriber{id: id, since: m.seq, fn: fn})
	current = m.membersLocked(func(State) bool { return true })
	return current, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.subs = slices.DeleteFunc(m.subs, func(s subscriber) bool { return s.id == id })
	}
}
