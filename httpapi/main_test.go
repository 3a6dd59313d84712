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
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
