package httpapi

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// heldHub is a hub over a real view whose StreamCoalesce is the longest
// allowed and whose gathering of changes waits on gate (h.after), so a
// test sees what goes out before any gathering ends.
func heldHub(t *testing.T) (*hub, *view.View, *watcher, chan time.Time) {
	t.Helper()
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	cfg := DefaultPushConfig()
	cfg.StreamCoalesce = time.Second
	p := newPush(&cfg, v, prometheus.NewRegistry())
	gate := make(chan time.Time)
	p.hub.after = func(time.Duration) <-chan time.Time { return gate }
	w, err := p.hub.join(&filter{}, "", nil)
	require.NoError(t, err)
	t.Cleanup(func() { p.hub.leave(w) })
	<-w.notify // the snapshot's signal
	snap, _, _ := p.hub.take(w)
	require.NotNil(t, snap, "a new watcher starts with a snapshot")
	return p.hub, v, w, gate
}

// addInstance applies a registration of id to v.
func addInstance(v *view.View, id string, clock uint64) {
	in := &actors.Instance{InstanceID: id, HostName: "h", App: "APP", Status: actors.StatusUp}
	in.Normalize()
	v.Apply(&actors.Event{Action: actors.ActionAdded, Instance: in, Version: actors.Version{Clock: clock << 16, Node: "n"}})
}

// nextEvents waits for w's next events and returns the ids of the
// instances they register.
func nextEvents(t *testing.T, h *hub, w *watcher) []string {
	t.Helper()
	select {
	case <-w.notify:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no event came")
	}
	_, _, evs := h.take(w)
	var ids []string
	for _, e := range evs {
		for _, c := range e.changes {
			for _, ic := range c.insts {
				ids = append(ids, ic.cur.InstanceID)
			}
		}
	}
	return ids
}

// A change after a quiet spell goes out at once, before any gathering
// ends (the gate never opens for it); the changes that follow within
// StreamCoalesce wait for the gathering and go out together.
func TestStreamLoneChangeGoesOutAtOnce(t *testing.T) {
	h, v, w, gate := heldHub(t)
	addInstance(v, "i-1", 1)
	require.Equal(t, []string{"i-1"}, nextEvents(t, h, w), "the lone change, with no gathering")

	addInstance(v, "i-2", 2)
	addInstance(v, "i-3", 3)
	select {
	case <-w.notify:
		_, _, evs := h.take(w)
		require.Empty(t, evs, "changes right after an event wait for the gathering")
	case <-time.After(100 * time.Millisecond):
	}
	gate <- time.Now()
	require.ElementsMatch(t, []string{"i-2", "i-3"}, nextEvents(t, h, w), "gathered into one event")
}
