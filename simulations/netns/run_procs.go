//go:build linux

package netns

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// The run's heureka processes: starting one per node (again on a
// restart), listing the running ones, stopping them all with the clients,
// and reaching a node over HTTP from the client namespace, which is also
// how the harness waits for the cluster to form.

func (r *Run) startProc(node string) error {
	r.mu.Lock()
	inc := 1
	if p := r.procs[node]; p != nil {
		inc = p.Incarnation + 1
	}
	r.mu.Unlock()
	p, err := StartNode(r.cfg.Bin, r.cfg.LogDir, r.lab, node, inc)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.procs[node] = p
	r.pids = append(r.pids, p.Pid())
	r.logs = append(r.logs, p.Log)
	r.mu.Unlock()
	return nil
}

// running returns the nodes whose process runs (paused ones included),
// sorted, with their processes.
func (r *Run) running() ([]string, map[string]*Proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var up []string
	ps := map[string]*Proc{}
	for n, p := range r.procs {
		if !p.Exited() {
			up = append(up, n)
			ps[n] = p
		}
	}
	slices.Sort(up)
	return up, ps
}

// stopAll stops the clients, the churn and every process.
func (r *Run) stopAll() {
	r.phases.StopChurn()
	r.mu.Lock()
	cs := slices.Clone(r.clients)
	ps := make([]*Proc, 0, len(r.procs))
	for _, p := range r.procs {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop(false) }()
	}
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(3 * time.Second) }()
	}
	wg.Wait()
}

// BaseURL is node's Eureka API.
func (r *Run) BaseURL(node string) string {
	return fmt.Sprintf("http://%s:%d/eureka", r.lab.IP(node), HTTPPort)
}

// get reads path from node (a path under / such as /cluster/members, or
// under the Eureka API when it starts with /apps).
func (r *Run) get(ctx context.Context, node, path string) (int, []byte, error) {
	url := fmt.Sprintf("http://%s:%d%s", r.lab.IP(node), HTTPPort, path)
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// waitFormed waits until every node is ready and sees every node live.
func (r *Run) waitFormed(within time.Duration) error {
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		ok := true
		for _, n := range r.lab.Nodes {
			code, _, err := r.get(r.ctx, n, "/readyz")
			if err != nil || code != http.StatusOK {
				ok, last = false, fmt.Sprintf("%s not ready (%d, %v)", n, code, err)
				break
			}
			code, body, err := r.get(r.ctx, n, "/cluster/members")
			live, perr := ParseMembers(body)
			if err != nil || code != http.StatusOK || perr != nil || !slices.Equal(live, r.lab.Nodes) {
				ok, last = false, fmt.Sprintf("%s sees %v", n, live)
				break
			}
		}
		if ok {
			return nil
		}
		if !sleepCtx(r.ctx, 200*time.Millisecond) {
			return r.ctx.Err()
		}
	}
	return fmt.Errorf("netns: the cluster did not form within %v: %s", within, last)
}
