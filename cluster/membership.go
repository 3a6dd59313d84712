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
//   - Compatibility. Every node advertises the range of wire protocols it
//     speaks in its node meta (meta.go); a peer whose range does not
//     overlap this node's is refused at join (MergeDelegate) and whenever
//     it is gossiped about (AliveDelegate), with both ranges in the log.
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
//
// Files: this one holds the Membership type and its lifecycle (New, Start,
// Shutdown); membership_members.go the member states and the queries over
// them; membership_subscribe.go the subscribers; membership_send.go sending
// to a member; join.go, leave.go, reconnect.go (the failed members kept and
// re-dialled) and suspicion.go the loops named above; events.go the event
// dispatch; delegate.go memberlist's hooks; meta.go the node meta;
// pushpull.go Membership's part of the push/pull state.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/memberlist"

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

// Lifecycle states of a Membership.
const (
	stateNew = iota
	stateRunning
	stateStopped
)

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
