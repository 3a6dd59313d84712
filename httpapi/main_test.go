package httpapi_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests. Every test
// node is stopped by its test (HTTP server, view and actors), and every test
// HTTP client closes its idle connections, so nothing of ours may linger.
// No goroutine is ignored: protoactor's actor system stops all of its
// goroutines on Shutdown, and net/http's connection goroutines end once the
// server and the client transport have closed their connections (goleak
// retries for a while, which covers connections still unwinding).
// The per-request benchmarks share their loaded servers across the b.N
// rounds of a benchmark; those stop after every test and benchmark ran,
// before the check.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(thenStop{m})
}

// thenStop runs the tests and benchmarks, then stops the shared benchmark
// servers.
type thenStop struct{ m *testing.M }

func (t thenStop) Run() int {
	code := t.m.Run()
	stopBenchServers()
	return code
}
