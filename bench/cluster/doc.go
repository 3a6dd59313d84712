// Package clusterbench holds the cluster benchmarks: several Heureka nodes in
// one process, either on real loopback sockets (memberlist over UDP/TCP on
// 127.0.0.1, HTTP on 127.0.0.1) or on a memnet.Network (so partitions can
// be injected and the bytes on the wire counted exactly).
//
// The cluster of nodes they run is in cluster.go; the benchmarks are in
// cluster_bench_test.go and cluster_renewal_cpu_test.go (CPU per
// renewal at a fixed rate per node) and measure whole scenarios, not one
// operation: each runs once and reports its figures with b.ReportMetric, so
// run them with -benchtime 1x:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/cluster/
//
// Diagnostics, all off by default: HEUREKA_BENCH_LOG=debug (or info, warn)
// prints the nodes' logs on stderr; HEUREKA_BENCH_TRACE=1 prints progress
// during Ready and HealConvergence; HEUREKA_BENCH_CPUPROFILE=prefix writes
// CPU and block profiles, and HEUREKA_BENCH_EXECTRACE=prefix an execution
// trace, of their measured phases; HEUREKA_BENCH_DUMP=prefix dumps the
// goroutines 5s into a heal. RESULTS.md records runs and their analysis.
package clusterbench
