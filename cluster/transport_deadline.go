package cluster

// deadlineTransport: bounded stream writes.
//
// memberlist's SendReliable dials a stream and writes the message without
// any deadline. A peer that accepts the connection but never reads (a hung
// process, a full receive window) or dies mid-transfer without a reset then
// blocks the sender until the operating system gives up, which for TCP takes
// many minutes. deadlineTransport wraps the node's transport (memberlist's
// NetTransport or Config.Transport) and sets a write deadline,
// Config.StreamTimeout from now, on every stream it dials: the write then
// fails with an error that satisfies errors.Is(err, os.ErrDeadlineExceeded)
// and net.Error's Timeout.
//
// The deadline is set once, at dial, so it bounds the whole transfer, not
// each write. memberlist calls SetDeadline itself on the streams of its
// push/pull exchanges and TCP probes, which replaces ours: those keep their
// TCPTimeout. Streams other nodes open to this one are left alone; memberlist
// sets a deadline on them when it accepts them.

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// deadlineTransport is a memberlist.NodeAwareTransport that sets a write
// deadline on every stream it dials; everything else is the wrapped
// transport's. Its Shutdown is idempotent.
type deadlineTransport struct {
	memberlist.NodeAwareTransport
	timeout time.Duration
	dials   atomic.Uint64 // every dial attempt (Membership.Dials)

	shutdownOnce sync.Once
	shutdownErr  error
}

var _ memberlist.NodeAwareTransport = (*deadlineTransport)(nil)

// newDeadlineTransport wraps t so that each stream it dials must be written
// within timeout (> 0).
func newDeadlineTransport(t memberlist.NodeAwareTransport, timeout time.Duration) *deadlineTransport {
	return &deadlineTransport{NodeAwareTransport: t, timeout: timeout}
}

// DialAddressTimeout dials a stream to a and sets its write deadline.
func (t *deadlineTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.bound(t.NodeAwareTransport.DialAddressTimeout(a, timeout))
}

// DialTimeout dials a stream to addr and sets its write deadline.
func (t *deadlineTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.bound(t.NodeAwareTransport.DialTimeout(addr, timeout))
}

// bound sets the write deadline of a freshly dialled stream. A stream whose
// deadline cannot be set is closed rather than returned unbounded.
func (t *deadlineTransport) bound(c net.Conn, err error) (net.Conn, error) {
	t.dials.Add(1)
	if err != nil {
		return c, err
	}
	if err := c.SetWriteDeadline(time.Now().Add(t.timeout)); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cluster: set stream write deadline: %w", err)
	}
	return c, nil
}

// Shutdown shuts the wrapped transport down, once: memberlist's Shutdown and
// Membership's clean-up after a failed start may both call it.
func (t *deadlineTransport) Shutdown() error {
	t.shutdownOnce.Do(func() { t.shutdownErr = t.NodeAwareTransport.Shutdown() })
	return t.shutdownErr
}
