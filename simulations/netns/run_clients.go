//go:build linux

package netns

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heureka/heureka/simulations"
)

// The run's client load: clients started next to a node (one, a batch per
// node, or a churn of short-lived ones), waited for until registered, and
// stopped gracefully or silently. client.go is the client itself.

// NewClient starts a client of app next to loc.
func (r *Run) NewClient(app, loc string) *Client {
	r.mu.Lock()
	r.seq[app]++
	id := fmt.Sprintf("%s-%03d", strings.ToLower(app), r.seq[app])
	i := slices.Index(r.lab.Nodes, loc)
	order := append(slices.Clone(r.lab.Nodes[i:]), r.lab.Nodes[:i]...)
	c := &Client{r: r, App: app, ID: id, Location: loc, order: order}
	r.clients = append(r.clients, c)
	r.mu.Unlock()
	c.start()
	return c
}

// NewClients starts perNode clients next to every node, spread over apps.
func (r *Run) NewClients(perNode int, apps []string) []*Client {
	var out []*Client
	k := 0
	for _, n := range r.lab.Nodes {
		for range perNode {
			out = append(out, r.NewClient(apps[k%len(apps)], n))
			k++
		}
	}
	return out
}

// WaitRegistered waits until every client of cs has registered, and marks
// the end of the warm-up.
func (r *Run) WaitRegistered(cs []*Client, within time.Duration) error {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	deadline := time.Now().Add(within)
	for !r.rec.AllAcked(ids) {
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: %d clients not registered within %v", len(cs), within)
		}
		if err := r.Sleep(50 * time.Millisecond); err != nil {
			return err
		}
	}
	r.rec.Mark(func(o *simulations.Observations) {
		if o.SteadyAt.IsZero() {
			o.SteadyAt = time.Now()
		}
	})
	r.Event("clients", "%d clients registered", len(cs))
	return nil
}

// StopClients stops cs: gracefully (they cancel) or silently.
func (r *Run) StopClients(cs []*Client, graceful bool) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop(graceful) }()
	}
	wg.Wait()
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID + "@" + c.Location
	}
	kind := "clients-die"
	if graceful {
		kind = "clients-cancel"
	}
	r.Event(kind, "%s", strings.Join(ids, ", "))
}

// StartChurn starts a client every ~every (of a random app, next to a
// random node) living minLife–maxLife, a share silent dying without
// cancelling, until FaultsOver.
func (r *Run) StartChurn(apps []string, every, minLife, maxLife time.Duration, silent float64) {
	r.Event("churn", "a client every ~%v, living %v–%v, %.0f%% die silently", every, minLife, maxLife, silent*100)
	r.phases.Churn(func() time.Duration { return r.Between(every/2, every*3/2) }, func() (time.Duration, func()) {
		app := apps[r.IntN(len(apps))]
		loc := r.lab.Nodes[r.IntN(len(r.lab.Nodes))]
		life := r.Between(minLife, maxLife)
		quiet := r.IntN(1000) < int(silent*1000)
		c := r.NewClient(app, loc)
		return life, func() { c.stop(!quiet) }
	})
}
