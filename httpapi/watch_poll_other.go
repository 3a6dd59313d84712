//go:build !linux

package httpapi

// connPoller exists on Linux only (epoll: watch_poll_linux.go); elsewhere
// each parked read waits in a goroutine of its own.
type connPoller struct{}

func newConnPoller(func()) *connPoller    { return nil }
func (*connPoller) add(*parkedRead) bool  { return false }
func (*connPoller) take(*parkedRead) bool { return false }
func (*connPoller) close()                {}
