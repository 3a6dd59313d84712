package dashboard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// node is stopped, every browser closed and every client goroutine
// stopped by the test that started it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
