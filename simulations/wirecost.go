package simulations

// The wire cost of replication by cluster size: messages per client
// renewal and per registration, counted from the replicators' own
// counters (cluster.Replicator.Stats), not timed.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// WireCost is what the nodes of one cluster sent while steady clients
// renewed (the renewal window) and while new clients registered.
type WireCost struct {
	// Nodes and Clients are the cluster size and the steady clients.
	Nodes, Clients int
	// Window is how long the renewals were counted.
	Window time.Duration
	// Renewals counts the client renewals the nodes accepted in the window.
	Renewals uint64
	// RenewalMessages counts the renewal-forwarding messages all nodes sent
	// in the window; Messages every replication message (renewals, load
	// reports, digests, records).
	RenewalMessages, Messages uint64
	// Registrations counts the new clients registered in the second phase,
	// RecordMessages the record messages all nodes sent meanwhile.
	Registrations  int
	RecordMessages uint64
	// Forwarded counts the renewals the nodes forwarded to owners in the
	// window (several may share a message); Failed the sends that failed
	// or were dropped from full queues, over both phases. Delivered
	// reports that every node listed every new instance within ten
	// seconds (else the record count is cut short).
	Forwarded, Failed uint64
	Delivered         bool
	// Dials counts the streams all nodes dialled in the renewal window
	// (memberlist's probes and push/pulls over TCP, exchanges, and peer
	// sessions, which last: cluster.Membership.Dials).
	Dials uint64
	// BootDials counts the streams all nodes dialled from their start
	// until each had a session to every peer and had heard every member's
	// first probe answer (which costs one push/pull per member and
	// process: cluster.Membership.BootsSeen), when the window may begin.
	BootDials uint64
}

// BootDialsPerNode is the streams a node dialled while the cluster booted:
// about two per peer (a session, a push/pull on its first probe answer),
// once.
func (w WireCost) BootDialsPerNode() float64 {
	if w.Nodes == 0 {
		return 0
	}
	return float64(w.BootDials) / float64(w.Nodes)
}

// PerRenewal is the renewal-forwarding messages per client renewal, all
// nodes together: at most 1 (each renewal is forwarded at most once, to its
// application's owner, and renewals to the same owner share a message).
func (w WireCost) PerRenewal() float64 {
	if w.Renewals == 0 {
		return 0
	}
	return float64(w.RenewalMessages) / float64(w.Renewals)
}

// PerRegistrationPerPeer is the record messages per registration and per
// other node: a registration is sent once to every other member.
func (w WireCost) PerRegistrationPerPeer() float64 {
	if w.Registrations == 0 || w.Nodes < 2 {
		return 0
	}
	return float64(w.RecordMessages) / float64(w.Registrations*(w.Nodes-1))
}

// DialsPerNodeSecond is the streams a node dialled per second of the
// renewal window, on average: flat in the cluster size when peers keep one
// session each.
func (w WireCost) DialsPerNodeSecond() float64 {
	if w.Nodes == 0 || w.Window <= 0 {
		return 0
	}
	return float64(w.Dials) / float64(w.Nodes) / w.Window.Seconds()
}

// MessagesPerNodeSecond is every replication message a node sent per
// second in the renewal window, on average.
func (w WireCost) MessagesPerNodeSecond() float64 {
	if w.Window <= 0 || w.Nodes == 0 {
		return 0
	}
	return float64(w.Messages) / float64(w.Nodes) / w.Window.Seconds()
}

// wireCostConfig is cfg made fit for counting: the sampler and the prober
// slowed down (at 50 nodes they would read 1500 applications a second),
// and a one-second settle tail.
func wireCostConfig(cfg Config) Config {
	cfg.Timers.SampleInterval = 2 * time.Second
	cfg.Timers.ProbeInterval = time.Second
	cfg.SettleTail = time.Second
	return cfg
}

// MeasureWireCost starts a cluster of cfg.Nodes nodes with perNode steady
// clients next to every node, waits two renewal windows, counts for window
// what the nodes sent against the renewals they accepted, then registers
// registrations new clients and counts the record messages until every node
// holds them (or ten seconds passed).
func MeasureWireCost(ctx context.Context, cfg Config, perNode, registrations int, window time.Duration) (WireCost, error) {
	cfg = wireCostConfig(cfg)
	if perNode < 1 || registrations < 1 || window <= 0 {
		return WireCost{}, fmt.Errorf("%w: wire cost: perNode %d, registrations %d and window %v must be positive",
			ErrInvalidConfig, perNode, registrations, window)
	}
	var w WireCost
	sc := Scenario{
		Name:    "wire-cost",
		Summary: "Steady clients renew; then new clients register. Counts the replication messages.",
		Drive: func(s *Sim) error {
			t := s.Timers()
			steady := s.NewClients(perNode, Apps)
			if err := s.WaitRegistered(steady, registerWithin+time.Duration(len(steady))*10*time.Millisecond); err != nil {
				return err
			}
			if err := s.Sleep(2 * t.RenewalWindow); err != nil {
				return err
			}
			w.Nodes, w.Clients = len(s.c.Names()), len(steady)
			// A booting node push/pulls with each member on its first
			// probe answer, over its first probe round (N−1 probe
			// intervals): a one-time cost, counted apart.
			if err := s.waitBooted(time.Duration(w.Nodes)*2*time.Second + 10*time.Second); err != nil {
				return err
			}
			w.BootDials = s.c.Dials()
			// Count between two moments when no peer link has a record
			// or control message waiting, so that a backlog neither
			// inflates nor hides the window's messages.
			if err := s.waitDrained(10 * time.Second); err != nil {
				return err
			}
			t0 := time.Now()
			wire0, cl0, dials0 := s.c.WireStats(), s.stats.snapshot(), s.c.Dials()
			if err := s.Sleep(window); err != nil {
				return err
			}
			if err := s.waitDrained(10 * time.Second); err != nil {
				return err
			}
			w.Window = time.Since(t0).Round(time.Millisecond)
			wire1, cl1, dials1 := s.c.WireStats(), s.stats.snapshot(), s.c.Dials()
			w.Dials = dials1 - dials0
			w.Renewals = cl1.Renewals - cl0.Renewals
			w.RenewalMessages = wire1.RenewalMessages - wire0.RenewalMessages
			w.Messages = wire1.Messages - wire0.Messages
			w.Forwarded = wire1.Renewals - wire0.Renewals
			s.Event("renewals", "%d renewals, %d renewal messages, %d messages in %v", w.Renewals, w.RenewalMessages, w.Messages, window)

			names := s.c.Names()
			var fresh []*Client
			for i := range registrations {
				fresh = append(fresh, s.NewClient(Apps[i%len(Apps)], names[s.IntN(len(names))]))
			}
			if err := s.WaitRegistered(fresh, registerWithin); err != nil {
				return err
			}
			// Until every node lists every new instance.
			limit := time.Now().Add(10 * time.Second)
			for time.Now().Before(limit) {
				all := true
				for _, n := range names {
					nd := s.c.Node(n)
					if nd == nil {
						all = false
						break
					}
					fp := Fingerprint(nd)
					for _, cl := range fresh {
						if !strings.Contains(fp, "|"+cl.App+"/"+cl.ID+"@") {
							all = false
							break
						}
					}
				}
				if all {
					w.Delivered = true
					break
				}
				if err := s.Sleep(50 * time.Millisecond); err != nil {
					return err
				}
			}
			wire2 := s.c.WireStats()
			w.Registrations = len(fresh)
			w.RecordMessages = wire2.RecordMessages - wire1.RecordMessages
			w.Failed = wire2.SendErrors + wire2.Dropped - wire0.SendErrors - wire0.Dropped
			s.Event("registrations", "%d registrations, %d record messages", w.Registrations, w.RecordMessages)
			return nil
		},
	}
	res, err := Run(ctx, sc, cfg)
	if err != nil {
		return WireCost{}, err
	}
	if res.Err != "" {
		return w, fmt.Errorf("simulations: wire cost at %d nodes: %s", cfg.Nodes, res.Err)
	}
	return w, nil
}

// WriteWireCost renders costs as a Markdown table with a header naming the
// command and revision.
func WriteWireCost(wr io.Writer, h ReportHeader, costs []WireCost) error {
	var b strings.Builder
	b.WriteString("# Replication wire cost by cluster size\n\n")
	if h.Command != "" {
		fmt.Fprintf(&b, "Produced by `%s`", h.Command)
		if h.Revision != "" {
			fmt.Fprintf(&b, " at revision %s", h.Revision)
		}
		if !h.Generated.IsZero() {
			fmt.Fprintf(&b, " on %s", h.Generated.UTC().Format("2006-01-02 15:04 MST"))
		}
		b.WriteString(".\n")
	}
	b.WriteString("All nodes in one process on the memnet network with the simulation timers; counts are the replicators' own " +
		"(`cluster.Replicator.Stats`). Renewal messages are the forwards of client renewals to the application's owner; " +
		"record messages are what the nodes sent while new clients registered; all messages include the load reports " +
		"(every member to every member, every 500 ms, on the peer sessions) and anti-entropy digests and pulls. " +
		"Dials are the streams the nodes opened (`cluster.Membership.Dials`: memberlist's probes and push/pulls over TCP, " +
		"peer sessions); a node keeps one session per peer and pulls on it, so after the boot (a session and a push/pull " +
		"on the first probe answer per peer, once) they stay flat in the cluster size. The window begins once every node " +
		"has had every member's first probe answer (`cluster.Membership.BootsSeen`). " +
		"The load reports are the one message that grows with the cluster: N−1 small frames per node per LoadInterval, " +
		"sent directly on purpose, for a report that arrives is also the evidence that the member's forwards reach this node " +
		"(a relayed report would hide a one-way block; see cluster/load.go's Holds). With the production LoadInterval of 15 s " +
		"that is 3.3 frames per node per second at 50 nodes, on sessions already open.\n\n")
	b.WriteString("| nodes | steady clients | window | client renewals | renewals forwarded | renewal messages | **messages per renewal** | registrations | record messages | **record messages per registration per peer** | all delivered | failed or dropped sends | all messages per node per second | dials at boot | dials at boot per node | dials in the window | **dials per node per second** |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, w := range costs {
		fmt.Fprintf(&b, "| %d | %d | %v | %d | %d | %d | **%.2f** | %d | %d | **%.2f** | %v | %d | %.1f | %d | %.1f | %d | **%.2f** |\n", w.Nodes, w.Clients, w.Window,
			w.Renewals, w.Forwarded, w.RenewalMessages, w.PerRenewal(), w.Registrations, w.RecordMessages, w.PerRegistrationPerPeer(),
			w.Delivered, w.Failed, w.MessagesPerNodeSecond(), w.BootDials, w.BootDialsPerNode(), w.Dials, w.DialsPerNodeSecond())
	}
	_, err := io.WriteString(wr, b.String())
	return err
}

// WireCostSlack is how much the messages per renewal may grow from the
// smallest cluster measured to a larger one and still count as flat: the
// share of renewals that land next to their owner (and so need no message)
// falls from 1/5 to 1/50 between 5 and 50 nodes, and the counts of a few
// seconds vary.
const WireCostSlack = 0.15

// DialsSlack is how many more streams per node per second a larger cluster
// may dial than the smallest one measured and still count as flat: the
// memberlist's periodic push/pull (one per PushPullInterval per node) and
// its TCP pings when a probe's ack is late under load.
const DialsSlack = 0.25

// CheckWireCost reports whether costs (in increasing cluster size) are flat:
// at most one renewal message per client renewal (plus one per node for the
// renewals accepted just before the window and forwarded in it) and one record message per
// registration and peer at every size, and the messages per renewal no more
// than WireCostSlack above the smallest cluster's.
func CheckWireCost(costs []WireCost) error {
	if len(costs) == 0 {
		return fmt.Errorf("simulations: wire cost: nothing measured")
	}
	var errs []string
	base := costs[0]
	for _, w := range costs {
		if w.Renewals == 0 {
			errs = append(errs, fmt.Sprintf("%d nodes: no renewals counted", w.Nodes))
			continue
		}
		// A message sent in the window may carry renewals accepted just
		// before it: at most one forwarding flush per node.
		if bound := 1 + float64(w.Nodes)/float64(w.Renewals); w.PerRenewal() > bound {
			errs = append(errs, fmt.Sprintf("%d nodes: %.2f messages per renewal (more than 1, beyond the window's edge of %.2f)", w.Nodes, w.PerRenewal(), bound-1))
		}
		if w.PerRegistrationPerPeer() > 1 {
			errs = append(errs, fmt.Sprintf("%d nodes: %.2f record messages per registration and peer (more than 1)", w.Nodes, w.PerRegistrationPerPeer()))
		}
		if w.DialsPerNodeSecond() > base.DialsPerNodeSecond()+DialsSlack {
			errs = append(errs, fmt.Sprintf("%d nodes: %.2f dials per node per second, up from %.2f at %d nodes (a connection per message?)",
				w.Nodes, w.DialsPerNodeSecond(), base.DialsPerNodeSecond(), base.Nodes))
		}
		if w.PerRenewal() > base.PerRenewal()+WireCostSlack {
			errs = append(errs, fmt.Sprintf("%d nodes: %.2f messages per renewal, up from %.2f at %d nodes (grows with the cluster)",
				w.Nodes, w.PerRenewal(), base.PerRenewal(), base.Nodes))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("simulations: wire cost not flat: %s", strings.Join(errs, "; "))
	}
	return nil
}

// waitBooted waits until every running node has had the first probe
// answer of every other (cluster.Membership.BootsSeen), or within passed.
func (s *Sim) waitBooted(within time.Duration) error {
	limit := time.Now().Add(within)
	for time.Now().Before(limit) {
		up := s.c.Up()
		booted := true
		for _, n := range up {
			nd := s.c.Node(n)
			if nd == nil || nd.Members() == nil || nd.Members().BootsSeen() < len(up)-1 {
				booted = false
				break
			}
		}
		if booted {
			return nil
		}
		if err := s.Sleep(100 * time.Millisecond); err != nil {
			return err
		}
	}
	s.Event("not-booted", "not every node has had every member's first probe answer after %v", within)
	return nil
}

// waitDrained waits until no running node has a record or control message
// (digest, load report) queued for a peer (cluster.Replicator.PeerQueues), or within passed.
func (s *Sim) waitDrained(within time.Duration) error {
	limit := time.Now().Add(within)
	for time.Now().Before(limit) {
		drained := true
		for _, n := range s.c.Up() {
			nd := s.c.Node(n)
			if nd == nil || nd.Replicator() == nil {
				continue
			}
			for _, q := range nd.Replicator().PeerQueues() {
				// Renewals wait up to one forwarding interval by design;
				// at 50 nodes some always do.
				if q.Records > 0 || q.Control > 0 {
					drained = false
				}
			}
		}
		if drained {
			return nil
		}
		if err := s.Sleep(10 * time.Millisecond); err != nil {
			return err
		}
	}
	s.Event("not-drained", "peer queues still not empty after %v", within)
	return nil
}
