package httpapi

// Change notification
//
// The view publishes a new immutable snapshot on every change (and every
// delta pruning), and view.View closes a shared channel when it does
// (Changed): every blocking read and the stream hub wait on it, so a
// change wakes all of them with one close, whatever their number, at once.
//
// A Snapshots without Changed (a test's) is watched instead: one goroutine
// loads the snapshot pointer every PushConfig.ChangeCheckInterval (an
// atomic load and a comparison, for all waiters together) and closes the
// channel on a change. It runs only while someone waits (acquire/release
// count them) and stops at its next tick after the last one leaves, so an
// API nobody watches costs nothing.
//
// A waiter takes the channel first and reads the snapshot after: a change
// published after that read closes the channel it holds, so no change can
// be missed between the two. A change published just before may close it
// too (a spurious wake-up): the waiter compares what it serves, finds it
// unchanged and waits again.

import (
	"sync"
	"time"

	"github.com/heureka/heureka/actors/view"
)

// notifier is what view.View offers: a channel closed by the next change.
type notifier interface {
	Changed() <-chan struct{}
}

// changes is the shared notification of new view snapshots.
type changes struct {
	view     Snapshots
	notifier notifier // the view's own notification, if it has one
	interval time.Duration

	mu      sync.Mutex
	users   int            // acquired and not released
	running bool           // the checking goroutine runs
	ch      chan struct{}  // closed when the snapshot changes
	last    *view.Snapshot // the snapshot ch was made for
}

func newChanges(v Snapshots, interval time.Duration) *changes {
	c := &changes{view: v, interval: interval, ch: make(chan struct{})}
	c.notifier, _ = v.(notifier)
	return c
}

// acquire counts a waiter in, starting the check if it is the first (and
// the view cannot notify).
func (c *changes) acquire() {
	if c.notifier != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users++
	if !c.running {
		c.running = true
		c.last = c.view.Snapshot()
		go c.run()
	}
}

// release counts a waiter out; the check stops at its next tick after the
// last one.
func (c *changes) release() {
	if c.notifier != nil {
		return
	}
	c.mu.Lock()
	c.users--
	c.mu.Unlock()
}

// wait returns the channel that the next change closes. The caller must
// hold an acquire.
func (c *changes) wait() <-chan struct{} {
	if c.notifier != nil {
		return c.notifier.Changed()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

// run checks for a new snapshot every interval while anyone waits.
func (c *changes) run() {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for range t.C {
		cur := c.view.Snapshot()
		c.mu.Lock()
		if cur != c.last {
			c.last = cur
			close(c.ch)
			c.ch = make(chan struct{})
		}
		if c.users == 0 {
			c.running = false
			c.last = nil // keep no snapshot alive while idle
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}
