package node

import (
	"context"
	"log/slog"
	"net"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/httpapi"
)

// startCluster starts membership and replication. The replicator is already
// wired into the registry as a sink and as the ownership oracle.
func (n *Node) startCluster(log *slog.Logger) error {
	n.replicator.Attach(n.registry, n.view)
	mc := *n.cfg.Cluster
	mc.NodeName = n.cfg.Name
	mc.Logger = log
	mc.Delegate = n.replicator
	m, err := cluster.New(mc)
	if err != nil {
		return err
	}
	n.members = m
	// Membership events re-derive ownership and peer queues; the
	// subscription delivers the current members first.
	_, n.unsubscribe = m.Subscribe(func(cluster.MemberEvent) { n.replicator.MembersChanged() })
	if err := m.Start(context.Background()); err != nil {
		n.unsubscribe()
		return err
	}
	n.replicator.Start(peers{m, n.cfg.Name}, len(mc.Join) > 0)
	// The delta window must not replay the initial sync as recent changes.
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		select {
		case <-n.replicator.ReadyC():
			n.view.ClearDelta()
		case <-n.stopping:
		}
	}()
	return nil
}

// Members returns the node's membership, or nil for a single node.
func (n *Node) Members() *cluster.Membership { return n.members }

// Replicator returns the node's replicator, or nil for a single node.
func (n *Node) Replicator() *cluster.Replicator { return n.replicator }

// Ready reports whether the node has finished its initial cluster sync.
func (n *Node) Ready() bool { return n.replicator == nil || n.replicator.Ready() }

// peers adapts a Membership to what the replicator needs.
type peers struct {
	m    *cluster.Membership
	name string
}

func (p peers) LocalName() string { return p.name }

func (p peers) AliveMembers() []string {
	live := p.m.LiveMembers()
	names := make([]string, 0, len(live))
	for _, mb := range live {
		names = append(names, mb.Name)
	}
	return names
}

func (p peers) SendReliable(name string, msg []byte) error { return p.m.SendReliable(name, msg) }

// Left tells the replicator whether a member that is no longer alive left
// gracefully (its last renewal report then fades over a window instead of
// being dropped at once).
func (p peers) Left(name string) bool {
	mb, ok := p.m.Member(name)
	return ok && mb.State == cluster.StateLeft
}

// clusterView adapts the membership to what the HTTP API reports.
type clusterView struct{ n *Node }

func (c clusterView) Members() []httpapi.Member {
	share := c.n.replicator.OwnedShare()
	loads := c.n.replicator.MemberLoads()
	self := c.n.registry.SelfPreservation()
	var out []httpapi.Member
	for _, mb := range c.n.members.Members() {
		m := httpapi.Member{Name: mb.Name, Address: mb.Address, State: string(mb.State), Owned: share[mb.Name]}
		if mb.Name == c.n.cfg.Name {
			m.SelfPreservation, m.RenewalsLastWindow = self.Reason, self.LocalRenewals
		} else if ld, ok := loads[mb.Name]; ok {
			m.SelfPreservation, m.RenewalsLastWindow = ld.Reason, ld.Renewals
		}
		if host, _, err := net.SplitHostPort(mb.Address); err == nil && len(mb.Meta) > 0 {
			// Every member serves the same scheme as this one (TLS is
			// configured cluster-wide).
			m.URL = c.n.Scheme() + "://" + net.JoinHostPort(host, string(mb.Meta)) + "/eureka/"
		}
		out = append(out, m)
	}
	return out
}

// evictionHolds adapts the replicator's holds on eviction to what the HTTP
// API, the dashboard and heureka_eviction_held show (httpapi.EvictionHold;
// the reasons are the same words, checked by a test).
type evictionHolds struct{ r *cluster.Replicator }

// EvictionHolds implements httpapi.EvictionHoldSource.
func (e evictionHolds) EvictionHolds() []httpapi.EvictionHold {
	hs := e.r.EvictionHolds()
	if len(hs) == 0 {
		return nil
	}
	out := make([]httpapi.EvictionHold, len(hs))
	for i, h := range hs {
		out[i] = httpapi.EvictionHold{Reason: h.Reason, Members: h.Members, Since: h.Since, Until: h.Until, Detail: h.Detail}
	}
	return out
}
