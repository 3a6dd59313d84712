package clusterbench

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/heureka/heureka/bench"
)

// ---- 2b. CPU per renewal at a fixed rate per node ---------------------------------

const (
	// perNodeRate is the client renewals per second each node serves in
	// BenchmarkRenewalPerNode: 4,250/s in all at 17 nodes, which with the
	// nodes' idle work still leaves this 2-CPU machine some headroom.
	perNodeRate = 250
	// perNodeInstances is the registry's share per node, perNodeApps
	// applications of 10 instances. At perNodeRate each instance renews
	// every 2s: longer than the 1s flush, so, as with Eureka's 30s
	// interval, no renewal is coalesced with another of the same
	// instance, and each owner owns about perNodeApps applications.
	perNodeInstances = 500
	perNodeApps      = 50
)

// BenchmarkRenewalPerNode measures the CPU a client renewal costs as nodes
// are added while each node's clients keep renewing at perNodeRate, so N
// nodes carry N times the renewals, and the registry grows with N
// (perNodeInstances per node). The cluster runs on a MemNetwork with the
// production replication settings, as in BenchmarkWirePerRenewal, and
// every phase lasts wireDrive+wireDrain (11.5s):
//
//  1. idle: no renewals;
//  2. home: instance k renews on node k%N, where it registered; a renewal
//     reaching a node that does not own its application is forwarded;
//  3. owner: the same renewals, each sent to its application's owner, so
//     none is forwarded: a client renewal answered on the node it hits;
//  4. null: the same requests to a do-nothing net/http server on
//     loopback, what the in-process client and net/http alone cost;
//  5. idle again.
//
// A phase's net CPU is its process CPU minus the idle phases' average CPU
// rate for as long. The parent benchmark prints the figures of every
// cluster size as markdown tables (RESULTS.md).
func BenchmarkRenewalPerNode(b *testing.B) {
	start := time.Now().UTC()
	load0 := bench.LoadAvg()
	var rows []renewalRow
	for _, n := range []int{3, 5, 9, 17} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			rows = append(rows, benchWire(b, n, renewalLoad{instances: perNodeInstances * n, apps: perNodeApps * n,
				rate: perNodeRate * float64(n), workers: max(32, 8*n), split: true}))
		})
	}
	printRenewalTables(os.Stdout, rows, start, load0, bench.LoadAvg())
}

// phaseCPU is the process CPU a phase used and its length.
type phaseCPU struct{ cpu, wall time.Duration }

func (p phase) used() phaseCPU { return phaseCPU{p.cpu, p.wall} }

// cpuMs and wallS are the figures the tables print.
func (p phaseCPU) cpuMs() float64 { return ms(p.cpu) }
func (p phaseCPU) wallS() float64 { return p.wall.Seconds() }

// renewalRow is one cluster size's figures.
type renewalRow struct {
	nodes, instances, apps int
	rate                   float64 // client renewals per second, all nodes
	// home phase: renewals served, those that reached a non-owner (from
	// Replicator.OwnerOf), forwarded keys and renewal messages (from
	// Replicator.Stats).
	renewals, nonOwner   int
	fwdKeys, renewalMsgs uint64
	ownerRenewals        int    // owner phase
	ownerFwdKeys         uint64 // owner phase: must be 0
	nullRequests         int    // null phase
	// process CPU and wall time of each phase
	idle, home, owner, null, idle2 phaseCPU
	late, lateOwner, lateNull      int64 // requests sent >100ms behind schedule
	share                          float64
	load0, load1                   string // load averages before setup and after the phases
}

// idleRate is the idle CPU in ms per second, over both idle phases.
func (r renewalRow) idleRate() float64 {
	return (r.idle.cpuMs() + r.idle2.cpuMs()) / (r.idle.wallS() + r.idle2.wallS())
}

// netMs is a phase's CPU minus the idle CPU for as long, in ms.
func (r renewalRow) netMs(p phaseCPU) float64 { return p.cpuMs() - r.idleRate()*p.wallS() }

// perRenewal is a phase's net CPU per request, in µs.
func (r renewalRow) perRenewal(p phaseCPU, count int) float64 {
	if count == 0 {
		return 0
	}
	return 1000 * r.netMs(p) / float64(count)
}

// fwdPerRenewal is what forwarding adds to a renewal, on average over all
// renewals: home phase minus owner phase, µs per renewal.
func (r renewalRow) fwdPerRenewal() float64 {
	return r.perRenewal(r.home, r.renewals) - r.perRenewal(r.owner, r.ownerRenewals)
}

// fwdPerForwarded is what forwarding costs per renewal that reached a
// non-owner, in µs.
func (r renewalRow) fwdPerForwarded() float64 {
	if r.nonOwner == 0 {
		return 0
	}
	return r.fwdPerRenewal() * float64(r.renewals) / float64(r.nonOwner)
}

// printRenewalTables prints BenchmarkRenewalPerNode's figures as markdown
// tables. Every ratio is printed beside the figures it is computed from.
func printRenewalTables(w io.Writer, rows []renewalRow, start time.Time, load0, load1 string) {
	if len(rows) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\nBenchmarkRenewalPerNode: started %s, load average (1 5 15 min) %s at start, %s at end\n",
		start.Format("2006-01-02 15:04:05 UTC"), load0, load1)

	p("\nPhases: process CPU (ms) in wall time (s); idle rate = (idle 1 + idle 2 CPU) ÷ (their wall time)\n\n")
	p("| nodes | instances | apps | idle 1 | home | owner | null | idle 2 | idle rate ms/s | cpu-share | load avg before → after |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		f := func(c phaseCPU) string { return fmt.Sprintf("%.0f in %.2f", c.cpuMs(), c.wallS()) }
		p("| %d | %d | %d | %s | %s | %s | %s | %s | %.1f | %.0f%% | %s → %s |\n", r.nodes, r.instances, r.apps,
			f(r.idle), f(r.home), f(r.owner), f(r.null), f(r.idle2), r.idleRate(), 100*r.share, r.load0, r.load1)
	}

	p("\nCPU per renewal, home phase (clients renew where they registered): net = CPU − idle rate × wall; µs/renewal = net ÷ renewals;\n" +
		"per node = net ÷ nodes ÷ wall\n\n")
	p("| nodes | renewals | renewals/s/node | wall s | CPU ms | idle rate ms/s | net CPU ms | µs/renewal | net CPU ms/s per node | late |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		p("| %d | %d | %.0f | %.2f | %.0f | %.1f | %.0f | %.1f | %.1f | %d |\n", r.nodes, r.renewals, r.rate/float64(r.nodes),
			r.home.wallS(), r.home.cpuMs(), r.idleRate(), r.netMs(r.home), r.perRenewal(r.home, r.renewals),
			r.netMs(r.home)/float64(r.nodes)/r.home.wallS(), r.late)
	}

	p("\nForwarding, home phase: non-owner = renewals that reached a node not owning the application (Replicator.OwnerOf);\n" +
		"forwarded keys and renewal messages from Replicator.Stats\n\n")
	p("| nodes | renewals | non-owner | non-owner ÷ renewals | forwarded keys | keys ÷ renewals | renewal msgs | msgs ÷ renewals | keys ÷ msgs |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		p("| %d | %d | %d | %.3f | %d | %.3f | %d | %.4f | %.1f |\n", r.nodes, r.renewals, r.nonOwner,
			float64(r.nonOwner)/float64(r.renewals), r.fwdKeys, float64(r.fwdKeys)/float64(r.renewals),
			r.renewalMsgs, float64(r.renewalMsgs)/float64(r.renewals), float64(r.fwdKeys)/max(float64(r.renewalMsgs), 1))
	}

	p("\nSplit: owner = the same renewals sent to the owner (none forwarded); null = the same requests to a do-nothing net/http server;\n" +
		"net as above; forwarding = home − owner µs/renewal; per forwarded = forwarding × renewals ÷ non-owner\n\n")
	p("| nodes | null requests | null net ms | null µs/req | owner renewals | owner fwd keys | owner net ms | owner µs/renewal | " +
		"home µs/renewal | forwarding µs/renewal | renewals | non-owner | forwarding µs per forwarded | late owner/null |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		p("| %d | %d | %.0f | %.1f | %d | %d | %.0f | %.1f | %.1f | %.1f | %d | %d | %.1f | %d/%d |\n", r.nodes,
			r.nullRequests, r.netMs(r.null), r.perRenewal(r.null, r.nullRequests),
			r.ownerRenewals, r.ownerFwdKeys, r.netMs(r.owner), r.perRenewal(r.owner, r.ownerRenewals),
			r.perRenewal(r.home, r.renewals), r.fwdPerRenewal(), r.renewals, r.nonOwner, r.fwdPerForwarded(),
			r.lateOwner, r.lateNull)
	}
	p("\n")
}
