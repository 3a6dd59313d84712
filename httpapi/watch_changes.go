package httpapi

// Change notification
//
// The view publishes a new immutable snapshot on every change (and every
// delta pruning) by storing a pointer; it has no notification of its own.
// changes turns that into one: a channel that is closed when the snapshot
// readers see is no longer the one last seen, and replaced by a fresh one.
// Every blocking read and the stream hub wait on the same channel, so a
// change wakes all of them with one close, whatever their number.
//
// One goroutine notices the change by loading the snapshot pointer every
// PushConfig.ChangeCheckInterval: an atomic load and a comparison, for all
// waiters together. It runs only while someone waits (acquire/release
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

// changes is the shared notification of new view snapshots.
type changes struct {
	view     Snapshots
	interval time.Duration

	mu      sync.Mutex
	users   int            // acquired and not released
	running bool           // the checking goroutine runs
	ch      chan struct{}  // closed when the snapshot changes
	last    *view.Snapshot // the snapshot ch was made for
}

func newChanges(v Snapshots, interval time.Duration) *changes {
	return &changes{view: v, interval: interval, ch: make(chan struct{})}
}

// acquire counts a waiter in, starting the check if it is the first.
func (c *changes) acquire() {
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
	c.mu.Lock()
	c.users--
	c.mu.Unlock()
}

// wait returns the channel that the next change closes. The caller must
// hold an acquire.
func (c *changes) wait() <-chan struct{} {
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
