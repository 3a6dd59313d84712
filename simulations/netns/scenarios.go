//go:build linux

package netns

import (
	"fmt"
	"time"

	"github.com/heureka/heureka/simulations"
)

// Apps are the applications the clients register.
var Apps = []string{"ORDERS", "PAYMENTS", "USERS", "CATALOG", "SEARCH"}

// invariants judge every scenario: the simulations' properties 1–4. The
// others need what only the in-process prober reads (tombstones,
// self-preservation figures, record versions).
var invariants = []string{
	simulations.InvNoMissingRenewer,
	simulations.InvConvergence,
	simulations.InvNoResurrection,
	simulations.InvMembership,
}

// Scenarios are the runs of make chaos-netns, in order.
var Scenarios = []Scenario{
	{
		Name: "partition-heal",
		Summary: "The nodes split 2|3 for 10 s (BPF drop filters on the bridge ports); clients churn on both sides, " +
			"one client per side cancels and a new one registers; then the partition heals.",
		Invariants: invariants,
		Drive:      drivePartitionHeal,
	},
	{
		Name: "cancel-during-partition",
		Summary: "The nodes split 2|3 for 10 s; one second in, on each side two clients cancel, one dies silently and one registers. " +
			"After the heal no cancelled instance may come back anywhere.",
		Invariants: invariants,
		Drive:      driveCancelDuringPartition,
	},
	{
		Name:       "crash-restart",
		Summary:    "n0, a seed, is SIGKILLed for 8 s under churn, then started again with the same name and addresses and an empty registry.",
		Invariants: invariants,
		Drive:      driveCrashRestart,
	},
	{
		Name: "loss",
		Summary: "For 12 s under churn, 10% of the packets are dropped on every path, each way: node to node and client to node " +
			"(a classic BPF `ld rand` filter on every bridge port's egress).",
		Invariants: invariants,
		Drive:      func(r *Run) error { return driveLoss(r, 10, 12*time.Second) },
		Thresholds: func(th *simulations.Thresholds) { th.MaxMissing += synRetries },
	},
	{
		Name: "heavy-loss",
		Summary: "For 20 s under churn, 20% of the packets are dropped on every path, each way (36% of round trips fail). " +
			"Peers talk over one long-lived connection each, so no renewing instance may go missing anywhere: no allowance " +
			"for lost SYNs.",
		Invariants: invariants,
		Drive:      func(r *Run) error { return driveLoss(r, 20, 20*time.Second) },
	},
	{
		Name:       "link-down",
		Summary:    "n3's link goes down for 8 s (its bridge port set down: no peer and no client reaches it), then up again.",
		Invariants: invariants,
		Drive:      driveLinkDown,
	},
	{
		Name: "pause",
		Summary: "n2 is SIGSTOPped for 12 s under churn (its sockets stay open and the kernel accepts connections nobody answers; " +
			"the others declare it dead and take its applications over), then SIGCONTed: it wakes with a stale registry and a stale view.",
		Invariants: invariants,
		Drive:      drivePause,
	},
}

// synRetries is what two lost TCP handshake packets in a row cost: Linux
// resends a SYN after 1 s, then after 2 s more. Clients open connections
// too, and Eureka's timers are shrunk 30× here while TCP's are not: against
// a 90 s lease these 3 s are nothing, against the 3 s lease they are a whole
// lease. The light loss scenario allows a lease plus synRetries (and the
// report shows the measured figure against it); the heavy one, whose peers
// keep one connection each, allows none.
const synRetries = 3 * time.Second

// warmUp starts three steady clients per node and waits until they have
// registered.
func warmUp(r *Run) ([]*Client, error) {
	cs := r.NewClients(3, Apps)
	if err := r.WaitRegistered(cs, 15*time.Second); err != nil {
		return nil, err
	}
	return cs, nil
}

func churn(r *Run) {
	r.StartChurn(Apps, 500*time.Millisecond, 2*time.Second, 5*time.Second, 0.25)
}

// split cuts the nodes 2|3 (in a seeded order) and checks the cut with
// ping: across it nothing passes, within a side everything does.
func split(r *Run) ([][]string, error) {
	nodes := r.Shuffled(r.Nodes())
	k := max(1, 2*len(nodes)/5)
	groups := [][]string{nodes[:k], nodes[k:]}
	if err := r.Partition(groups...); err != nil {
		return nil, err
	}
	a, b, c := groups[0][0], groups[1][0], groups[1][1]
	s1, r1, err := r.Ping(a, r.IP(b), 20, 10*time.Millisecond)
	if err != nil {
		return nil, err
	}
	s2, r2, err := r.Ping(b, r.IP(c), 20, 10*time.Millisecond)
	if err != nil {
		return nil, err
	}
	r.Figure("partition check with ping: %s→%s (across) %d of %d answered; %s→%s (same side) %d of %d answered", a, b, r1, s1, b, c, r2, s2)
	if r1 != 0 || r2 != s2 {
		return nil, fmt.Errorf("netns: the partition filters do not cut as intended: across %d/%d, within %d/%d", r1, s1, r2, s2)
	}
	return groups, nil
}

// onSide returns the clients of cs located in group.
func onSide(cs []*Client, group []string) []*Client {
	var out []*Client
	for _, c := range cs {
		for _, n := range group {
			if c.Location == n {
				out = append(out, c)
			}
		}
	}
	return out
}

func drivePartitionHeal(r *Run) error {
	cs, err := warmUp(r)
	if err != nil {
		return err
	}
	churn(r)
	if err := r.Sleep(2 * time.Second); err != nil {
		return err
	}
	groups, err := split(r)
	if err != nil {
		return err
	}
	if err := r.Sleep(2 * time.Second); err != nil {
		return err
	}
	for _, g := range groups {
		side := onSide(cs, g)
		r.StopClients(side[:1], true)
		r.NewClient(Apps[r.IntN(len(Apps))], g[r.IntN(len(g))])
	}
	if err := r.Sleep(8 * time.Second); err != nil {
		return err
	}
	if err := r.Heal(); err != nil {
		return err
	}
	return r.Sleep(4 * time.Second)
}

func driveCancelDuringPartition(r *Run) error {
	cs, err := warmUp(r)
	if err != nil {
		return err
	}
	if err := r.Sleep(2 * time.Second); err != nil {
		return err
	}
	groups, err := split(r)
	if err != nil {
		return err
	}
	if err := r.Sleep(time.Second); err != nil {
		return err
	}
	for _, g := range groups {
		side := onSide(cs, g)
		r.StopClients(side[:2], true)
		r.StopClients(side[2:3], false)
		r.NewClient(Apps[r.IntN(len(Apps))], g[r.IntN(len(g))])
	}
	if err := r.Sleep(9 * time.Second); err != nil {
		return err
	}
	if err := r.Heal(); err != nil {
		return err
	}
	return r.Sleep(5 * time.Second)
}

func driveCrashRestart(r *Run) error {
	return faultFor(r, func() error { return r.Kill("n0") }, func() error { return r.Restart("n0") }, 8*time.Second, 5*time.Second)
}

// faultFor warms up, starts the churn and two seconds later injects a
// fault; it lifts the fault d later and observes for tail.
func faultFor(r *Run, inject, lift func() error, d, tail time.Duration) error {
	if _, err := warmUp(r); err != nil {
		return err
	}
	churn(r)
	if err := r.Sleep(2 * time.Second); err != nil {
		return err
	}
	if err := inject(); err != nil {
		return err
	}
	if err := r.Sleep(d); err != nil {
		return err
	}
	if err := lift(); err != nil {
		return err
	}
	return r.Sleep(tail)
}

// driveLoss drops pct% of the packets on every bridge port's egress for d.
func driveLoss(r *Run, pct int, d time.Duration) error {
	if _, err := warmUp(r); err != nil {
		return err
	}
	churn(r)
	if err := r.Sleep(2 * time.Second); err != nil {
		return err
	}
	before, err := r.NodeTCPCounters()
	if err != nil {
		return err
	}
	if err := r.SetLoss(pct); err != nil {
		return err
	}
	// Calibrate while the loss lasts: a ping and its reply cross two
	// filters, n0's port and the clients'.
	start := time.Now()
	sent, recv, err := r.Ping("c", r.IP("n0"), 1000, 5*time.Millisecond)
	if err != nil {
		return err
	}
	lost := 100 * float64(sent-recv) / float64(sent)
	keep := 1 - float64(pct)/100
	want := 100 * (1 - keep*keep)
	r.Figure("loss check with ping: client→n0→client %d sent, %d answered: %.1f%% lost (expected 1−%.1f² = %.0f%%)",
		sent, recv, lost, keep, want)
	if lost < want*0.65 || lost > want*1.35 {
		return fmt.Errorf("netns: the loss filters drop %.1f%% of the pings, not about %.0f%%", lost, want)
	}
	if err := r.Sleep(d - time.Since(start)); err != nil {
		return err
	}
	if err := r.SetLoss(0); err != nil {
		return err
	}
	after, err := r.NodeTCPCounters()
	if err != nil {
		return err
	}
	delta := func(k string) int64 { return after[k] - before[k] }
	r.Figure("the nodes' TCP during the loss (nstat, all node namespaces): %d connections opened (%.0f a second; "+
		"peers keep one each; memberlist's probes and push/pulls open more), %d segments sent, %d retransmitted (%.1f%%), %d of them SYNs",
		delta("TcpActiveOpens"), float64(delta("TcpActiveOpens"))/time.Since(start).Seconds(), delta("TcpOutSegs"),
		delta("TcpRetransSegs"), 100*float64(delta("TcpRetransSegs"))/float64(max(1, delta("TcpOutSegs"))), delta("TcpExtTCPSynRetrans"))
	return r.Sleep(3 * time.Second)
}

func driveLinkDown(r *Run) error {
	down := func() error {
		if err := r.LinkDown("n3"); err != nil {
			return err
		}
		if s, rc, err := r.Ping("c", r.IP("n3"), 10, 10*time.Millisecond); err == nil {
			r.Figure("link check with ping: client→n3 %d of %d answered while the link is down", rc, s)
		}
		return nil
	}
	return faultFor(r, down, func() error { return r.LinkUp("n3") }, 8*time.Second, 4*time.Second)
}

func drivePause(r *Run) error {
	return faultFor(r, func() error { return r.Pause("n2") }, func() error { return r.Resume("n2") }, 12*time.Second, 4*time.Second)
}
