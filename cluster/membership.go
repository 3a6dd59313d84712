package cluster

// Membership: who is in the cluster.
//
// Membership wraps a memberlist (SWIM gossip) and adds what memberlist leaves
// to its user:
//
//   - Joining. Seeds are resolved (names to every address, again on every
//     attempt) and joined in the background with exponential backoff and
//     jitter until one answers, so nodes may start in any order.
//   - Staying joined. memberlist stops gossiping to a dead node after
//     GossipToTheDeadTime; two sides of a long partition would then never
//     find each other again. A reconnect loop keeps trying failed members
//     (and the seeds when the node finds itself alone) until ReconnectTimeout.
//   - Compatibility. Every node advertises its wire.ProtocolVersion in its
//     node meta; a peer advertising another version is refused at join
//     (MergeDelegate) and whenever it is gossiped about (AliveDelegate).
//   - Member states. memberlist's API lists live nodes only and does not say
//     why a node went away. Membership keeps every member it has seen with a
//     State: alive, suspect (this node's probes of it go unanswered), dead
//     (failed) or left (announced its leave). memberlist's leave message
//     looks like a failure to the event API, so a leaving node first tells
//     every live member directly (a control message) and sets a flag in its
//     meta; that is how peers tell "left" from "dead".
//   - Suspicion. memberlist does not expose which members it suspects: its
//     events cover joins, updates and deaths only, and the State of the
//     nodes Members returns is never updated (memberlist tracks it in an
//     unexported field; hashicorp/memberlist#266). So Membership watches
//     memberlist's probes instead. Its PingDelegate is told of every probe
//     a member answers directly. A live member that has answered none for
//     longer than memberlist takes to probe every member twice is probed
//     again with Memberlist.Ping, memberlist's own probe message; if it
//     answers neither of two such pings it is suspect, until it answers a
//     probe again or memberlist declares it dead. This runs every memberlist
//     ProbeInterval, in its own goroutine. It differs from memberlist's own
//     suspicion in two ways. It comes up to two rounds of probes later, so
//     with a short suspicion timeout (SuspicionMult) a failed member may go
//     from alive to dead here without showing as suspect. And its
//     confirming pings are direct only (memberlist also probes through
//     other members and over TCP), so a member reachable only indirectly is
//     suspect here while memberlist keeps it alive.
//   - Change notifications, delivered in order by one goroutine, never from
//     inside memberlist's locks, to Subscribe callbacks and Config.Events.
//
// Lock order: memberlist's internal locks → Membership.mu. memberlist calls
// the delegates with its locks held, so no code holding mu calls memberlist.
// lifecycle serialises Start, Leave and Shutdown and is taken before either.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// Errors returned by Membership.
var (
	// ErrNotStarted is returned by methods that need a started Membership.
	ErrNotStarted = errors.New("cluster: membership not started")
	// ErrStarted is returned by a second Start.
	ErrStarted = errors.New("cluster: membership already started")
	// ErrShutdown is returned after Shutdown.
	ErrShutdown = errors.New("cluster: membership shut down")
	// ErrUnknownMember is returned when sending to a node that is not a live
	// member.
	ErrUnknownMember = errors.New("cluster: no such live member")
	// ErrProtocolMismatch is why a peer that advertises another wire protocol
	// version (or no heureka node meta at all) is refused.
	ErrProtocolMismatch = errors.New("cluster: peer speaks another wire protocol")
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
	// metaSpanShift: the top four bits of the flags byte say how many
	// versions above the version byte the node speaks. The version byte
	// is the lowest wire protocol the node speaks, so that the previous
	// release, which requires it to equal its own, accepts the node;
	// that release ignores these bits (it reads metaLeaving only). Bits 2
	// and 3 are free for flags.
	metaSpanShift = 4
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

// LowestProtocol is the lowest wire protocol version this node speaks:
// what it writes when it cannot know the reader (a push/pull state).
func (m *Membership) LowestProtocol() uint8 {
	lo, _ := m.protocolRange()
	return lo
}

// Lifecycle states of a Membership.
const (
	stateNew = iota
	stateRunning
	stateStopped
)

// member is Membership's record of one node.
type member struct {
	Member
	node    memberlist.Node // last known memberlist node, for sending
	leaving bool            // announced a graceful leave
	// lastAck is when the member last answered a probe of this node (or
	// joined, or stopped being suspect): the clock of suspicion.
	lastAck time.Time
}

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

// Membership is this node's view of the cluster: it joins, tracks members
// and leaves. Create it with New, then Start it. All methods are safe for
// concurrent use.
type Membership struct {
	cfg      Config
	log      *slog.Logger
	version  uint8 // the wire protocol version this node advertises
	resolver Resolver

	lifecycle sync.Mutex // serialises Start, Leave and Shutdown
	ml        *memberlist.Memberlist
	joined    chan struct{}
	joinOnce  sync.Once
	stop      chan struct{} // closed by Shutdown: background loops exit
	wg        sync.WaitGroup
	leaving   atomic.Bool // advertise metaLeaving
	dispDone  chan struct{}
	kick      chan struct{} // wakes the dispatcher

	mu       sync.Mutex // guards the fields below
	state    int
	left     bool
	members  map[string]*member
	queue    []queued
	seq      uint64
	subs     []subscriber
	nextSub  int
	dispStop bool
	refused  map[string]string // peer → reason last logged
	// heardDead holds members this node never saw alive but heard of as
	// failed in a peer's state (push/pull): a node that starts during a
	// partition learns of the other side that way, and must re-dial it
	// after the heal like the members it saw fail (see reconnect).
	heardDead map[string]heardOf
	// reconnectAfter is the failed member the last reconnect round dialled
	// last; the next round goes on from there.
	reconnectAfter string

	transport *deadlineTransport // what memberlist uses; set by Start
	streams   *streamPeers       // peer streams (stream.go); set by Start

	joinFailures atomic.Int64 // failed join attempts, for tests
	join         joinTracker  // JoinStatus
	redialing    bool         // guarded by mu: a redialLeft dial is running
	boot         bootID       // this process's, in probe acks
	boots        bootTracker  // the members' boot ids, from their acks
	// predecessor: a join's push/pull listed a node by this node's name, a
	// previous process of it (see announceRestart).
	predecessor atomic.Bool
}

// New returns a Membership for cfg, not yet started.
func New(cfg Config) (*Membership, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Join = slices.Clone(cfg.Join)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	m := &Membership{
		cfg:      cfg,
		log:      logger.With("component", "cluster"), // not "node": the caller's logger names the node
		version:  wire.ProtocolVersion,
		resolver: cfg.Resolver,
		joined:   make(chan struct{}),
		stop:     make(chan struct{}),
		dispDone: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		members:  make(map[string]*member),
		refused:  make(map[string]string),
		boot:     newBootID(),
	}
	if cfg.protocolVersion != 0 {
		m.version = cfg.protocolVersion
	}
	if m.resolver == nil {
		m.resolver = net.DefaultResolver.LookupHost
	}
	return m, nil
}

// Start creates the memberlist, which starts listening, and begins joining
// Config.Join in the background; watch Joined to know when that succeeded.
// ctx bounds the joining only (cancel it to give up); the membership runs
// until Shutdown. Start fails if the transport cannot listen.
func (m *Membership) Start(ctx context.Context) error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	m.mu.Lock()
	st := m.state
	m.mu.Unlock()
	switch st {
	case stateRunning:
		return ErrStarted
	case stateStopped:
		return ErrShutdown
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	mc := m.cfg.memberlistConfig()
	mc.Name = m.cfg.NodeName
	h := &hooks{m}
	mc.Delegate, mc.Events, mc.Alive, mc.Merge, mc.Ping = h, h, h, h, h
	lw := NewLogWriter(m.log)
	mc.Logger, mc.LogOutput = nil, lw

	fail := func(err error) error {
		m.mu.Lock()
		m.state = stateStopped
		m.mu.Unlock()
		return fmt.Errorf("cluster: start memberlist: %w", err)
	}
	tr, err := m.newTransport(mc, log.New(lw, "", log.LstdFlags))
	if err != nil {
		return fail(err)
	}
	xt := newExchangeTransport(tr, m, m.cfg.StreamTimeout)
	mc.Transport = xt
	if u, ok := m.cfg.Delegate.(exchangeUser); ok {
		u.useExchanger(m)
	}
	if u, ok := m.cfg.Delegate.(joinUser); ok {
		u.useJoinStatus(m.JoinStatus)
	}

	go m.dispatch() // memberlist reports our own join during Create
	ml, err := memberlist.Create(mc)
	if err != nil {
		m.stopDispatcher()
		xt.stopSorting()
		if m.cfg.Transport == nil {
			_ = tr.Shutdown() // ours; memberlist may have shut it already
		}
		return fail(err)
	}
	m.ml = ml
	m.mu.Lock()
	m.state = stateRunning
	m.transport = tr
	m.streams = xt.peers
	m.mu.Unlock()
	m.log.Info("cluster: started", "addr", m.LocalNode().Address, "protocol", m.version, "seeds", m.cfg.Join)

	m.wg.Add(2)
	go m.joinLoop(ctx)
	go m.maintain()
	if mc.ProbeInterval > 0 { // memberlist probes: watch them
		m.wg.Add(1)
		go m.watchProbes(mc.ProbeInterval)
	}
	return nil
}

// newTransport returns the transport for memberlist, wrapped to bound the
// writes of the streams it dials (transport_deadline.go): Config.Transport,
// or else a NetTransport created the way memberlist.Create would create it
// (then mc's ports are updated when it bound a dynamic one).
func (m *Membership) newTransport(mc *memberlist.Config, logger *log.Logger) (*deadlineTransport, error) {
	if m.cfg.Transport != nil {
		return newDeadlineTransport(m.cfg.Transport, m.cfg.StreamTimeout), nil
	}
	nc := &memberlist.NetTransportConfig{
		BindAddrs:    []string{mc.BindAddr},
		BindPort:     mc.BindPort,
		Logger:       logger,
		MetricLabels: mc.MetricLabels,
	}
	// Like memberlist: binding UDP and TCP to the same dynamic port is
	// racy (another process may take the UDP port the kernel gave us for
	// TCP), so try a few times.
	tries := 1
	if mc.BindPort == 0 {
		tries = 10
	}
	var nt *memberlist.NetTransport
	var err error
	for range tries {
		if nt, err = memberlist.NewNetTransport(nc); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("set up network transport: %w", err)
	}
	if mc.BindPort == 0 {
		port := nt.GetAutoBindPort()
		mc.BindPort, mc.AdvertisePort = port, port
	}
	return newDeadlineTransport(nt, m.cfg.StreamTimeout), nil
}

// Joined returns a channel closed once the first join succeeded, or at once
// when there is nothing to join (no seeds, or all seeds are this node).
func (m *Membership) Joined() <-chan struct{} { return m.joined }

// Memberlist returns the underlying memberlist (nil before Start), for the
// replication layer: broadcasts, NumMembers, UpdateNode. Do not Leave or
// Shutdown it directly.
func (m *Membership) Memberlist() *memberlist.Memberlist {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == stateNew {
		return nil
	}
	return m.ml // written before state left stateNew, under mu
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

// SendReliable sends msg to the live member called node over a stream
// (memberlist's SendReliable): delivered in full if it returns nil, any size.
// The receiver gets it in its Config.Delegate's NotifyMsg. A message that
// cannot be written within Config.StreamTimeout (a peer that does not read,
// or died mid-transfer) fails with an error satisfying
// errors.Is(err, os.ErrDeadlineExceeded) (on MemNetwork and TCP alike).
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

// Shutdown leaves the cluster gracefully (unless Leave was called), stops
// memberlist and every background goroutine, and delivers the events still
// queued. It is idempotent; afterwards the Membership cannot be restarted.
func (m *Membership) Shutdown() error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	m.mu.Lock()
	st, left := m.state, m.left
	m.state = stateStopped
	m.mu.Unlock()
	switch st {
	case stateStopped:
		return nil
	case stateNew:
		close(m.stop)
		return nil
	}
	close(m.stop)
	if !left {
		_ = m.leaveLocked(m.cfg.LeaveTimeout) // logged by leaveLocked
	}
	err := m.ml.Shutdown()
	m.wg.Wait()
	m.stopDispatcher()
	m.log.Info("cluster: shut down")
	if err != nil {
		return fmt.Errorf("cluster: shutdown: %w", err)
	}
	return nil
}

// joinLoop joins the seeds, retrying with backoff until one answers, there
// is nothing to join, ctx is done or the membership shuts down.
func (m *Membership) joinLoop(ctx context.Context) {
	defer m.wg.Done()
	if len(m.cfg.Join) == 0 {
		m.join.set(JoinStatus{State: JoinAlone, Reason: "no seeds configured: alone until another node joins this one"})
		m.markJoined("no seeds configured")
		return
	}
	delay := m.cfg.JoinRetryMin
	for attempt := 1; ; attempt++ {
		m.mu.Lock()
		left := m.left
		m.mu.Unlock()
		if left {
			return // Leave before the first join: nothing to join any more
		}
		addrs, complete, err := m.resolveSeeds(ctx)
		if len(addrs) == 0 && complete {
			m.join.set(JoinStatus{State: JoinAlone, Attempts: attempt,
				Reason: "every seed is this node: alone until another node joins this one"})
			m.markJoined("every seed is this node")
			return
		}
		started := time.Now()
		if len(addrs) > 0 {
			n, jerr := m.ml.Join(addrs)
			if n > 0 {
				m.join.set(JoinStatus{State: JoinJoined, Attempts: attempt,
					Reason: fmt.Sprintf("joined through %d of %d seeds", n, len(addrs))})
				m.log.Info("cluster: joined", "seeds_answered", n, "seeds_tried", len(addrs), "attempt", attempt)
				if m.predecessor.Load() && !sabotage.On(sabotage.RejoinBelowLeftIncarnation) {
					m.announceRestart()
				}
				m.markJoined("")
				return
			}
			err = errors.Join(err, jerr)
		}
		m.joinFailures.Add(1)
		wait := jitter(delay)
		st := m.noteJoinAttempt(attempt, started, addrs, err)
		if st.State == JoinRefused {
			// A misconfiguration: one clear line per attempt, whatever
			// memberlist logged about it.
			m.log.Error("cluster: join refused, will retry; this node stays unready until it joins",
				"attempt", attempt, "cause", string(st.Cause), "reason", st.Reason, "protocol", m.version,
				"retry_in", wait.Round(time.Millisecond))
		} else {
			level := slog.LevelInfo
			if attempt == 1 || attempt%10 == 0 {
				level = slog.LevelWarn
			}
			m.log.Log(context.Background(), level, "cluster: join failed, will retry",
				"attempt", attempt, "seeds", addrs, "retry_in", wait.Round(time.Millisecond), "err", ErrorText(err))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			m.log.Warn("cluster: gave up joining", "err", ctx.Err())
			return
		case <-m.stop:
			t.Stop()
			return
		}
		delay = min(2*delay, m.cfg.JoinRetryMax)
	}
}

// announceRestart pushes this node's state to every live member (a
// push/pull each, as a join does), after a join that found a previous
// process of this node listed.
//
// A fresh process starts at memberlist's first incarnation. Its
// predecessor's leave raised the predecessor's incarnation (the leaving
// flag's update, then the leave message), and memberlist ignores an alive
// message whose incarnation is not above the one it holds, so the members
// ignore the fresh process's alive. The first seed's push/pull lists the
// predecessor; memberlist refutes it at once with a higher incarnation, and
// the seeds joined after that one take it from the join's push/pull. The
// others, the first seed included, had only gossip to learn it from, which
// reaches every member with high probability only: members that missed it
// did not see the node for a whole push/pull interval (BUG-9 of the
// simulations: 10–22 s). Pushing the refuted state to every member makes
// it certain.
func (m *Membership) announceRestart() {
	m.mu.Lock()
	var addrs []string
	for name, mem := range m.members {
		if name != m.cfg.NodeName && mem.State.Live() {
			addrs = append(addrs, net.JoinHostPort(mem.node.Addr.String(), strconv.Itoa(int(mem.node.Port))))
		}
	}
	m.mu.Unlock()
	if len(addrs) == 0 {
		return
	}
	n, err := m.ml.Join(addrs)
	m.log.Info("cluster: a previous process of this node was listed; told every member this one is alive",
		"members", len(addrs), "answered", n, "err", ErrorText(err))
}

// jitter returns a random duration in [d/2, d] ("equal jitter"), so nodes
// started together do not retry in lockstep.
func jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// markJoined closes Joined once; reason, if any, is logged.
func (m *Membership) markJoined(reason string) {
	m.joinOnce.Do(func() {
		if reason != "" {
			m.log.Info("cluster: nothing to join", "reason", reason)
		}
		close(m.joined)
	})
}

// resolveSeeds returns the "ip:port" addresses of the seeds other than this
// node, and whether every seed resolved.
func (m *Membership) resolveSeeds(ctx context.Context) (addrs []string, complete bool, err error) {
	complete = true
	seen := make(map[string]bool)
	add := func(ip net.IP, port int) {
		if m.isSelf(ip, port) {
			return
		}
		a := net.JoinHostPort(ip.String(), strconv.Itoa(port))
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	for _, seed := range m.cfg.Join {
		host, port, _ := splitJoinAddr(seed) // checked by Validate
		if ip := net.ParseIP(host); ip != nil {
			add(ip, port)
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		names, lerr := m.resolver(lctx, host)
		cancel()
		if lerr != nil {
			complete = false
			err = errors.Join(err, fmt.Errorf("resolve %s: %w", host, lerr))
			continue
		}
		for _, name := range names {
			h, p := name, port
			if hh, ps, e := net.SplitHostPort(name); e == nil {
				if pp, e := strconv.Atoi(ps); e == nil {
					h, p = hh, pp
				}
			}
			ip := net.ParseIP(h)
			if ip == nil {
				complete = false
				err = errors.Join(err, fmt.Errorf("resolve %s: %q is not an IP address", host, name))
				continue
			}
			add(ip, p)
		}
	}
	return addrs, complete, err
}

// isSelf reports whether ip:port reaches this node.
func (m *Membership) isSelf(ip net.IP, port int) bool {
	// Not m.ml.LocalNode(): it returns a pointer into memberlist's state,
	// which memberlist rewrites under its lock (UpdateNode, refutes), so
	// reading it races. The copy in m.members was taken under that lock.
	m.mu.Lock()
	self := m.members[m.cfg.NodeName]
	m.mu.Unlock()
	if self == nil || port != int(self.node.Port) {
		return false
	}
	if ip.Equal(self.node.Addr) {
		return true
	}
	// Bound to every interface: loopback and "any" reach us too.
	bind := net.ParseIP(m.cfg.BindAddr)
	return m.cfg.Transport == nil && bind != nil && bind.IsUnspecified() && (ip.IsLoopback() || ip.IsUnspecified())
}

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

// suspectPings is how many pings (Memberlist.Ping) a member whose probes
// have gone unanswered must fail before it is suspect.
const suspectPings = 2

// watchProbes runs checkProbes every memberlist ProbeInterval, after a
// random stagger, until Shutdown.
func (m *Membership) watchProbes(iv time.Duration) {
	defer m.wg.Done()
	stagger := time.NewTimer(rand.N(iv) + 1)
	select {
	case <-stagger.C:
	case <-m.stop:
		stagger.Stop()
		return
	}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	for {
		m.checkProbes(iv)
		select {
		case <-tick.C:
		case <-m.stop:
			return
		}
	}
}

// checkProbes suspects the alive members that answered none of this node's
// probes for too long and fail suspectPings pings now (see Suspicion in the
// file comment). iv is memberlist's ProbeInterval.
//
// memberlist probes one live member per ProbeInterval, in a shuffled round
// over all of them, so a member that answers does so at least once every
// 2(n-1) intervals, plus one for slack. Probing can be slower than that
// (failed probes wait longer, and memberlist waits longer still when this
// node's health score is poor), which the window deliberately ignores: a
// member found silent too early is only pinged, and suspect only if it does
// not answer those pings either.
func (m *Membership) checkProbes(iv time.Duration) {
	start := time.Now()
	n := m.ml.NumMembers() // live members, this node included
	window := time.Duration(2*n-1) * iv
	type target struct {
		name string
		addr net.Addr
	}
	var targets []target
	m.mu.Lock()
	if m.left {
		m.mu.Unlock()
		return // memberlist no longer probes after a leave
	}
	for name, mem := range m.members {
		if name != m.cfg.NodeName && mem.State == StateAlive && start.Sub(mem.lastAck) > window {
			targets = append(targets, target{name, &net.UDPAddr{IP: mem.node.Addr, Port: int(mem.node.Port)}})
		}
	}
	m.mu.Unlock()
	if len(targets) == 0 {
		return
	}

	answered := make([]bool, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Go(func() {
			for range suspectPings {
				if _, err := m.ml.Ping(tg.name, tg.addr); err == nil {
					answered[i] = true
					return
				}
			}
		})
	}
	wg.Wait()

	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.stop:
		return // shutting down: pings fail for that reason
	default:
	}
	if m.left {
		return
	}
	for i, tg := range targets {
		mem := m.members[tg.name]
		if mem == nil || mem.State != StateAlive || mem.lastAck.After(start) {
			continue // it changed, or answered a probe, meanwhile
		}
		if answered[i] {
			mem.lastAck = now
			continue
		}
		mem.State, mem.Since = StateSuspect, now
		m.enqueueLocked(queued{ev: MemberEvent{Member: mem.Member}, msg: "cluster: member suspected"})
	}
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

// NotifyJoin records a member as alive.
func (h *hooks) NotifyJoin(n *memberlist.Node) {
	h.m.record(MemberJoin, n, "cluster: member joined")
}

// NotifyUpdate records a member's new meta.
func (h *hooks) NotifyUpdate(n *memberlist.Node) {
	h.m.record(MemberUpdate, n, "cluster: member updated")
}

// NotifyLeave records a member as dead or left.
func (h *hooks) NotifyLeave(n *memberlist.Node) {
	h.m.record(MemberLeave, n, "")
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
