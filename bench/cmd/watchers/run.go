package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strings"
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
	if c.WatcherCPUs != "" {
		if err := pinSelf(c.WatcherCPUs); err != nil {
			return err
		}
	}
	fmt.Printf("pinned: node on CPUs %q, watchers on CPUs %q (\"\": not pinned)\n", c.NodeCPUs, c.WatcherCPUs)
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
	fmt.Printf("\n## %s: %d instances, watchers of %s, %d changes per step, StreamCoalesce %v, BlockingHijack %t, BlockingDirect %t, raw blocking clients %t, next request after the change %t\n\n",
		mode, c.Instances, c.App, c.Changes, c.Coalesce, !c.BlockingHandler, !c.BlockingHandback, c.RawBlocking, c.NextAfterChange)
	ch, err := startChild(c, c.Instances, streams)
	if err != nil {
		return err
	}
	defer ch.stop()
	ctl := newClient(4)
	defer ctl.CloseIdleConnections()
	w := newWatchers(mode, ch.base, c.App, maxN)
	w.raw, w.nextAfterChange = c.RawBlocking, c.NextAfterChange
	defer w.stop()
	wr := &writer{c: ctl, base: ch.base, app: c.App}

	last := maxN
	measure := func(n int) (stepResult, error) {
		// The transport may hold more connections than watchers (a
		// request that dialled while another connection came free leaves
		// one idle): those are closed, so that the node holds one
		// connection per watcher, as with clients of their own.
		w.client.CloseIdleConnections()
		c0, t0 := ch.cpu(), time.Now()
		time.Sleep(c.Settle)
		idleCPU, idleWall := ch.cpu()-c0, time.Since(t0)
		m, err := ch.mem()
		if err != nil {
			return stepResult{}, err
		}
		load := bench.LoadAvg()
		profiling := n == last && (c.CPUProfile != "" || c.NodeCPUProfile != "")
		if profiling {
			if err := profileBoth(c, ch, "start"); err != nil {
				return stepResult{}, err
			}
		}
		res, err := runChanges(w, wr, ctl, n, c.Changes, ch.cpu)
		if profiling {
			if perr := profileBoth(c, ch, "stop"); perr != nil && err == nil {
				err = perr
			}
		}
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
		if err := runChurn(c, ch, w, steps[len(steps)-1].mem); err != nil {
			return err
		}
	}
	return nil
}

// profileBoth starts or stops the CPU profiles asked for: the node's
// (-node-cpuprofile) and this process's (-cpuprofile).
func profileBoth(c Config, ch *child, cmd string) error {
	if c.NodeCPUProfile != "" {
		if err := ch.profile(cmd); err != nil {
			return err
		}
	}
	if c.CPUProfile == "" {
		return nil
	}
	if cmd == "start" {
		return startProfile(c.CPUProfile)
	}
	return stopProfile()
}

func printSteps(mode string, base stepResult, steps []stepResult, errs int64, lastErr any) {
	fmt.Printf("\nDelivery latency: from the write's response to the watcher's reading the %s (p50, p99, max over every watcher and change; a watcher that read it before the response counts 0); p99 from before the write beside it.\n\n",
		map[string]string{"blocking": "200", "stream": "delta event"}[mode])
	fmt.Println("| watchers | changes | deliveries | missed | before the response | p50 ms | p99 ms | max ms | p99 from the request ms | load |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, s := range steps {
		fmt.Printf("| %d | %d | %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %s |\n", s.watchers, s.changes, len(s.fromResp), s.missed, s.early,
			msf(bench.Percentile(s.fromResp, 50)), msf(bench.Percentile(s.fromResp, 99)), msf(bench.Percentile(s.fromResp, 100)),
			msf(bench.Percentile(s.fromReq, 99)), s.load)
	}
	fmt.Printf("\nMemory of the node after a collection (heap in use + goroutine stacks; RSS), the watchers idle; 0 watchers: heap+stack %d B, RSS %d B, %d goroutines.\n\n",
		base.mem.heapStack(), base.mem.rss, base.mem.goroutines)
	fmt.Println("| watchers | heap+stack B | 0-watcher heap+stack B | added B = heap+stack B − 0-watcher heap+stack B | per watcher B = added B ÷ watchers | RSS B | 0-watcher RSS B | added RSS B = RSS B − 0-watcher RSS B | RSS per watcher B = added RSS B ÷ watchers | goroutines |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range steps {
		n := int64(s.watchers)
		add, addRSS := s.mem.heapStack()-base.mem.heapStack(), s.mem.rss-base.mem.rss
		fmt.Printf("| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", s.watchers, s.mem.heapStack(), base.mem.heapStack(), add,
			(add+n/2)/n, s.mem.rss, base.mem.rss, addRSS, (addRSS+n/2)/n, s.mem.goroutines)
	}
	fmt.Printf("\nCPU of the node (/proc/PID/stat, 10 ms ticks) over the changes (each one write, and one read of /metrics to see the watchers waiting again), and idle over the settle time before them; beside them the CPU of this process (the watchers, getrusage) and the wall time over the changes.\n\n")
	fmt.Println("| watchers | changes | node CPU ms | CPU per change ms = node CPU ms ÷ changes | 0-watcher CPU per change ms | for the watchers ms = CPU per change ms − 0-watcher CPU per change ms | per change and watcher ms = for the watchers ms ÷ watchers | idle CPU ms | idle s | idle CPU ms/s = idle CPU ms ÷ idle s | watchers' process CPU ms | wall ms |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	basePer := msf(base.cpu) / float64(base.changes)
	for _, s := range append([]stepResult{base}, steps...) {
		per := msf(s.cpu) / float64(s.changes)
		forW, perW := "–", "–"
		if s.watchers > 0 {
			forW = fmt.Sprintf("%.1f", per-basePer)
			perW = fmt.Sprintf("%.5f", (per-basePer)/float64(s.watchers))
		}
		fmt.Printf("| %d | %d | %.0f | %.1f | %.1f | %s | %s | %.0f | %.2f | %.1f | %.0f | %.0f |\n", s.watchers, s.changes, msf(s.cpu), per, basePer, forW, perW,
			msf(s.idleCPU), s.idleWall.Seconds(), msf(s.idleCPU)/s.idleWall.Seconds(), msf(s.selfCPU), msf(s.wall))
	}
	printChanges(mode, steps)
	if errs > 0 {
		fmt.Printf("\nwatcher errors: %d (last: %v)\n", errs, lastErr)
	}
}

// runChurn replaces c.ChurnFraction of the instances every c.ChurnEvery
// for c.ChurnFor with every watcher of w connected, taking the node's
// memory before each burst; idle is its memory before, the watchers idle.
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
	fmt.Printf("\nOver the churn (watcher errors: %d):\n\n", w.errs.Load())
	fmt.Println("| memory | min B | max B | spread B = max B − min B | idle before B | over idle B = max B − idle before B |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	fmt.Printf("| heap+stack | %d | %d | %d | %d | %d |\n", minHS, maxHS, maxHS-minHS, idle.heapStack(), maxHS-idle.heapStack())
	fmt.Printf("| RSS | %d | %d | %d | %d | %d |\n", minRSS, maxRSS, maxRSS-minRSS, idle.rss, maxRSS-idle.rss)
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

// printChanges sets each change's slowest delivery beside the node's
// fan-out of it (the mode's heureka_push_*_fanout_seconds) and the node's
// collections over it, so that a slow change can be told apart: the node
// slow to send it, or the watchers slow to read it.
func printChanges(mode string, steps []stepResult) {
	what := map[string]string{
		"blocking": "heureka_push_blocking_fanout_seconds: from the change seen to the last answer handed to the kernel",
		"stream":   "heureka_push_stream_fanout_seconds: from the event queued to the last stream's write of it",
	}[mode]
	fmt.Printf("\nEach change: the slowest delivery (from the write's response), the node's fan-out (%s) and the node's collections (go_gc_duration_seconds_count) between the readings before and after it; the three slowest changes of each step in full.\n\n", what)
	fmt.Println("| watchers | changes | fan-outs | fan-out p50 / max ms | slowest delivery p50 / max ms | changes with a collection | their fan-out max ms | slowest changes: delivery ms (fan-out ms, collections) |")
	fmt.Println("|---:|---:|---:|---|---|---:|---:|---|")
	for _, s := range steps {
		var fan, slow, gcFan []time.Duration
		fanouts, withGC := 0, 0
		for _, c := range s.perChange {
			fanouts += c.node.fanouts
			fan = append(fan, c.node.fanout)
			slow = append(slow, c.slowest)
			if c.node.gcs > 0 {
				withGC++
				gcFan = append(gcFan, c.node.fanout)
			}
		}
		byDelivery := slices.Clone(s.perChange)
		slices.SortFunc(byDelivery, func(a, b changeResult) int { return cmp.Compare(b.slowest, a.slowest) })
		var worst []string
		for _, c := range byDelivery[:min(3, len(byDelivery))] {
			worst = append(worst, fmt.Sprintf("%.2f (%.2f, %d)", msf(c.slowest), msf(c.node.fanout), c.node.gcs))
		}
		gcMax := "–"
		if len(gcFan) > 0 {
			gcMax = fmt.Sprintf("%.2f", msf(bench.Percentile(gcFan, 100)))
		}
		fmt.Printf("| %d | %d | %d | %.2f / %.2f | %.2f / %.2f | %d | %s | %s |\n", s.watchers, len(s.perChange), fanouts,
			msf(bench.Percentile(fan, 50)), msf(bench.Percentile(fan, 100)),
			msf(bench.Percentile(slow, 50)), msf(bench.Percentile(slow, 100)), withGC, gcMax, strings.Join(worst, "; "))
	}
}
