package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/bench"
)

// run runs the phases of c and prints their tables.
func run(c Config) error {
	limit, err := raiseFileLimit()
	if err != nil {
		return fmt.Errorf("open-file limit: %w", err)
	}
	fmt.Printf("watchers: %s, GOMAXPROCS=%d, %d CPUs, open-file limit %d, started %s\n",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), limit, time.Now().UTC().Format("2006-01-02 15:04:05 UTC"))
	fmt.Printf("load average %s at start\n", bench.LoadAvg())
	need := uint64(c.Watchers[len(c.Watchers)-1] + 200)
	if limit < need {
		return fmt.Errorf("open-file limit %d: %d watchers need about %d", limit, c.Watchers[len(c.Watchers)-1], need)
	}
	for _, p := range c.Phases {
		var err error
		if p == "poll" {
			err = runPoll(c)
		} else {
			err = runWatchers(c, p)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	fmt.Printf("\nload average %s at end, %s\n", bench.LoadAvg(), time.Now().UTC().Format("2006-01-02 15:04:05 UTC"))
	return nil
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func kib(b int64) float64         { return float64(b) / 1024 }
func mib(b int64) float64         { return float64(b) / (1 << 20) }

// runWatchers measures one mode of watchers.
func runWatchers(c Config, mode string) error {
	maxN := c.Watchers[len(c.Watchers)-1]
	streams := max(maxN+100, 10000)
	fmt.Printf("\n## %s: %d instances, watchers of %s, %d changes per step, StreamCoalesce %v\n\n", mode, c.Instances, c.App, c.Changes, c.Coalesce)
	ch, err := startChild(c.Instances, c.Coalesce, streams)
	if err != nil {
		return err
	}
	defer ch.stop()
	ctl := newClient(4)
	defer ctl.CloseIdleConnections()
	w := newWatchers(mode, ch.base, c.App, maxN)
	defer w.stop()
	wr := &writer{c: ctl, base: ch.base, app: c.App}

	measure := func(n int) (stepResult, error) {
		c0, t0 := ch.cpu(), time.Now()
		time.Sleep(c.Settle)
		idleCPU, idleWall := ch.cpu()-c0, time.Since(t0)
		m, err := ch.mem()
		if err != nil {
			return stepResult{}, err
		}
		load := bench.LoadAvg()
		res, err := runChanges(w, wr, ctl, n, c.Changes, ch.cpu)
		res.mem, res.idleCPU, res.idleWall, res.load = m, idleCPU, idleWall, load
		return res, err
	}
	base, err := measure(0)
	if err != nil {
		return err
	}
	var steps []stepResult
	for _, n := range c.Watchers {
		w.grow(n)
		if err := w.waitArmed(ctl, n); err != nil {
			return err
		}
		r, err := measure(n)
		if err != nil {
			return err
		}
		steps = append(steps, r)
		fmt.Printf("(%s) %d watchers measured, load %s\n", mode, n, r.load)
	}
	printSteps(mode, base, steps, w.errs.Load(), w.lastErr.Load())
	if c.ChurnFor > 0 {
		if err := runChurn(c, ch, w, base.mem); err != nil {
			return err
		}
	}
	return nil
}

func printSteps(mode string, base stepResult, steps []stepResult, errs int64, lastErr any) {
	fmt.Printf("\nDelivery latency: from the write's response to the watcher's reading the %s (p50, p99, max over every watcher and change); from before the write, p99 in brackets.\n\n",
		map[string]string{"blocking": "200", "stream": "delta event"}[mode])
	fmt.Println("| watchers | changes | deliveries | missed | p50 ms | p99 ms | max ms | (p99 from request ms) | load |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, s := range steps {
		fmt.Printf("| %d | %d | %d | %d | %.2f | %.2f | %.2f | (%.2f) | %s |\n", s.watchers, s.changes, len(s.fromResp), s.missed,
			msf(bench.Percentile(s.fromResp, 50)), msf(bench.Percentile(s.fromResp, 99)), msf(bench.Percentile(s.fromResp, 100)),
			msf(bench.Percentile(s.fromReq, 99)), s.load)
	}
	fmt.Printf("\nMemory of the node after a collection, idle watchers; per watcher = (heap+stack − that with 0 watchers) ÷ watchers, and RSS likewise. With 0 watchers: heap %d B, stack %d B, RSS %d B, %d goroutines.\n\n",
		base.mem.heap, base.mem.stack, base.mem.rss, base.mem.goroutines)
	fmt.Println("| watchers | heap B | stack B | heap+stack per watcher KiB | RSS B | RSS per watcher KiB | goroutines per watcher |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range steps {
		n := float64(s.watchers)
		fmt.Printf("| %d | %d | %d | %.2f | %d | %.2f | %.2f |\n", s.watchers, s.mem.heap, s.mem.stack,
			kib(s.mem.heapStack()-base.mem.heapStack())/n, s.mem.rss, kib(s.mem.rss-base.mem.rss)/n,
			float64(s.mem.goroutines-base.mem.goroutines)/n)
	}
	fmt.Printf("\nCPU of the node (/proc/PID/stat, 10 ms ticks) over the changes, each change one write; per change and watcher = (per change − per change with 0 watchers) ÷ watchers. Idle: the node's CPU over the settle time before, with the watchers waiting.\n\n")
	fmt.Println("| watchers | changes | node CPU s | CPU per change ms | CPU per change and watcher µs | idle CPU s | idle s | idle CPU per watcher per s µs |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|")
	all := append([]stepResult{base}, steps...)
	basePer := base.cpu.Seconds() / float64(base.changes)
	for _, s := range all {
		per := s.cpu.Seconds() / float64(s.changes)
		perW, idleW := "–", "–"
		if s.watchers > 0 {
			perW = fmt.Sprintf("%.2f", (per-basePer)/float64(s.watchers)*1e6)
			idleW = fmt.Sprintf("%.3f", (s.idleCPU.Seconds()-base.idleCPU.Seconds()*s.idleWall.Seconds()/base.idleWall.Seconds())/s.idleWall.Seconds()/float64(s.watchers)*1e6)
		}
		fmt.Printf("| %d | %d | %.2f | %.3f | %s | %.2f | %.2f | %s |\n", s.watchers, s.changes, s.cpu.Seconds(), per*1e3, perW,
			s.idleCPU.Seconds(), s.idleWall.Seconds(), idleW)
	}
	if errs > 0 {
		fmt.Printf("\nwatcher errors: %d (last: %v)\n", errs, lastErr)
	}
}

// runChurn replaces c.ChurnFraction of the instances every c.ChurnEvery
// for c.ChurnFor with every watcher of w connected, taking the node's
// memory before each burst.
func runChurn(c Config, ch *child, w *watchers, idle memory) error {
	live := make([]bench.Instance, c.Instances)
	for i := range live {
		live[i] = bench.InstanceAt(i)
	}
	// Instances are replaced in a random order, so that every burst
	// changes about the fraction of each application, the watched one too.
	rand.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	per := max(1, int(float64(c.Instances)*c.ChurnFraction))
	cl := newClient(16)
	defer cl.CloseIdleConnections()
	fmt.Printf("\nChurn with %d %s watchers: %d of %d instances, picked at random, replaced (registered anew, the old cancelled, 16 connections) every %v for %v. Memory after a collection, before each burst; events: the 200s or delta events the watchers got since the row before.\n\n",
		w.n, w.mode, per, c.Instances, c.ChurnEvery, c.ChurnFor)
	fmt.Println("| t s | heap B | stack B | RSS B | goroutines | changes | burst s | events received since last |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|")
	w.received.Store(0)
	start := time.Now()
	changes := 0
	var burst time.Duration
	var minRSS, maxRSS, minHS, maxHS int64
	for tick := 0; ; tick++ {
		got := w.received.Swap(0)
		m, err := ch.mem()
		if err != nil {
			return err
		}
		if tick == 0 || m.rss < minRSS {
			minRSS = m.rss
		}
		if m.rss > maxRSS {
			maxRSS = m.rss
		}
		if tick == 0 || m.heapStack() < minHS {
			minHS = m.heapStack()
		}
		if m.heapStack() > maxHS {
			maxHS = m.heapStack()
		}
		fmt.Printf("| %.0f | %d | %d | %d | %d | %d | %.2f | %d |\n", time.Since(start).Seconds(), m.heap, m.stack, m.rss, m.goroutines, changes, burst.Seconds(), got)
		if time.Since(start) >= c.ChurnFor {
			break
		}
		next := start.Add(time.Duration(tick+1) * c.ChurnEvery)
		t0 := time.Now()
		old := live[:per]
		fresh, err := replace(cl, ch.base, old)
		if err != nil {
			return err
		}
		live = append(live[per:], fresh...)
		changes += 2 * per
		burst = time.Since(t0)
		time.Sleep(time.Until(next))
	}
	fmt.Printf("\nOver the churn: heap+stack %d…%d B (max − min = %d B), RSS %d…%d B (max − min = %d B); errors %d.\n",
		minHS, maxHS, maxHS-minHS, minRSS, maxRSS, maxRSS-minRSS, w.errs.Load())
	return nil
}

// replace registers a new instance of the application of each of old and
// cancels the old one, on 16 connections; it returns the new ones.
func replace(c *http.Client, base string, old []bench.Instance) ([]bench.Instance, error) {
	fresh := make([]bench.Instance, len(old))
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body []byte
			for {
				i := int(next.Add(1)) - 1
				if i >= len(old) {
					return
				}
				in := bench.NextFreshIn(old[i].App)
				body = bench.AppendRegisterBody(body[:0], in)
				err := send(c, http.MethodPost, base+"/eureka/apps/"+in.App, body)
				if err == nil {
					err = send(c, http.MethodDelete, base+"/eureka/apps/"+old[i].App+"/"+old[i].ID, nil)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				fresh[i] = in
			}
		}()
	}
	wg.Wait()
	return fresh, first
}

func send(c *http.Client, method, url string, body []byte) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d", method, url, resp.StatusCode)
	}
	return nil
}
