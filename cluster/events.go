package cluster

// Member events: changes recorded under Membership's lock and delivered
// in order by one goroutine to Subscribe callbacks and Config.Events.

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/hashicorp/memberlist"
)

// EventType says what happened to a member.
type EventType uint8

// The membership events.
const (
	// MemberJoin: a member joined, or came back after it failed or left.
	// The local node's own join is reported too, first.
	MemberJoin EventType = iota + 1
	// MemberLeave: a member failed (State dead) or left (State left).
	MemberLeave
	// MemberUpdate: a member's Meta changed.
	MemberUpdate
)

// String returns "join", "leave" or "update".
func (t EventType) String() string {
	switch t {
	case MemberJoin:
		return "join"
	case MemberLeave:
		return "leave"
	case MemberUpdate:
		return "update"
	}
	return "unknown"
}

// MemberEvent is one membership change.
type MemberEvent struct {
	Type   EventType
	Member Member
}

// enqueueLocked queues q for the dispatcher. m.mu must be held.
func (m *Membership) enqueueLocked(q queued) {
	m.seq++
	q.seq = m.seq
	m.queue = append(m.queue, q)
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// dispatch logs queued changes and delivers events, in order, until
// stopDispatcher; then it drains the queue and returns.
func (m *Membership) dispatch() {
	defer close(m.dispDone)
	for {
		m.mu.Lock()
		batch, stopping := m.queue, m.dispStop
		m.queue = nil
		subs := slices.Clone(m.subs)
		m.mu.Unlock()
		for _, q := range batch {
			m.logChange(q)
			if !q.notify {
				continue
			}
			for _, s := range subs {
				if q.seq > s.since {
					s.fn(q.ev)
				}
			}
			if ev := m.cfg.Events; ev != nil {
				n := q.node
				switch q.ev.Type {
				case MemberJoin:
					ev.NotifyJoin(&n)
				case MemberLeave:
					ev.NotifyLeave(&n)
				case MemberUpdate:
					ev.NotifyUpdate(&n)
				}
			}
		}
		if len(batch) == 0 {
			if stopping {
				return
			}
			<-m.kick
		}
	}
}

// stopDispatcher makes the dispatcher drain its queue and exit, and waits.
func (m *Membership) stopDispatcher() {
	m.mu.Lock()
	m.dispStop = true
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
	<-m.dispDone
}

// logChange logs one queued change.
func (m *Membership) logChange(q queued) {
	mem := q.ev.Member
	level := slog.LevelInfo
	if mem.State == StateDead || mem.State == StateSuspect {
		level = slog.LevelWarn
	}
	if q.debug {
		level = slog.LevelDebug
	}
	m.log.Log(context.Background(), level, q.msg, "member", mem.Name, "addr", mem.Address, "state", string(mem.State))
}

// record applies one memberlist event to the member table and queues it.
func (m *Membership) record(t EventType, n *memberlist.Node, msg string) {
	version, flags, user, _ := parseMeta(n.Meta)
	node := *n
	node.Meta = slices.Clone(n.Meta)
	now := time.Now()

	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.members[n.Name]
	mem := &member{
		Member: Member{
			Name:     n.Name,
			Address:  n.Address(),
			State:    StateAlive,
			Meta:     slices.Clone(user),
			Protocol: version,
			Since:    now,
		},
		node:    node,
		lastAck: now,
		// A leave notice may have come before this event: keep it, unless
		// the member (re)joined.
		leaving: flags&metaLeaving != 0 || (old != nil && old.leaving && t != MemberJoin),
	}
	notify, debug := true, false
	switch t {
	case MemberLeave:
		mem.State, msg = StateDead, "cluster: member failed"
		if mem.leaving || (n.Name == m.cfg.NodeName && m.leaving.Load()) {
			mem.State, msg = StateLeft, "cluster: member left"
		}
	case MemberUpdate:
		if old != nil {
			mem.State, mem.Since, mem.lastAck = old.State, old.Since, old.lastAck
			if old.State == StateSuspect {
				mem.State, mem.Since, mem.lastAck = StateAlive, now, now
			}
			if string(old.Meta) == string(mem.Meta) {
				// Only our header changed (the leaving flag): log it,
				// but it is no change to the member's meta.
				notify = false
				if mem.leaving && !old.leaving {
					// "member left" follows at info.
					msg, debug = "cluster: member is leaving", true
				} else {
					msg, debug = "cluster: member refreshed", true
				}
			}
		}
	}
	m.members[n.Name] = mem
	m.enqueueLocked(queued{ev: MemberEvent{Type: t, Member: mem.Member}, node: node, notify: notify, msg: msg, debug: debug})
}
