package simulations

// Faults added for the second round of scenarios: a graceful stop (rolling
// restarts), one-way blocks and one-way loss (asymmetric partitions), and
// skewed wall clocks; and the replication wire counters of the nodes.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/node"
)

// SkewClock is a node's wall clock: the real clock plus an offset that a
// scenario may change while the node runs (actors.Clock). The zero value
// is the real clock. It is safe for concurrent use.
type SkewClock struct {
	offset atomic.Int64
}

// Now returns the real time plus the offset.
func (c *SkewClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Set sets the offset: positive puts the clock ahead.
func (c *SkewClock) Set(d time.Duration) { c.offset.Store(int64(d)) }

// Offset returns the current offset.
func (c *SkewClock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// Clock returns the wall clock of the node name (kept across restarts), or
// nil if it never ran.
func (c *Cluster) Clock(name string) *SkewClock {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clocks[name]
}

// retireLocked adds what nd sent to the stopped processes' total. c.mu
// must be held.
func (c *Cluster) retireLocked(nd *node.Node) {
	if r := nd.Replicator(); r != nil {
		addWire(&c.retired, r.Stats())
	}
}

// addWire adds o to s.
func addWire(s *cluster.WireStats, o cluster.WireStats) {
	s.Messages += o.Messages
	s.Bytes += o.Bytes
	s.AnswerMessages += o.AnswerMessages
	s.AnswerBytes += o.AnswerBytes
	s.RecordMessages += o.RecordMessages
	s.RenewalMessages += o.RenewalMessages
	s.Renewals += o.Renewals
	s.DigestMessages += o.DigestMessages
	s.SyncMessages += o.SyncMessages
	s.TransferRecords += o.TransferRecords
	s.Dropped += o.Dropped
	s.SendErrors += o.SendErrors
}

// WireStats returns what every process of the cluster, running or
// stopped, sent to its peers (cluster.Replicator.Stats, summed).
func (c *Cluster) WireStats() cluster.WireStats {
	c.mu.Lock()
	total := c.retired
	nodes := make([]*node.Node, 0, len(c.nodes))
	for _, nd := range c.nodes {
		nodes = append(nodes, nd)
	}
	c.mu.Unlock()
	for _, nd := range nodes {
		if r := nd.Replicator(); r != nil {
			addWire(&total, r.Stats())
		}
	}
	return total
}

// Dials returns how many streams the running nodes have dialled so far
// (cluster.Membership.Dials: memberlist's own streams, exchanges and peer
// sessions).
func (c *Cluster) Dials() uint64 {
	c.mu.Lock()
	nodes := make([]*node.Node, 0, len(c.nodes))
	for _, nd := range c.nodes {
		nodes = append(nodes, nd)
	}
	c.mu.Unlock()
	var total uint64
	for _, nd := range nodes {
		if m := nd.Members(); m != nil {
			total += m.Dials()
		}
	}
	return total
}

// NodeWireStats returns what the running node name sent so far (zero if it
// is not running).
func (c *Cluster) NodeWireStats(name string) cluster.WireStats {
	nd := c.Node(name)
	if nd == nil || nd.Replicator() == nil {
		return cluster.WireStats{}
	}
	return nd.Replicator().Stats()
}

// Stop stops the node name gracefully, as a rolling restart does: it
// leaves the cluster (its goodbye reaches the others) and its process
// ends, registry and all. Clients cannot reach it until Restart starts a
// fresh process.
func (c *Cluster) Stop(ctx context.Context, name string) error {
	c.mu.Lock()
	nd := c.nodes[name]
	if nd == nil {
		c.mu.Unlock()
		return fmt.Errorf("simulations: stop %s: not running", name)
	}
	c.editTopo(func(t *Topology) { t.Down[name] = true })
	delete(c.nodes, name)
	done := make(chan struct{})
	c.stopping[name] = done
	c.mu.Unlock()
	defer close(done)
	err := nd.Stop(ctx)
	c.mu.Lock()
	c.retireLocked(nd)
	c.mu.Unlock()
	// A fresh process of the name needs the address back: take the node
	// off the network like a crash does, Restart puts it on again.
	c.net.Crash(name)
	return err
}

// BlockOneWay blocks node-to-node traffic from every node of from to
// every node of to (memnet.Network.BlockOneWay). Clients, on loopback,
// still reach every node.
func (c *Cluster) BlockOneWay(from, to []string) { c.net.BlockOneWay(from, to) }

// UnblockOneWay lifts BlockOneWay(from, to).
func (c *Cluster) UnblockOneWay(from, to []string) { c.net.UnblockOneWay(from, to) }

// SetOneWayLoss drops packets from the node from to the node to with
// probability p.
func (c *Cluster) SetOneWayLoss(from, to string, p float64) { c.net.SetOneWayLoss(from, to, p) }

// StopNode stops the node name gracefully (see Cluster.Stop); Restart
// starts it again.
func (s *Sim) StopNode(name, why string) error {
	s.fault()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := s.c.Stop(ctx, name); err != nil {
		return err
	}
	s.Event("stop", "%s stopped gracefully %s", name, why)
	return nil
}

// BlockOneWay blocks traffic from the nodes from to the nodes to, but not
// back (an asymmetric partition).
func (s *Sim) BlockOneWay(from, to []string) {
	s.fault()
	s.c.BlockOneWay(from, to)
	s.Event("block-one-way", "{%s} → {%s} blocked; {%s} → {%s} still flows",
		strings.Join(from, ","), strings.Join(to, ","), strings.Join(to, ","), strings.Join(from, ","))
}

// UnblockOneWay lifts BlockOneWay(from, to).
func (s *Sim) UnblockOneWay(from, to []string) {
	s.c.UnblockOneWay(from, to)
	s.lifted()
	s.Event("unblock", "{%s} → {%s} restored", strings.Join(from, ","), strings.Join(to, ","))
}

// SetOneWayLoss drops packets from the node from to each node of to with
// probability p; 0 lifts it.
func (s *Sim) SetOneWayLoss(from string, to []string, p float64) {
	if p > 0 {
		s.fault()
	} else {
		s.lifted()
	}
	for _, t := range to {
		s.c.SetOneWayLoss(from, t, p)
	}
	s.Event("one-way-loss", "%s → {%s}: %.0f%% of the packets lost", from, strings.Join(to, ","), p*100)
}

// SkewClock sets the wall clock of the node name off by d (ahead when
// positive); 0 sets it right again. The node's registry and replication
// read this clock (lease expiry, HLC versions, tombstone ages); the
// harness and the clients keep the real time.
func (s *Sim) SkewClock(name string, d time.Duration) error {
	clk := s.c.Clock(name)
	if clk == nil {
		return fmt.Errorf("simulations: skew %s: no such node", name)
	}
	if d != 0 {
		s.fault()
	} else {
		s.lifted()
	}
	clk.Set(d)
	s.Event("clock-skew", "%s's wall clock set %+v off", name, d)
	return nil
}
