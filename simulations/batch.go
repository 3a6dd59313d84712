package simulations

import (
	"context"
	"sync"
)

// Job is one run to make: a scenario and its configuration.
type Job struct {
	Scenario Scenario
	Config   Config
}

// RunAll runs jobs, at most parallel at a time (a scenario mostly waits on
// its clients' timers, so a few clusters fit side by side on two CPUs),
// and returns their results in the order of jobs. A job that could not be
// carried out (the cluster did not start, the configuration is invalid)
// gets a failed Result with Err set. done, if set, is called as each run
// ends, from the goroutine that ran it. Runs not started when ctx ends are
// reported as broken off.
func RunAll(ctx context.Context, jobs []Job, parallel int, done func(i int, r *Result)) []*Result {
	parallel = max(1, parallel)
	out := make([]*Result, len(jobs))
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			var res *Result
			if err := ctx.Err(); err != nil {
				res = brokenResult(j, err)
			} else if r, err := Run(ctx, j.Scenario, j.Config); err != nil {
				res = brokenResult(j, err)
			} else {
				res = r
			}
			out[i] = res
			if done != nil {
				done(i, res)
			}
		}()
	}
	wg.Wait()
	return out
}

// brokenResult is the Result of a job that could not be run.
func brokenResult(j Job, err error) *Result {
	return &Result{Scenario: j.Scenario.Name, Summary: j.Scenario.Summary, Seed: j.Config.Seed, Nodes: j.Config.Nodes,
		Duration: j.Config.Duration, Timers: j.Config.Timers, Thresholds: j.Config.Thresholds, Err: err.Error()}
}
