//go:build !linux

package httpapi

import "syscall"

// connPoller exists on Linux only (epoll: poll_linux.go); elsewhere each
// waiting connection waits in a goroutine of its own.
type connPoller struct{}

// pollWaiter is a connection that waits in a connPoller.
type pollWaiter interface {
	pollConn() (syscall.RawConn, *uint64)
	readable()
}

func newConnPoller(func()) *connPoller   { return nil }
func (*connPoller) add(pollWaiter) bool  { return false }
func (*connPoller) take(pollWaiter) bool { return false }
func (*connPoller) close()               {}
