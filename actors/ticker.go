package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ticker sends msg to an actor every interval with a self-re-arming
// time.AfterFunc. Ticks never pile up in a slow mailbox beyond one per
// interval, and stop ends it for good. (protoactor's scheduler package has a
// data race when cancelled, and ReceiveTimeout is an idle timer, so neither
// is used.)
type ticker struct {
	mu       sync.Mutex
	t        *time.Timer
	stopped  bool
	interval time.Duration
	fire     func()
}

// startTicker starts a ticker for the actor of ctx. A non-positive interval
// never ticks.
func startTicker(ctx actor.Context, interval time.Duration, msg any) *ticker {
	tk := &ticker{interval: interval}
	if interval <= 0 {
		tk.stopped = true
		return tk
	}
	root, self := ctx.ActorSystem().Root, ctx.Self()
	tk.fire = func() {
		// Send under the lock: once stop has returned (in the actor's
		// Stopping handler) no tick can reach the stopped actor as a dead
		// letter. Send only enqueues, so holding the lock is cheap.
		tk.mu.Lock()
		defer tk.mu.Unlock()
		if tk.stopped {
			return
		}
		root.Send(self, msg)
		tk.t.Reset(tk.interval)
	}
	tk.mu.Lock()
	tk.t = time.AfterFunc(interval, tk.fire)
	tk.mu.Unlock()
	return tk
}

func (tk *ticker) stop() {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.stopped = true
	if tk.t != nil {
		tk.t.Stop()
	}
}
