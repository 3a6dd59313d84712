package simulations

// The datacenters scenarios of the WAN faults other than a cut of every
// link (docs/federation.md, "Not done yet"): a WAN that is slow and lossy
// rather than cut (datacenters-lossy-wan), a cut of one link of the ring
// only (datacenters-one-link), a region's nodes restarted one by one
// while its WAN is cut, past the drop time (datacenters-restart), and
// nodes restarted in a cut before their remote region turns stale, while
// their peers still serve their copy (datacenters-restart-early). They
// run as the datacenters scenario does (dcRun: the same datacenters,
// clients, churn and observations), with the same shrunk federation
// timers (datacentersShortTimers), and are judged by the region
// invariants, adapted where a fault changes what they can promise (see
// each driver, invariant_regionfaults.go and invariant_regionloading.go).

import (
	"context"
	"fmt"
	"time"

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

// proxyLinks puts a wanFault behind every WAN link, through which every
// connection crossing it then goes (degrade sets how).
func (r *dcRun) proxyLinks() error {
	s, w := r.s, r.w
	for i, dc := range w.dcs {
		var addrs []string
		for _, name := range dc.names {
			addrs = append(addrs, dc.nodes[name].Addr())
		}
		f, err := newWANFault(s.cfg.Seed*7919+int64(i)*104729+1, addrs)
		if err != nil {
			return err
		}
		r.faults = append(r.faults, f)
		w.links[i].SetTargets([]string{f.Addr()})
		// Break what is open so that every connection goes through the
		// proxy from now on (the streams reconnect at once; no region gets
		// near its stale time).
		w.links[i].Cut()
		w.links[i].Heal()
	}
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
	s, w := r.s, r.w
	dc := w.dcs[di]
	name := dc.names[j]
	old := r.node(name)
	addr := old.Addr()
	stopped := time.Now()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	err := old.Stop(ctx)
	cancel()
	if err != nil {
		s.Event("restart", "%s stopped with %v", name, err)
	}
	dc.net.Crash(name)
	dc.net.Restart(name)
	r.incarn[name]++
	var join []string
	for _, n := range dc.names {
		if n != name {
			join = append(join, n)
		}
	}
	cfg := w.nodeConfig(di, j, addr, join, r.incarn[name])
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
	w.mu.Lock()
	w.obs.Restarts = append(w.obs.Restarts, DCRestart{Region: dc.region, Node: name, Stopped: stopped, Ready: time.Now()})
	w.mu.Unlock()
	return nil
}

// restartInCut restarts node j of region di (restartNode) during the cut
// begun at cutAt; its event says how far into the cut the fresh process
// was ready, and when (what its peers serve meanwhile).
func (r *dcRun) restartInCut(di, j int, cutAt time.Time, when string) error {
	at := time.Now()
	if err := r.restartNode(di, j); err != nil {
		return err
	}
	r.s.Event("restart", "%s restarted %s: a fresh process, ready %v after it stopped, %v into the cut",
		r.w.dcs[di].names[j], when, time.Since(at).Round(time.Millisecond), time.Since(cutAt).Round(time.Millisecond))
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
	r, err := startDCRun(s, 2, false, true,
		fmt.Sprintf("2 regions of %d nodes federated, each following the other through a WAN proxy that can degrade (the first node of each by stream, the others by polls)", dcNodes))
	if err != nil {
		return err
	}
	defer r.close()
	_, stale, _ := regionTimers(r.t)
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
	if err := r.changesThenQuiet("the lossy WAN", lossAt.Add(lossLen)); err != nil {
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
	r, err := startDCRun(s, 3, true, false,
		fmt.Sprintf("3 regions of %d nodes federated in a ring (dc1 → dc2 → dc3 → dc1; the first node of each by stream, the others by polls)", dcNodes))
	if err != nil {
		return err
	}
	defer r.close()
	var link *wanLink
	for i, dc := range r.w.dcs {
		if dc.region == oneLinkRemote {
			link = r.w.links[i]
		}
	}
	return r.cutTwice(wanCuts{
		links: []*wanLink{link},
		what:  "the link in front of " + oneLinkRemote,
		long: func(cutLen time.Duration) string {
			return fmt.Sprintf("the WAN link in front of %s (followed by %s) cut for %v; the other links stay up", oneLinkRemote, oneLinkFollower, cutLen)
		},
		during: " of one link",
	})
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
	r, err := startDCRun(s, 2, false, false,
		fmt.Sprintf("2 regions of %d nodes federated, each following the other (the first node of each by stream, the others by polls)", dcNodes))
	if err != nil {
		return err
	}
	defer r.close()
	t := r.t
	_, _, drop := regionTimers(t)

	d := s.Duration()
	lead := 3*time.Second + s.Between(0, 500*time.Millisecond)
	// Every node has dropped the other region by then (the stale-drop
	// invariant's late slack).
	late := staleDropLate(t, s.cfg.Thresholds)
	restartAt := max(drop, t.TombstoneTTL) + late + 500*time.Millisecond
	if err := s.Sleep(lead); err != nil {
		return err
	}
	cutAt := time.Now()
	cutLinks(r.w.links, true)
	s.fault()
	s.Event("wan-cut", "every WAN link cut; dc1's nodes restart one by one from %v into the cut (past the drop time %v and the tombstone TTL %v)",
		restartAt.Round(time.Millisecond), drop, t.TombstoneTTL)
	if err := r.changesThenQuiet("the cut", cutAt.Add(restartAt)); err != nil {
		return err
	}
	for j := range r.w.dcs[0].names {
		if err := r.restartInCut(0, j, cutAt, "while the WAN is cut, past the drop time"); err != nil {
			return err
		}
		if err := s.Sleep(s.Between(100*time.Millisecond, 300*time.Millisecond)); err != nil {
			return err
		}
	}
	if err := s.Sleep(500 * time.Millisecond); err != nil {
		return err
	}
	cutLinks(r.w.links, false)
	if err := r.healed(cutAt, "every WAN link"); err != nil {
		return err
	}
	if err := s.Sleep(max(2*time.Second, time.Until(cutAt.Add(d-lead)))); err != nil {
		return err
	}
	return r.teardown()
}

// driveDatacentersRestartEarly: two regions following each other; nodes
// restart as fresh processes (restartNode) while the WAN is cut, before
// the other region turns stale on them. Every WAN link is cut for longer
// than the drop time and the tombstone TTL: 250–400 ms in, dc1's stream
// follower and then a polling node of dc2 restart, while their peers
// still serve their ok copy of the other region; a cancel and a
// registration in every region follow; once every node has marked the
// other region stale (the stale time plus the stale-drop invariant's late
// slack), a polling node of dc1 restarts too, before the drop. Healed, the
// views must converge. Then a short cut in which dc2's stream follower
// restarts, its peers ok throughout, with a cancel and a registration in
// every region; it heals at half the stale time, or three sampling rounds
// after the fresh process is ready if that is later, so that the fresh
// process is read in the cut. Each fresh process must answer ?regions=
// reads 403 and show the region loading until the heal (it has no copy,
// and its stale and drop clocks start at its first success), then load it
// within the convergence bound (region-loading); region-stale-drop judges
// each node's old process up to its restart.
func driveDatacentersRestartEarly(s *Sim) error {
	r, err := startDCRun(s, 2, false, false,
		fmt.Sprintf("2 regions of %d nodes federated, each following the other (the first node of each by stream, the others by polls)", dcNodes))
	if err != nil {
		return err
	}
	defer r.close()
	t := r.t
	_, stale, drop := regionTimers(t)
	late := staleDropLate(t, s.cfg.Thresholds)

	d := s.Duration()
	lead := 3*time.Second + s.Between(0, 500*time.Millisecond)
	cutLen := max(drop, t.TombstoneTTL) + 3*time.Second
	if err := s.Sleep(lead); err != nil {
		return err
	}
	cutAt := time.Now()
	cutLinks(r.w.links, true)
	s.fault()
	s.Event("wan-cut", "every WAN link cut for %v (past the drop time %v and the tombstone TTL %v); nodes restart in it before the stale time %v, and once stale",
		cutLen, drop, t.TombstoneTTL, stale)
	if err := s.Sleep(s.Between(250*time.Millisecond, 400*time.Millisecond)); err != nil {
		return err
	}
	for _, n := range []struct{ di, j int }{{0, 0}, {1, 1}} {
		if err := r.restartInCut(n.di, n.j, cutAt, "before the stale time, its peers serving their ok copy"); err != nil {
			return err
		}
	}
	if err := s.Sleep(time.Until(cutAt.Add(time.Second))); err != nil {
		return err
	}
	r.changes("the cut")
	if err := s.Sleep(time.Until(cutAt.Add(stale + late + 500*time.Millisecond))); err != nil {
		return err
	}
	if err := r.restartInCut(0, 1, cutAt, "once every node shows the other region stale, before the drop"); err != nil {
		return err
	}
	if err := r.quietBy(cutAt.Add(cutLen)); err != nil {
		return err
	}
	cutLinks(r.w.links, false)
	if err := r.healed(cutAt, "every WAN link"); err != nil {
		return err
	}

	// A short cut with a restart in it: the peers never turn stale.
	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	shortAt := time.Now()
	cutLinks(r.w.links, true)
	s.fault()
	s.Event("wan-cut", "every WAN link cut for about %v (half the stale time); dc2's stream follower restarts in it", stale/2)
	if err := s.Sleep(s.Between(150*time.Millisecond, 250*time.Millisecond)); err != nil {
		return err
	}
	if err := r.restartInCut(1, 0, shortAt, "in the short cut, its peers ok throughout"); err != nil {
		return err
	}
	r.changes("the short cut")
	if err := s.Sleep(max(time.Until(shortAt.Add(stale/2)), 3*t.SampleInterval)); err != nil {
		return err
	}
	cutLinks(r.w.links, false)
	if err := r.healed(shortAt, "every WAN link"); err != nil {
		return err
	}
	if err := s.Sleep(max(2*time.Second, time.Until(cutAt.Add(d-lead)))); err != nil {
		return err
	}
	return r.teardown()
}
