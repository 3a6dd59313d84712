// Package netns runs Heureka as real processes on a real (virtual) network:
// one `heureka` binary per Linux network namespace, the namespaces joined by
// veth pairs to a bridge, Eureka clients and an observer in a namespace of
// their own. It breaks the network and the processes on purpose and judges
// the runs with the in-process simulations' checkers.
//
// Run it as root with `make chaos-netns`, which writes RESULTS.md here; the
// test behind it has the build tag netns, so `go test ./...` does not run
// it (and skips with a message where namespaces cannot be made).
//
// # The lab (lab.go)
//
// A run r makes hk-r-<scenario>-br (the bridge br0), hk-r-<scenario>-c
// (eth0 10.77.0.2/24: clients and observer) and hk-r-<scenario>-n<i> (eth0
// 10.77.0.<10+i>/24, one heureka process each, started with `ip netns exec`
// and the simulations' shortened timers, ServerFlags). Nothing is added to
// the root namespace. The harness itself stays in the root namespace and
// opens its HTTP connections inside the client namespace (dial_linux.go:
// setns on a locked thread).
//
// # Faults
//
//   - link down: the node's bridge port is set down (no peer, no client);
//   - loss: a classic BPF program (`ld rand`, modulo 100) on the clsact
//     egress hook of every bridge port, so every path between two hosts
//     loses that share each way (bpf.go; this kernel has no netem and no
//     gact, so the program returns the drop verdict itself in
//     direct-action mode);
//   - partition: a BPF program on each node's port dropping IPv4 packets
//     from the other side's addresses; the clients keep to their side;
//   - SIGKILL (then a fresh process under the same name and address) and
//     SIGSTOP/SIGCONT.
//
// The ping checks in the scenarios confirm that a filter drops what it
// should.
//
// # Judging
//
// The observer reads GET /eureka/apps and /cluster/members from every node
// every 200 ms; the clients log their lives. observe.go turns these into
// simulations.Observations, and the checkers no-missing-renewer,
// convergence, no-resurrection and membership judge them with the
// simulations' thresholds. The HTTP API does not expose record versions,
// tombstones or the in-process self-preservation readings, so the checks
// that need them (renewer-kept, tombstone-ttl, the version part of
// no-resurrection) do not apply here.
//
// # Cleanup
//
// RunScenario removes every process and namespace of its run before it
// returns, on errors and panics too; HandleSignals does the same on SIGINT,
// SIGTERM and SIGHUP; the heureka processes die with the harness
// (Pdeathsig); and CleanupRun, like make chaos-netns's shell sweep, lists
// `ip netns list` for hk-<run>- and deletes what is there. TestNetns checks
// all of these by failing runs on purpose, an unrecovered panic in a
// harness process included (Config.PanicAt, HK_NETNS_PANIC_AT).
//
// # Datacenters (dc.go)
//
// `make chaos-netns-datacenters` (TestNetnsDatacenters, DATACENTERS.md)
// runs federation on the same lab: 2 datacenters of 3 nodes following each
// other, then 3 in a ring, each datacenter its own gossip cluster (--region,
// --join inside it) following the others through --remote-region URLs,
// with the tombstone TTL and the federation timers scaled with the lab's
// leases (DCTimers). The WAN cut is the partition filter with one group per
// datacenter. It measures how fast a registration and a cancel cross
// (p99 over 50 of each), counts echoes and re-exports in every node's
// reads, and cuts the WAN past the tombstone TTL and the drop time: when
// /admin/regions turns stale and dropped, what the reads serve meanwhile,
// how fast they converge after the heal, and that nothing cancelled during
// the cut comes back. bench/cmd/wanbytes measures the WAN bytes per change
// (on loopback, no namespaces).
//
// # Charts
//
// TestNetns draws every run with simulations.WriteCharts (registry size and
// live members per node, replication lag, convergence, the fault windows
// shaded) into charts/ beside RESULTS.md, which links them.
package netns
