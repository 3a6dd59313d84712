//go:build linux

package netns

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/heureka/heureka/simulations"
)

// The run's measurement: the observer reads every running node each
// timers.SampleInterval into the recorder (observe.go turns the readings into
// simulations.Observations), and the run's last phases, settle and
// teardown, wait on what it saw.

// observe reads every running node every timers.SampleInterval until ctx ends.
func (r *Run) observe(ctx context.Context) {
	tick := time.NewTicker(timers.SampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		up, procs := r.running()
		apps := r.rec.AppNames()
		topo := r.Topology()
		r.mu.Lock()
		unreached := copySet(r.unreached)
		r.mu.Unlock()
		readings := make([]Reading, len(up))
		var wg sync.WaitGroup
		for i, n := range up {
			readings[i] = Reading{Node: n, Incarnation: procs[n].Incarnation, At: time.Now()}
			if unreached[n] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rd := &readings[i]
				rd.At = time.Now()
				code, body, err := r.get(ctx, n, "/eureka/apps")
				if err != nil {
					return
				}
				rd.Status = code
				if code == http.StatusOK {
					if reg, err := ParseApps(body); err == nil {
						rd.Registry = reg
					}
				}
				if code, body, err := r.get(ctx, n, "/cluster/members"); err == nil && code == http.StatusOK {
					if live, err := ParseMembers(body); err == nil {
						rd.Live = live
					}
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		samples, probe := roundOf(start, up, apps, topo, readings)
		r.rec.AddSamples(samples)
		r.rec.AddProbe(probe)
	}
}

// copySet copies a set; a nil set becomes an empty one.
func copySet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// settle waits until the nodes agree and see each other (or the larger
// bound passed), then SettleTail more.
func (r *Run) settle() {
	th := r.cfg.Thresholds
	var from time.Time
	r.rec.Mark(func(o *simulations.Observations) {
		from = o.FaultsEnd
		if from.IsZero() {
			from = o.QuietStart
		}
	})
	limit := time.Now().Add(max(th.Convergence, th.Membership) + time.Second)
	for time.Now().Before(limit) {
		if p := r.rec.LastProbe(); p != nil && p.At.After(from) && p.Converged() && p.MembersComplete() {
			break
		}
		if !sleepCtx(r.ctx, timers.SampleInterval) {
			return
		}
	}
	sleepCtx(r.ctx, r.cfg.SettleTail)
}

// teardown stops every client gracefully and waits until no node holds a
// cancelled instance and the nodes agree (or the convergence bound
// passed), then for one more round.
func (r *Run) teardown() {
	r.mu.Lock()
	cs := slices.Clone(r.clients)
	r.mu.Unlock()
	var stopped []string
	var wg sync.WaitGroup
	for _, c := range cs {
		if c.running() {
			stopped = append(stopped, c.App+"/"+c.ID)
			wg.Add(1)
			go func() { defer wg.Done(); c.stop(true) }()
		}
	}
	wg.Wait()
	r.rec.Event("teardown", fmt.Sprintf("%d clients cancelled", len(stopped)))
	since := time.Now()
	limit := since.Add(r.cfg.Thresholds.Convergence)
	for time.Now().Before(limit) {
		if p := r.rec.LastProbe(); p != nil && p.At.After(since) && p.Converged() && !p.HoldsAny(stopped) {
			break
		}
		if !sleepCtx(r.ctx, timers.SampleInterval) {
			return
		}
	}
	sleepCtx(r.ctx, 2*timers.SampleInterval)
}
