package simulations

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/node"
)

// Topology is who can reach whom at one moment, as clients see it. It is
// immutable; every fault makes a new one.
type Topology struct {
	// Down lists the crashed nodes.
	Down map[string]bool
	// Groups are the sides of the current partition; nil when connected.
	Groups [][]string
	// Stalled lists the nodes whose network input is stalled
	// (memnet.Network.Stall): they serve HTTP and gossip, but read no
	// replication stream, so the checkers do not expect them to keep up.
	// Clients still reach them.
	Stalled map[string]bool
}

// IsStalled reports whether name's network input is stalled.
func (t *Topology) IsStalled(name string) bool { return t != nil && t.Stalled[name] }

// side returns the index of the group holding name, or -1.
func (t *Topology) side(name string) int {
	for i, g := range t.Groups {
		if slices.Contains(g, name) {
			return i
		}
	}
	return -1
}

// Reachable reports whether a client located next to node from can reach
// node to: to is up and, during a partition, on from's side (a node in no
// group is cut from no one).
func (t *Topology) Reachable(from, to string) bool {
	if t == nil {
		return true
	}
	if t.Down[to] {
		return false
	}
	a, b := t.side(from), t.side(to)
	return a < 0 || b < 0 || a == b
}

func (t *Topology) clone() *Topology {
	c := &Topology{Down: maps.Clone(t.Down), Stalled: maps.Clone(t.Stalled)}
	if c.Down == nil {
		c.Down = map[string]bool{}
	}
	for _, g := range t.Groups {
		c.Groups = append(c.Groups, slices.Clone(g))
	}
	return c
}

// Cluster is N Heureka nodes in this process on one seeded memnet network. Its
// methods are safe for concurrent use.
type Cluster struct {
	cfg   Config
	log   *slog.Logger
	net   *memnet.Network
	names []string
	topo  atomic.Pointer[Topology]

	topoMu sync.Mutex // serialises changes of topo; taken after mu

	mu       sync.Mutex
	nodes    map[string]*node.Node    // running nodes
	stopping map[string]chan struct{} // crashed nodes: closed when stopped
	incarn   map[string]int           // starts per name
	clocks   map[string]*SkewClock    // wall clock per name, kept across restarts
	retired  cluster.WireStats        // what stopped processes sent
	closed   bool
}

// ErrClusterClosed is returned by Cluster methods after Close.
var ErrClusterClosed = errors.New("simulations: cluster closed")

// NewCluster starts cfg.Nodes nodes named n0, n1, …; each joins the ones
// started before it. It returns once every node is ready and sees all the
// others alive.
func NewCluster(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{
		cfg:      cfg,
		log:      cfg.Logger,
		net:      memnet.New(cfg.Seed),
		nodes:    map[string]*node.Node{},
		stopping: map[string]chan struct{}{},
		incarn:   map[string]int{},
		clocks:   map[string]*SkewClock{},
	}
	c.topo.Store(&Topology{Down: map[string]bool{}})
	for i := 0; i < cfg.Nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		c.names = append(c.names, name)
		if err := c.startNode(name, slices.Clone(c.names[:i])); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitFormed(ctx, 30*time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// nodeConfig is a node with the simulation's timers on the memnet network.
func (c *Cluster) nodeConfig(name string, join []string) node.Config {
	seed := c.cfg.Seed*1000 + int64(slices.Index(c.names, name))*10 + int64(c.incarn[name])
	cfg := node.DefaultConfig(name)
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = c.log
	cfg.Registry.Seed = seed
	if c.clocks[name] == nil {
		c.clocks[name] = &SkewClock{}
	}
	cfg.Registry.Clock = c.clocks[name]
	cc := cluster.DefaultLocalConfig()
	cc.Join = join
	cc.Transport = c.net.NewTransport(name)
	cc.Resolver = c.net.Resolve
	cfg.Cluster = &cc
	cfg.Replication = cluster.DefaultReplicatorConfig()
	cfg.Replication.Seed = seed
	c.cfg.Timers.ApplyTo(&cfg)
	return cfg
}

// startNode starts a fresh process of name. c.mu must not be held.
func (c *Cluster) startNode(name string, join []string) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClusterClosed
	}
	c.incarn[name]++
	cfg := c.nodeConfig(name, join)
	c.mu.Unlock()
	nd, err := node.Start(cfg)
	if err != nil {
		return fmt.Errorf("simulations: start %s: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		go func() { _ = nd.Stop(context.Background()) }()
		return ErrClusterClosed
	}
	c.nodes[name] = nd
	return nil
}

// Names returns every node name, crashed or not.
func (c *Cluster) Names() []string { return slices.Clone(c.names) }

// Net returns the cluster's network.
func (c *Cluster) Net() *memnet.Network { return c.net }

// Topology returns the current reachability.
func (c *Cluster) Topology() *Topology { return c.topo.Load() }

// Node returns the running node called name, or nil while it is crashed.
func (c *Cluster) Node(name string) *node.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// Incarnation returns how many times name has been started.
func (c *Cluster) Incarnation(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.incarn[name]
}

// Up returns the names of the running nodes, sorted.
func (c *Cluster) Up() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// URL returns the Eureka base URL of the running node name, or "".
func (c *Cluster) URL(name string) string {
	if nd := c.Node(name); nd != nil {
		return nd.URL()
	}
	return ""
}

// WaitFormed waits until every running node is ready and sees exactly the
// running nodes as live members.
func (c *Cluster) WaitFormed(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c.MembershipComplete() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("simulations: cluster did not form within %v", within)
		case <-tick.C:
		}
	}
}

// MembershipComplete reports whether every running node is ready and its
// live members are exactly the running nodes.
func (c *Cluster) MembershipComplete() bool {
	up := c.Up()
	for _, name := range up {
		nd := c.Node(name)
		if nd == nil || !nd.Ready() || !slices.Equal(liveNames(nd), up) {
			return false
		}
	}
	return true
}

// liveNames returns the sorted names of nd's live members.
func liveNames(nd *node.Node) []string {
	var out []string
	for _, m := range nd.Members().LiveMembers() {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

// liveSince is the latest change of state of a member nd counts live.
func liveSince(nd *node.Node) time.Time {
	var at time.Time
	for _, m := range nd.Members().LiveMembers() {
		if m.Since.After(at) {
			at = m.Since
		}
	}
	return at
}

// Fingerprint is a node's registry as the convergence invariant compares
// it: the apps hashcode and every instance with its version.
func Fingerprint(nd *node.Node) string {
	s := nd.View().Snapshot()
	var b bytes.Buffer
	b.WriteString(s.HashCode())
	s.Apps(func(a *view.App) bool {
		vs := a.Versions()
		for j, in := range a.Instances() {
			fmt.Fprintf(&b, "|%s/%s@%d.%s", a.Name(), in.ID(), vs[j].Clock, vs[j].Node)
		}
		return true
	})
	return b.String()
}

// editTopo replaces the topology with an edited copy.
func (c *Cluster) editTopo(edit func(*Topology)) {
	c.topoMu.Lock()
	defer c.topoMu.Unlock()
	t := c.topo.Load().clone()
	edit(t)
	c.topo.Store(t)
}

// Partition splits the cluster into groups: every link between two groups
// is cut, and clients reach only the nodes of their location's side.
func (c *Cluster) Partition(groups ...[]string) {
	for i := range groups {
		for j := i + 1; j < len(groups); j++ {
			c.net.Partition(groups[i], groups[j])
		}
	}
	c.editTopo(func(t *Topology) {
		t.Groups = nil
		for _, g := range groups {
			t.Groups = append(t.Groups, slices.Clone(g))
		}
	})
}

// Heal removes every partition.
func (c *Cluster) Heal() {
	c.net.Heal()
	c.editTopo(func(t *Topology) { t.Groups = nil })
}

// Crash takes name off the network as if its host lost power and stops its
// process: nothing it says reaches anyone, not even a goodbye, and its
// in-memory registry is gone. Restart starts a fresh process.
func (c *Cluster) Crash(name string) error {
	c.mu.Lock()
	nd := c.nodes[name]
	if nd == nil {
		c.mu.Unlock()
		return fmt.Errorf("simulations: crash %s: not running", name)
	}
	c.net.Crash(name)
	c.editTopo(func(t *Topology) { t.Down[name] = true })
	c.retireLocked(nd)
	delete(c.nodes, name)
	done := make(chan struct{})
	c.stopping[name] = done
	c.mu.Unlock()
	// The process dies in the background: its leave announcement goes
	// nowhere, since the network already dropped the node.
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = nd.Stop(ctx)
	}()
	return nil
}

// Restart starts a fresh process for the crashed node name, at its old
// network address, joining the running nodes. It returns once the node
// serves HTTP; it becomes ready after its initial sync.
func (c *Cluster) Restart(ctx context.Context, name string) error {
	c.mu.Lock()
	done := c.stopping[name]
	c.mu.Unlock()
	if done == nil {
		return fmt.Errorf("simulations: restart %s: not crashed", name)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.net.Restart(name)
	var join []string
	for _, n := range c.Up() {
		if n != name {
			join = append(join, n)
		}
	}
	if err := c.startNode(name, join); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.stopping, name)
	c.mu.Unlock()
	c.editTopo(func(t *Topology) { delete(t.Down, name) })
	return nil
}

// staller is the part of memnet.Network that stalls a node's input.
type staller interface {
	Stall(name string)
	Unstall(name string)
}

// ErrStallUnsupported is returned by Stall when the network cannot stall a
// node.
var ErrStallUnsupported = errors.New("simulations: this memnet network cannot stall a node")

// Stall stalls name's network input: streams to it are accepted but never
// read, while it stays alive in gossip and keeps serving HTTP.
func (c *Cluster) Stall(name string) error {
	st, ok := any(c.net).(staller)
	if !ok {
		return ErrStallUnsupported
	}
	st.Stall(name)
	c.editTopo(func(t *Topology) {
		if t.Stalled == nil {
			t.Stalled = map[string]bool{}
		}
		t.Stalled[name] = true
	})
	return nil
}

// Unstall lets name read its network input again.
func (c *Cluster) Unstall(name string) error {
	st, ok := any(c.net).(staller)
	if !ok {
		return ErrStallUnsupported
	}
	st.Unstall(name)
	c.editTopo(func(t *Topology) { delete(t.Stalled, name) })
	return nil
}

// SetLoss drops node-to-node packets with probability p.
func (c *Cluster) SetLoss(p float64) { c.net.SetLoss(p) }

// SetDelay delays node-to-node packets and stream set-ups by [lo, hi].
func (c *Cluster) SetDelay(lo, hi time.Duration) { c.net.SetDelay(lo, hi) }

// Close stops every node and the network. It is idempotent.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	nodes := make([]*node.Node, 0, len(c.nodes))
	for _, nd := range c.nodes {
		nodes = append(nodes, nd)
	}
	var stopping []chan struct{}
	for _, ch := range c.stopping {
		stopping = append(stopping, ch)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = nd.Stop(ctx)
		}()
	}
	// A node's Stop should return within its context's 10s; one that hangs
	// (BUG-8: a leave that outlasts its timeout waits for memberlist's
	// broadcast without a deadline) is left behind after closeWait, so that
	// a run still ends and reports. The leak is logged.
	all := make(chan struct{})
	go func() {
		wg.Wait()
		for _, ch := range stopping {
			<-ch
		}
		close(all)
	}()
	select {
	case <-all:
	case <-time.After(closeWait):
		c.log.Error("simulations: a node did not stop within the close bound; left behind (BUG-8)", "bound", closeWait)
	}
	c.net.Shutdown()
}

// closeWait bounds how long Close waits for the nodes to stop.
const closeWait = 30 * time.Second
