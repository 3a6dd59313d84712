//go:build linux

package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
)

// dialIn returns a DialContext that opens its sockets in the network
// namespace at nsPath, so that a connection made from this process (in
// the root namespace) starts in that namespace: its packets leave through
// the namespace's eth0. A socket belongs to the namespace of the thread
// that created it, so the dial locks its goroutine to its thread, switches
// the thread over (setns), creates and connects the socket and switches
// back (and sets SO_LINGER 0, see below). net/http dials in a goroutine of its own, which is what makes this
// safe: if switching back failed, the thread stays locked and Go discards
// it when that goroutine ends.
func dialIn(nsPath string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		target, err := os.Open(nsPath)
		if err != nil {
			return nil, err
		}
		defer target.Close()
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer orig.Close()
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("setns %s: %w", nsPath, err)
		}
		var d net.Dialer
		conn, dialErr := d.DialContext(ctx, network, addr)
		if err := setns(orig); err != nil {
			if conn != nil {
				conn.Close()
			}
			return nil, fmt.Errorf("setns back from %s: %w", nsPath, err) // thread stays locked
		}
		runtime.UnlockOSThread()
		if tc, ok := conn.(*net.TCPConn); ok {
			// Closing the connection resets it (SO_LINGER 0), as Apache
			// HttpCore's shutdown() does when the Java client aborts a
			// request: when a client gives up on a request (a timeout) or
			// stops, nothing it sent is left in its kernel to be delivered
			// later. With an ordinary close the kernel keeps retransmitting
			// unsent data: a registration that timed out while a node's
			// link was down reached the node 12 s later, after the link
			// came back and after its client had died, and registered the
			// instance again.
			_ = tc.SetLinger(0)
		}
		return conn, dialErr
	}
}

// sysSetns is setns(2)'s number; the syscall package does not name it.
var sysSetns = map[string]uintptr{
	"amd64": 308, "arm64": 268, "riscv64": 268, "loong64": 268, "386": 346, "arm": 375, "ppc64le": 350, "s390x": 339,
}[runtime.GOARCH]

func setns(f *os.File) error {
	if sysSetns == 0 {
		return fmt.Errorf("setns: unknown system call number on %s", runtime.GOARCH)
	}
	_, _, errno := syscall.Syscall(sysSetns, f.Fd(), syscall.CLONE_NEWNET, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
