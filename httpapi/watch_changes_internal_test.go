package httpapi

import (
	"testing"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

// pollOnly hides the view's own notification, as a Snapshots without one.
type pollOnly struct{ v *view.View }

func (p pollOnly) Snapshot() *view.Snapshot { return p.v.Snapshot() }
func (p pollOnly) Latest() *view.Snapshot   { return p.v.Latest() }

// A change wakes the waiters, whether the view notifies it or, without a
// notification, the check loop sees it.
func TestChangesWakeWaiters(t *testing.T) {
	for name, wrap := range map[string]func(*view.View) Snapshots{
		"view notifies": func(v *view.View) Snapshots { return v },
		"polled":        func(v *view.View) Snapshots { return pollOnly{v} },
	} {
		t.Run(name, func(t *testing.T) {
			v := view.New(view.DefaultConfig([view.NumFormats]view.Encoder{}))
			c := newChanges(wrap(v), 5*time.Millisecond)
			c.acquire()
			defer c.release()
			ch := c.wait()
			select {
			case <-ch:
				t.Fatal("woken without a change")
			case <-time.After(20 * time.Millisecond):
			}
			in := &actors.Instance{InstanceID: "i-1", HostName: "h", App: "APP", Status: actors.StatusUp}
			in.Normalize()
			v.Apply(&actors.Event{Action: actors.ActionAdded, Instance: in, Version: actors.Version{Clock: 1 << 16, Node: "n"}})
			select {
			case <-ch:
			case <-time.After(5 * time.Second):
				t.Fatal("the change woke nobody")
			}
		})
	}
}
