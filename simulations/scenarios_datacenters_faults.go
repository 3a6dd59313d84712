package simulations

// The datacenters scenarios of the WAN faults other than a cut of every
// link (docs/federation.md, "Not done yet"): a WAN that is slow and lossy
// rather than cut (datacenters-lossy-wan), a cut of one link of the ring
// only (datacenters-one-link), and a region's nodes restarted one by one
// while its WAN is cut (datacenters-restart). They start the same
// datacenters (startDatacenters), clients and observations as the
// datacenters scenario, with the same shrunk federation timers
// (datacentersShortTimers), and are judged by the region invariants,
// adapted where a fault changes what they can promise (see each driver and
// invariant_regionfaults.go).

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// The link datacenters-one-link cuts: the one in front of dc2, which only
// dc1 follows in the ring (dc1 → dc2 → dc3 → dc1).
const (
	oneLinkFollower = "dc1"
	oneLinkRemote   = "dc2"
)

// lossyWAN is how datacenters-lossy-wan degrades every WAN link, per chunk
// and one way: a latency of 10–40 ms (0.3–1.2 s at production's timers,
// 30× longer), one chunk in ten held back 100–600 ms more (a lost
// segment waiting for its retransmission; above the 333 ms request
// timeout at its longest), one in thirty-three a reset connection.
var lossyWAN = wanDegrade{
	DelayLo: 10 * time.Millisecond, DelayHi: 40 * time.Millisecond,
	StallP: 0.1, StallLo: 100 * time.Millisecond, StallHi: 600 * time.Millisecond,
	ResetP: 0.03,
}

// dcRun is one run of a datacenters fault scenario: the world, the
// current process of every node (a restart replaces it), the degrading
// proxies if any, the steady clients, the churn and the observer.
type dcRun struct {
	s *Sim
	w *dcWorld
	t Timers

	liveMu sync.Mutex
	live   map[string]*node.Node // node name → its current process
	incarn map[string]int

	faults []*wanFault // per region (w.dcs' order); nil without degradation

	steady []*dcClient

	obsCtx    context.Context
	stopObs   context.CancelFunc
	obsWG     sync.WaitGroup
	observing bool

	churnCtx  context.Context
	stopChurn context.CancelFunc
	churnWG   sync.WaitGroup
}

// The churn's client lives.
const dcMinLife, dcMaxLife = time.Second, 2500 * time.Millisecond

// newDCRun starts n regions (ring: each following the next) and the
// observer; with degrade, a wanFault behind every WAN link, through which
// every connection crossing it then goes.
func newDCRun(s *Sim, n int, ring, degrade bool) (*dcRun, error) {
	w, err := startDatacenters(s, n, dcNodes, ring)
	if err != nil {
		return nil, err
	}
	r := &dcRun{s: s, w: w, t: s.Timers(), live: map[string]*node.Node{}, incarn: map[string]int{}}
	for _, dc := range w.dcs {
		for name, nd := range dc.nodes {
			r.live[name] = nd
		}
	}
	if degrade {
		for i, dc := range w.dcs {
			var addrs []string
			for _, name := range dc.names {
				addrs = append(addrs, dc.nodes[name].Addr())
			}
			f, err := newWANFault(s.cfg.Seed*7919+int64(i)*104729+1, addrs)
			if err != nil {
				r.close()
				return nil, err
			}
			r.faults = append(r.faults, f)
			w.links[i].SetTargets([]string{f.Addr()})
			// Break what is open so that every connection goes through
			// the proxy from now on (the streams reconnect at once; no
			// region gets near its stale time).
			w.links[i].Cut()
			w.links[i].Heal()
		}
	}
	r.obsCtx, r.stopObs = context.WithCancel(context.Background())
	r.observing = true
	r.obsWG.Add(1)
	go func() { defer r.obsWG.Done(); r.observe(r.obsCtx) }()
	r.churnCtx, r.stopChurn = context.WithCancel(s.ctx)
	return r, nil
}

// node returns name's current process.
func (r *dcRun) node(name string) *node.Node {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	return r.live[name]
}

// observe is dcWorld.observe reading every node's current process.
func (r *dcRun) observe(ctx context.Context) {
	w := r.w
	tick := time.NewTicker(r.t.SampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.mu.Lock()
		w.round++
		round := w.round
		w.mu.Unlock()
		var wg sync.WaitGroup
		for _, dc := range w.dcs {
			others := w.obs.Follows[dc.region]
			for _, name := range dc.names {
				view := &datacenter{region: dc.region, names: dc.names, nodes: map[string]*node.Node{name: r.node(name)}}
				wg.Add(1)
				go func() {
					defer wg.Done()
					rd := w.read(ctx, view, name, others)
					rd.Round = round
					w.mu.Lock()
					w.obs.Reads = append(w.obs.Reads, rd)
					w.mu.Unlock()
					r.s.rec.AddSamples(rd.samples())
				}()
			}
		}
		wg.Wait()
	}
}

// finish stops the observer and hands the observations to the recorder.
func (r *dcRun) finish() {
	if !r.observing {
		return
	}
	r.observing = false
	r.stopObs()
	r.obsWG.Wait()
	w := r.w
	w.mu.Lock()
	o := w.obs
	o.Reads = slices.Clone(w.obs.Reads)
	o.Cuts = slices.Clone(w.obs.Cuts)
	o.Instances = map[string]*DCInstance{}
	for id, in := range w.obs.Instances {
		c := *in
		o.Instances[id] = &c
	}
	w.mu.Unlock()
	r.s.rec.Mark(func(ob *Observations) { ob.Datacenters = &o })
}

// close ends the churn, stops every client, finishes the observations and
// stops the nodes (restarted ones included), the links and the proxies.
func (r *dcRun) close() {
	if r.stopChurn != nil {
		r.stopChurn()
		r.churnWG.Wait()
	}
	r.w.mu.Lock()
	clients := slices.Clone(r.w.clients)
	r.w.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); c.cl.Stop(false) }() // no-op for the stopped ones
	}
	wg.Wait()
	if r.stopObs != nil {
		r.finish()
	}
	r.liveMu.Lock()
	var restarted []*node.Node
	for _, dc := range r.w.dcs {
		for _, name := range dc.names {
			if nd := r.live[name]; nd != nil && nd != dc.nodes[name] {
				restarted = append(restarted, nd)
			}
		}
	}
	r.liveMu.Unlock()
	for _, nd := range restarted {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = nd.Stop(ctx)
		}()
	}
	wg.Wait()
	r.w.close()
	for _, f := range r.faults {
		f.Close()
	}
}

// registerSteady starts two steady clients per node in every region and
// waits for their registrations.
func (r *dcRun) registerSteady() error {
	s, w := r.s, r.w
	k := s.IntN(len(Apps))
	for _, dc := range w.dcs {
		for i := 0; i < 2; i++ {
			for _, loc := range s.Shuffled(dc.names) {
				r.steady = append(r.steady, w.newClient(dc.region, Apps[k%len(Apps)], loc))
				k++
			}
		}
	}
	for limit := time.Now().Add(registerWithin); !w.acked(r.steady); {
		if time.Now().After(limit) {
			return fmt.Errorf("simulations: datacenter clients not registered within %v", registerWithin)
		}
		if err := s.Sleep(20 * time.Millisecond); err != nil {
			return err
		}
	}
	now := time.Now()
	s.rec.Mark(func(o *Observations) { o.SteadyAt = now })
	s.Event("register", "%d steady clients registered, %d in each region", len(r.steady), len(r.steady)/len(w.dcs))
	return nil
}

// startChurn starts short-lived clients in random regions (as
// datacenters does): one every ~400 ms, living 1–2.5 s, each cancelling.
func (r *dcRun) startChurn() {
	s, w := r.s, r.w
	r.churnWG.Add(1)
	go func() {
		defer r.churnWG.Done()
		for sleepCtx(r.churnCtx, s.Between(200*time.Millisecond, 600*time.Millisecond)) {
			dc := w.dcs[s.IntN(len(w.dcs))]
			c := w.newClient(dc.region, Apps[s.IntN(len(Apps))], dc.names[s.IntN(len(dc.names))])
			life := s.Between(dcMinLife, dcMaxLife)
			r.churnWG.Add(1)
			go func() {
				defer r.churnWG.Done()
				sleepCtx(s.ctx, life)
				c.cl.Stop(true)
			}()
		}
	}()
	s.Event("churn", "a client every ~400ms in a random region, living %v–%v, each cancelling", dcMinLife, dcMaxLife)
}

// endChurn stops the churn and waits for its clients' cancels.
func (r *dcRun) endChurn() {
	r.stopChurn()
	r.churnWG.Wait()
	r.s.Event("churn-end", "churn stopped; its clients all cancelled")
}

// changes cancels a steady client and registers a new one in every region.
func (r *dcRun) changes(during string) {
	s, w := r.s, r.w
	for _, dc := range w.dcs {
		for i, c := range r.steady {
			if c.region == dc.region {
				c.cl.Stop(true)
				r.steady = slices.Delete(r.steady, i, i+1)
				s.Event("cancel", "%s cancelled in %s during %s", c.id, dc.region, during)
				break
			}
		}
		nc := w.newClient(dc.region, Apps[s.IntN(len(Apps))], dc.names[s.IntN(len(dc.names))])
		r.steady = append(r.steady, nc)
		s.Event("register", "%s registers in %s during %s", nc.id, dc.region, during)
	}
}

// window records [from, to] in the observations' Cuts: the time the
// region invariants do not count as WAN up time, and after whose end the
// views must converge.
func (r *dcRun) window(from, to time.Time) {
	r.w.mu.Lock()
	r.w.obs.Cuts = append(r.w.obs.Cuts, Span{From: from, To: to})
	r.w.mu.Unlock()
}

// waitConverged waits, up to the convergence threshold after healAt, for
// every remote view to equal its region's registry.
func (r *dcRun) waitConverged(healAt time.Time) error {
	s, w := r.s, r.w
	for limit := healAt.Add(s.cfg.Thresholds.Convergence); time.Now().Before(limit) && !w.converged(); {
		if err := s.Sleep(r.t.SampleInterval); err != nil {
			return err
		}
	}
	s.Event("converged", "remote views %s %v after the heal", map[bool]string{true: "converged", false: "not converged"}[w.converged()],
		time.Since(healAt).Round(time.Millisecond))
	return nil
}

// teardown cancels every client and observes a propagation bound more.
func (r *dcRun) teardown() error {
	s, w := r.s, r.w
	w.mu.Lock()
	w.obs.Teardown = time.Now()
	clients := slices.Clone(w.clients)
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); c.cl.Stop(true) }()
	}
	wg.Wait()
	var crossed, refused int64
	for _, l := range w.links {
		crossed, refused = crossed+l.bytes.Load(), refused+l.refused.Load()
	}
	s.Event("dc-teardown", "every datacenter client cancelled; %d KiB crossed the WAN links so far, %d connections refused while cut",
		crossed/1024, refused)
	if err := s.Sleep(regionBound(r.t, s.cfg.Thresholds) + r.t.SampleInterval); err != nil {
		return err
	}
	r.finish()
	return nil
}

// degrade sets every proxy's degradation.
func (r *dcRun) degrade(d wanDegrade) {
	for _, f := range r.faults {
		f.Degrade(d)
	}
}

// faultCounts sums the proxies' counters.
func (r *dcRun) faultCounts() (chunks, stalls, resets int64) {
	for _, f := range r.faults {
		chunks, stalls, resets = chunks+f.chunks.Load(), stalls+f.stalls.Load(), resets+f.resets.Load()
	}
	return chunks, stalls, resets
}

// restartNode stops node j of region di gracefully and starts a fresh
// process of it (empty registry, federation loading) at the same HTTP
// address, so that its clients and the WAN link in front of its region
// reach the new process; it returns once the node is ready (synced with
// its region's other nodes).
func (r *dcRun) restartNode(di, j int) error {
	s, w, t := r.s, r.w, r.t
	dc := w.dcs[di]
	name := dc.names[j]
	old := r.node(name)
	addr := old.Addr()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	err := old.Stop(ctx)
	cancel()
	if err != nil {
		s.Event("restart", "%s stopped with %v", name, err)
	}
	dc.net.Crash(name)
	dc.net.Restart(name)
	var remotes []federation.Remote
	for _, other := range w.obs.Follows[dc.region] {
		for oi, o := range w.dcs {
			if o.region == other {
				remotes = append(remotes, federation.Remote{Name: o.region, URL: w.links[oi].URL()})
			}
		}
	}
	r.incarn[name]++
	cfg := node.DefaultConfig(name)
	cfg.HTTPAddr = addr
	cfg.Logger = s.c.log
	seed := s.cfg.Seed*1000 + 500 + int64(di)*10 + int64(j) + 100*int64(r.incarn[name])
	cfg.Registry.Seed = seed
	cc := cluster.DefaultLocalConfig()
	for _, n := range dc.names {
		if n != name {
			cc.Join = append(cc.Join, n)
		}
	}
	cc.Transport = dc.net.NewTransport(name)
	cc.Resolver = dc.net.Resolve
	cfg.Cluster = &cc
	cfg.Replication = cluster.DefaultReplicatorConfig()
	cfg.Replication.Seed = seed
	t.ApplyTo(&cfg)
	fc := datacenterFederation(t, dc.region, remotes, j == 0)
	cfg.Federation = &fc
	pc := httpapi.DefaultPushConfig()
	pc.StreamKeepAlive = regionKeepAlive(t)
	cfg.Push = &pc
	var nd *node.Node
	for try := 0; ; try++ {
		nd, err = node.Start(cfg)
		if err == nil {
			break
		}
		if try == 20 {
			return fmt.Errorf("simulations: restart %s at %s: %w", name, addr, err)
		}
		if err := s.Sleep(50 * time.Millisecond); err != nil {
			return err
		}
	}
	r.liveMu.Lock()
	r.live[name] = nd
	r.liveMu.Unlock()
	for limit := time.Now().Add(15 * time.Second); !nd.Ready(); {
		if time.Now().After(limit) {
			return fmt.Errorf("simulations: restarted %s not ready within 15s", name)
		}
		if err := s.Sleep(20 * time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// driveDatacentersLossyWAN: two regions following each other over a WAN
// that is slow and lossy (lossyWAN on every link) rather than cut, for a
// third of the run with the churn going on and a cancel and a
// registration in every region, then clean; then lossy again for the
// stale time with a cancel and a registration in every region and no
// churn, then clean. A degraded window counts, for the invariants, like a
// cut (the WAN up time stops), until the last chunk held back in it can
// have been delivered: a lossy WAN promises no propagation bound; what the
// invariants promise is no echo, no resurrection, the stale rule (never
// stale while the last success is younger than the stale time) and
// convergence within regionBound of clean WAN.
func driveDatacentersLossyWAN(s *Sim) error {
	r, err := newDCRun(s, 2, false, true)
	if err != nil {
		return err
	}
	defer r.close()
	t := r.t
	_, stale, _ := regionTimers(t)
	s.Event("start", "2 regions of %d nodes federated, each following the other through a WAN proxy that can degrade (the first node of each by stream, the others by polls)", dcNodes)
	if err := r.registerSteady(); err != nil {
		return err
	}
	r.startChurn()
	start := time.Now()
	tail := lossyWAN.StallHi + lossyWAN.DelayHi // the longest a degraded chunk is held

	d := s.Duration()
	lead := 3*time.Second + s.Between(0, 500*time.Millisecond)
	lossLen := max(3*stale, d/3)
	if err := s.Sleep(lead); err != nil {
		return err
	}
	lossAt := time.Now()
	r.degrade(lossyWAN)
	s.fault()
	s.Event("wan-lossy", "every WAN link slow and lossy for %v: %v–%v latency per chunk, %.0f%% of the chunks held %v–%v more, %.0f%% resets",
		lossLen, lossyWAN.DelayLo, lossyWAN.DelayHi, 100*lossyWAN.StallP, lossyWAN.StallLo, lossyWAN.StallHi, 100*lossyWAN.ResetP)
	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	r.changes("the lossy WAN")
	if err := s.Sleep(time.Until(lossAt.Add(lossLen - dcMaxLife - 500*time.Millisecond))); err != nil {
		return err
	}
	r.endChurn()
	if err := s.Sleep(time.Until(lossAt.Add(lossLen))); err != nil {
		return err
	}
	r.degrade(wanDegrade{})
	cleanAt := time.Now().Add(tail)
	r.window(lossAt, cleanAt)
	chunks, stalls, resets := r.faultCounts()
	s.Event("wan-clean", "every WAN link clean again after %v (%d chunks degraded, %d held back, %d connections reset); the window counts until %v later",
		time.Since(lossAt).Round(time.Millisecond), chunks, stalls, resets, tail)
	if err := s.Sleep(time.Until(cleanAt)); err != nil {
		return err
	}
	s.lifted()
	if err := r.waitConverged(cleanAt); err != nil {
		return err
	}

	// Lossy again for the stale time, with a cancel and a registration in
	// every region and nothing else changing.
	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	lossAt = time.Now()
	r.degrade(lossyWAN)
	s.fault()
	s.Event("wan-lossy", "every WAN link slow and lossy again for %v (the stale time)", stale)
	r.changes("the second lossy WAN")
	if err := s.Sleep(time.Until(lossAt.Add(stale))); err != nil {
		return err
	}
	r.degrade(wanDegrade{})
	cleanAt = time.Now().Add(tail)
	r.window(lossAt, cleanAt)
	c2, st2, rs2 := r.faultCounts()
	s.Event("wan-clean", "every WAN link clean again (%d chunks degraded, %d held back, %d connections reset)", c2-chunks, st2-stalls, rs2-resets)
	if err := s.Sleep(time.Until(cleanAt)); err != nil {
		return err
	}
	s.lifted()
	if err := r.waitConverged(cleanAt); err != nil {
		return err
	}
	if err := s.Sleep(max(2*time.Second, time.Until(start.Add(d)))); err != nil {
		return err
	}
	return r.teardown()
}

// driveDatacentersOneLink: three regions in a ring (dc1 → dc2 → dc3 → dc1)
// where only the link in front of dc2, which dc1 follows, is cut: for
// longer than the drop time and the tombstone TTL with a cancel and a
// registration in every region, then healed; then for half the stale time
// with the same, then healed. The observations' Cuts are that link's; the
// one-link invariants judge dc1's view of dc2 as the datacenters scenario
// judges a cut, and the two other links as never cut (no stop to the
// clock, never stale).
func driveDatacentersOneLink(s *Sim) error {
	r, err := newDCRun(s, 3, true, false)
	if err != nil {
		return err
	}
	defer r.close()
	t := r.t
	_, stale, drop := regionTimers(t)
	s.Event("start", "3 regions of %d nodes federated in a ring (dc1 → dc2 → dc3 → dc1; the first node of each by stream, the others by polls)", dcNodes)
	if err := r.registerSteady(); err != nil {
		return err
	}
	r.startChurn()
	var link *wanLink
	for i, dc := range r.w.dcs {
		if dc.region == oneLinkRemote {
			link = r.w.links[i]
		}
	}

	d := s.Duration()
	lead := 3*time.Second + s.Between(0, 500*time.Millisecond)
	cutLen := max(drop, t.TombstoneTTL) + 3*time.Second
	if err := s.Sleep(lead); err != nil {
		return err
	}
	cutAt := time.Now()
	link.Cut()
	s.fault()
	s.Event("wan-cut", "the WAN link in front of %s (followed by %s) cut for %v; the other links stay up", oneLinkRemote, oneLinkFollower, cutLen)
	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	r.changes("the cut of one link")
	if err := s.Sleep(time.Until(cutAt.Add(cutLen - dcMaxLife - 500*time.Millisecond))); err != nil {
		return err
	}
	r.endChurn()
	if err := s.Sleep(time.Until(cutAt.Add(cutLen))); err != nil {
		return err
	}
	link.Heal()
	healAt := time.Now()
	r.window(cutAt, healAt)
	s.lifted()
	s.Event("wan-heal", "the link in front of %s healed after %v", oneLinkRemote, healAt.Sub(cutAt).Round(time.Millisecond))
	if err := r.waitConverged(healAt); err != nil {
		return err
	}

	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	shortAt := time.Now()
	link.Cut()
	s.fault()
	s.Event("wan-cut", "the link in front of %s cut for %v (half the stale time)", oneLinkRemote, stale/2)
	r.changes("the short cut of one link")
	if err := s.Sleep(time.Until(shortAt.Add(stale / 2))); err != nil {
		return err
	}
	link.Heal()
	healAt = time.Now()
	r.window(shortAt, healAt)
	s.lifted()
	s.Event("wan-heal", "the link in front of %s healed after %v", oneLinkRemote, healAt.Sub(shortAt).Round(time.Millisecond))
	if err := r.waitConverged(healAt); err != nil {
		return err
	}
	if err := s.Sleep(max(2*time.Second, time.Until(cutAt.Add(d-lead)))); err != nil {
		return err
	}
	return r.teardown()
}

// driveDatacentersRestart: two regions following each other; the WAN is
// cut, with a cancel and a registration in every region a second in, and
// once every node has dropped the other region (past the drop time, which
// is the tombstone TTL) dc1's nodes restart one by one, each a fresh
// process (empty registry, its federation loading: it answers ?regions=
// reads 403 until it has loaded the other region) that syncs from the
// others before the next one stops; half a second after the last one is
// ready the WAN heals. The region invariants apply as in datacenters: the
// restarted nodes' reads during the cut are not answers (403), and after
// the heal they must load the other region within the convergence bound.
func driveDatacentersRestart(s *Sim) error {
	r, err := newDCRun(s, 2, false, false)
	if err != nil {
		return err
	}
	defer r.close()
	t := r.t
	pull, stale, drop := regionTimers(t)
	s.Event("start", "2 regions of %d nodes federated, each following the other (the first node of each by stream, the others by polls)", dcNodes)
	if err := r.registerSteady(); err != nil {
		return err
	}
	r.startChurn()

	d := s.Duration()
	lead := 3*time.Second + s.Between(0, 500*time.Millisecond)
	// Every node has dropped the other region by then (the stale-drop
	// invariant's late slack).
	late := stale/6 + pull + t.SampleInterval + s.cfg.Thresholds.Visibility
	restartAt := max(drop, t.TombstoneTTL) + late + 500*time.Millisecond
	if err := s.Sleep(lead); err != nil {
		return err
	}
	cutAt := time.Now()
	r.w.cut(true)
	s.fault()
	s.Event("wan-cut", "every WAN link cut; dc1's nodes restart one by one from %v into the cut (past the drop time %v and the tombstone TTL %v)",
		restartAt.Round(time.Millisecond), drop, t.TombstoneTTL)
	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	r.changes("the cut")
	if err := s.Sleep(time.Until(cutAt.Add(restartAt - dcMaxLife - 500*time.Millisecond))); err != nil {
		return err
	}
	r.endChurn()
	if err := s.Sleep(time.Until(cutAt.Add(restartAt))); err != nil {
		return err
	}
	for j, name := range r.w.dcs[0].names {
		at := time.Now()
		if err := r.restartNode(0, j); err != nil {
			return err
		}
		s.Event("restart", "%s restarted while the WAN is cut: a fresh process, ready %v after it stopped", name, time.Since(at).Round(time.Millisecond))
		if err := s.Sleep(s.Between(100*time.Millisecond, 300*time.Millisecond)); err != nil {
			return err
		}
	}
	if err := s.Sleep(500 * time.Millisecond); err != nil {
		return err
	}
	r.w.cut(false)
	healAt := time.Now()
	r.window(cutAt, healAt)
	s.lifted()
	s.Event("wan-heal", "every WAN link healed after %v", healAt.Sub(cutAt).Round(time.Millisecond))
	if err := r.waitConverged(healAt); err != nil {
		return err
	}
	if err := s.Sleep(max(2*time.Second, time.Until(cutAt.Add(d-lead)))); err != nil {
		return err
	}
	return r.teardown()
}
