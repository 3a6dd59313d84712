// Package simulations runs whole Heureka clusters inside one process, breaks
// them on purpose and judges the outcome by invariants.
//
// # What it owns
//
// A Cluster is N real nodes (node.Start: actors, view, HTTP API on
// 127.0.0.1:0, membership and replication) wired to one seeded
// memnet.Network, with timers shrunk from Eureka's minutes to seconds
// (Timers). Simulated Eureka clients register over HTTP against a node,
// renew every RenewInterval, fail over to the next node of their list on an
// error (as the Java client does), re-register when a renewal answers 404
// and cancel when they stop. A Scenario drives clients (steady ones and
// churn) and faults (partition and heal, packet loss and delay, node crash
// and restart, a node that stops reading its streams, mass client failure)
// on a schedule drawn from the seed.
//
// While a scenario runs, a sampler asks every node over HTTP for every
// application (GET /eureka/apps/{app}) every SampleInterval, and a prober
// reads every node's view fingerprint, live members and self-preservation
// status in process every ProbeInterval (and, once a second, the tombstones
// each registry would send a peer). Together with the clients' own log
// (when each instance lived, each registration, when it was cancelled)
// these form the Observations. Checkers (one file each, invariant_*.go;
// the table in invariants.go) turn Observations into Verdicts against
// explicit Thresholds, and Report renders the Results
// as Markdown. RunAll runs many scenarios and seeds side by side and
// WriteResults summarises them; RunSabotage runs scenarios with the bug
// switches of internal/sabotage on (in a -tags sabotage build) and
// WriteSabotageReport tells which verdicts caught each switch.
//
// # Reachability model
//
// Faults of the memnet network cut node-to-node traffic only; HTTP between a
// client and a node always runs on loopback. The harness therefore models
// what a client can reach: every client lives next to one node (its
// Location). A crashed node is reachable by no one; during a partition a
// client reaches only the nodes on its location's side. Clients refuse to
// send to unreachable nodes, and the "never missing" invariant looks only
// at the nodes a client could reach. Loss and delay apply between nodes
// only.
//
// # Determinism
//
// Everything the harness decides (which clients exist, where they live,
// when they come and go, which nodes a fault hits and when) comes from the
// seed, and so do memnet's drops and delays and the nodes' own
// random choices. The nodes run on the real clock and memberlist keeps its
// own randomness, so a seed makes a run statistically, not bit for bit,
// repeatable: the fault timeline is the same, the measured figures vary a
// little from run to run.
//
// # What it does not do
//
// It does not fix or tune the server: a failing invariant is a finding
// about the server (or about a threshold) and the report says what was
// seen. It does not run nodes in separate processes (see
// cmd/heureka/main_process_test.go for that).
package simulations
