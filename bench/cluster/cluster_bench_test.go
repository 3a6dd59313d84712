package clusterbench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/bench"
	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/node"
	"github.com/heureka/heureka/wire"
)

// ---- 1. register on one node → visible over HTTP on every other node -----------

const (
	visibleSamples = 1000 // measured samples per cluster size
	visibleWarmup  = 50   // samples discarded first
	visibleApps    = 50   // samples are spread over this many applications
	// visiblePollGap is the pause between two GETs of the same node while
	// a poller waits for the instance (the measurement's resolution).
	visiblePollGap = 200 * time.Microsecond
)

// BenchmarkVisibleOnAll registers an instance over HTTP on a random node of
// a real loopback cluster and measures the time from its 204 until every
// other node lists it in GET /eureka/apps/{APP}.
func BenchmarkVisibleOnAll(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchVisible(b, n, false, false) })
	}
}

// BenchmarkVisibleWithStalledPeer is BenchmarkVisibleOnAll on a 5-node
// MemNetwork cluster, without and with one member that accepts streams but
// never reads them (MemNetwork.Stall): registrations on the other four must
// reach the other three as fast as when every member reads. The stalled
// member is neither a source nor a target.
func BenchmarkVisibleWithStalledPeer(b *testing.B) {
	for _, stalled := range []bool{false, true} {
		b.Run(fmt.Sprintf("stalled=%v", stalled), func(b *testing.B) { benchVisible(b, 5, true, stalled) })
	}
}

func benchVisible(b *testing.B, n int, inMemory, stallLast bool) {
	bc := startCluster(b, n, inMemory)
	if stallLast {
		bc.net.Stall(bc.names[n-1])
		defer bc.net.Unstall(bc.names[n-1])
		n-- // sources and targets: the others
	}
	c := newClient(4)
	defer c.CloseIdleConnections()
	rnd := rand.New(rand.NewPCG(uint64(n), 7))
	var lat, reg, viewLat []time.Duration
	var polls atomic.Int64
	perNode := make([]time.Duration, n) // sum of each node's own latency
	perNodeCount := make([]int, n)
	b.ResetTimer()
	cw := watchCPU()
	for s := 0; s < visibleWarmup+visibleSamples; s++ {
		in := makeInst("VIS", s%visibleApps, 0, s)
		src := rnd.IntN(n)
		t0 := time.Now()
		code, body, err := send(c, http.MethodPost, bc.nodes[src].URL()+"/apps/"+in.App, registerBody(in))
		if err != nil || code != http.StatusNoContent {
			b.Fatalf("register on n%d: %v %d %s", src, err, code, body)
		}
		t1 := time.Now()
		needle := []byte(`"instanceId":"` + in.ID + `"`)
		seen := make([]time.Duration, n)
		inView := make([]time.Duration, n)
		var wg sync.WaitGroup
		var failed atomic.Value
		for j := range n {
			if j == src {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				url := bc.nodes[j].URL() + "/apps/" + in.App
				for {
					// In-process check first: when did the node's view
					// get the instance, HTTP aside?
					if inView[j] == 0 && bc.nodes[j].View().Snapshot().Instance(in.App, in.ID) != nil {
						inView[j] = time.Since(t1)
					}
					polls.Add(1)
					code, body, err := send(c, http.MethodGet, url, nil)
					if err == nil && code == http.StatusOK && bytes.Contains(body, needle) {
						seen[j] = time.Since(t1)
						if inView[j] == 0 {
							inView[j] = seen[j]
						}
						return
					}
					if time.Since(t1) > 10*time.Second {
						failed.Store(fmt.Sprintf("n%d never listed %s (last: %v %d)", j, in.ID, err, code))
						return
					}
					time.Sleep(visiblePollGap)
				}
			}()
		}
		wg.Wait()
		if f := failed.Load(); f != nil {
			b.Fatal(f)
		}
		if s < visibleWarmup {
			continue
		}
		var worst, worstView time.Duration
		for j, d := range seen {
			if j != src {
				worst = max(worst, d)
				worstView = max(worstView, inView[j])
				perNode[j] += d
				perNodeCount[j]++
			}
		}
		lat = append(lat, worst)
		viewLat = append(viewLat, worstView)
		reg = append(reg, t1.Sub(t0))
	}
	b.StopTimer()
	share, note := cw.report()
	sortDurations(lat)
	sortDurations(reg)
	sortDurations(viewLat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(len(lat)), "samples")
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(sum/time.Duration(len(lat))), "mean-ms")
	b.ReportMetric(ms(percentile(reg, 50)), "register-p50-ms")
	b.ReportMetric(ms(percentile(viewLat, 99)), "in-view-p99-ms")
	b.ReportMetric(float64(polls.Load())/float64(visibleWarmup+visibleSamples), "GETs/sample")
	b.ReportMetric(share, "cpu-share")
	var line strings.Builder
	for j := range n {
		if perNodeCount[j] > 0 {
			fmt.Fprintf(&line, " n%d=%.2fms", j, ms(perNode[j]/time.Duration(perNodeCount[j])))
		}
	}
	b.Logf("nodes=%d: visible over HTTP on all: p50 %.2fms p99 %.2fms max %.2fms; in every view (in-process check): p50 %.2fms p99 %.2fms max %.2fms\n"+
		"  register round trip p50 %.2fms p99 %.2fms; mean per-node latency:%s\n  %s",
		n, ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(lat[len(lat)-1]),
		ms(percentile(viewLat, 50)), ms(percentile(viewLat, 99)), ms(viewLat[len(viewLat)-1]),
		ms(percentile(reg, 50)), ms(percentile(reg, 99)), line.String(), note)
}

// ---- 2. wire and CPU cost of a renewal --------------------------------------------

const (
	wireInstances = 2000
	wireApps      = 200
	// wireRate renewals per second for wireDrive: every instance renews
	// once a second, the rate of 60000 instances on Eureka's 30s interval.
	wireRate  = 2000
	wireDrive = 10 * time.Second
	// wireDrain lets the last coalesced renewals be flushed (flush 1s).
	wireDrain = 1500 * time.Millisecond
)

// BenchmarkWirePerRenewal counts what a renewal costs on the wire, on a
// MemNetwork so that every packet and stream byte is counted, with the
// production replication settings (renewals flushed every second). The
// clients renew at a fixed total rate, wireRate, whatever the cluster size
// (BenchmarkRenewalPerNode holds the rate per node fixed instead).
func BenchmarkWirePerRenewal(b *testing.B) {
	for _, n := range []int{3, 5, 9, 17} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			benchWire(b, n, renewalLoad{instances: wireInstances, apps: wireApps, rate: wireRate, workers: 16})
		})
	}
}

// renewalLoad is the registry and the client renewals of a benchWire run.
type renewalLoad struct {
	instances, apps int     // the registry: instances spread evenly over apps
	rate            float64 // client renewals per second, the whole cluster
	workers         int     // client goroutines
	// split adds the phases that split the CPU of a renewal (see
	// BenchmarkRenewalPerNode): the same renewals sent to each
	// application's owner, the same requests to a do-nothing HTTP server,
	// and a second idle phase.
	split bool
}

// phase is what every node sent during one measured period, and what
// the process spent on it.
type phase struct {
	net      []memnet.NetStats
	repl     []cluster.WireStats
	renewals []int         // client renewals each node served
	cpu      time.Duration // process CPU (every node and the clients)
	wall     time.Duration
}

func (p phase) totals() (memnet.NetStats, cluster.WireStats, int) {
	var ns memnet.NetStats
	var ws cluster.WireStats
	var r int
	for i := range p.net {
		ns.PacketsSent += p.net[i].PacketsSent
		ns.PacketBytes += p.net[i].PacketBytes
		ns.StreamsOpened += p.net[i].StreamsOpened
		ns.StreamBytes += p.net[i].StreamBytes
		ws = addWire(ws, p.repl[i])
		r += p.renewals[i]
	}
	return ns, ws, r
}

func addWire(a, b cluster.WireStats) cluster.WireStats {
	return cluster.WireStats{Messages: a.Messages + b.Messages, Bytes: a.Bytes + b.Bytes,
		AnswerMessages: a.AnswerMessages + b.AnswerMessages, AnswerBytes: a.AnswerBytes + b.AnswerBytes,
		RecordMessages: a.RecordMessages + b.RecordMessages, RenewalMessages: a.RenewalMessages + b.RenewalMessages,
		Renewals: a.Renewals + b.Renewals, DigestMessages: a.DigestMessages + b.DigestMessages,
		SyncMessages: a.SyncMessages + b.SyncMessages, TransferRecords: a.TransferRecords + b.TransferRecords}
}

func subWire(a, b cluster.WireStats) cluster.WireStats {
	return cluster.WireStats{Messages: a.Messages - b.Messages, Bytes: a.Bytes - b.Bytes,
		AnswerMessages: a.AnswerMessages - b.AnswerMessages, AnswerBytes: a.AnswerBytes - b.AnswerBytes,
		RecordMessages: a.RecordMessages - b.RecordMessages, RenewalMessages: a.RenewalMessages - b.RenewalMessages,
		Renewals: a.Renewals - b.Renewals, DigestMessages: a.DigestMessages - b.DigestMessages,
		SyncMessages: a.SyncMessages - b.SyncMessages, TransferRecords: a.TransferRecords - b.TransferRecords}
}

// measurePhase resets the counters, runs drive, waits until d has passed
// since the start and returns what every node sent meanwhile, and the
// process CPU and wall time of the phase (longer than d if drive was).
func measurePhase(bc *benchCluster, d time.Duration, drive func(served []atomic.Int64)) phase {
	n := len(bc.nodes)
	before := make([]cluster.WireStats, n)
	for i, nd := range bc.nodes {
		before[i] = nd.Replicator().Stats()
	}
	bc.net.ResetStats()
	start := time.Now()
	cpu0 := processCPU()
	served := make([]atomic.Int64, n)
	if drive != nil {
		drive(served)
	}
	time.Sleep(time.Until(start.Add(d)))
	p := phase{net: make([]memnet.NetStats, n), repl: make([]cluster.WireStats, n), renewals: make([]int, n),
		cpu: processCPU() - cpu0, wall: time.Since(start)}
	for i, nd := range bc.nodes {
		p.net[i] = bc.net.Stats(bc.names[i])
		p.repl[i] = subWire(nd.Replicator().Stats(), before[i])
		p.renewals[i] = int(served[i].Load())
	}
	return p
}

// driveRenewals returns a measurePhase drive that PUTs Java-client
// renewals for wireDrive at rate per second from workers goroutines:
// renewal k, due at start + k/rate, goes to urls[k%len(urls)] and counts
// as served by node nodeOf[k%len(urls)]. Failed requests are counted in
// failures, and requests sent more than 100ms behind schedule in late.
func driveRenewals(c *http.Client, workers int, rate float64, urls []string, nodeOf []int, failures, late *atomic.Int64) func(served []atomic.Int64) {
	total := int(rate * wireDrive.Seconds())
	return func(served []atomic.Int64) {
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1)) - 1
					if k >= total {
						return
					}
					at := start.Add(time.Duration(k) * wireDrive / time.Duration(total))
					if d := time.Until(at); d > 0 {
						time.Sleep(d)
					} else if d < -100*time.Millisecond {
						late.Add(1)
					}
					i := k % len(urls)
					code, _, err := send(c, http.MethodPut, urls[i], nil)
					if err != nil || code != http.StatusOK {
						failures.Add(1)
						continue
					}
					served[nodeOf[i]].Add(1)
				}
			}()
		}
		wg.Wait()
	}
}

// digestSize is the encoded size of a node's anti-entropy digest (its hash
// values take the full 9 msgpack bytes, as real 64-bit hashes almost
// always do).
func digestSize(b *testing.B, nd *node.Node, name string) uint64 {
	d := &wire.Digest{Node: name, Reply: true}
	nd.View().Snapshot().Apps(func(a *view.App) bool {
		d.Apps = append(d.Apps, wire.AppDigest{App: a.Name(), Hash: 0xF123456789ABCDEF, Count: uint32(len(a.Instances()))})
		return true
	})
	enc, err := wire.Encode(d)
	if err != nil {
		b.Fatal(err)
	}
	return uint64(len(enc))
}

// owners returns, for each instance, the index of its application's
// owner. Every node must agree.
func owners(b *testing.B, bc *benchCluster, insts []inst) []int {
	idx := make(map[string]int, len(bc.names))
	for i, name := range bc.names {
		idx[name] = i
	}
	of := make([]int, len(insts))
	for k, in := range insts {
		o := bc.nodes[0].Replicator().OwnerOf(in.App)
		for i, nd := range bc.nodes {
			if got := nd.Replicator().OwnerOf(in.App); got != o {
				b.Fatalf("%s: owner of %s is %q, but %q on n0", bc.names[i], in.App, got, o)
			}
		}
		j, ok := idx[o]
		if !ok {
			b.Fatalf("owner of %s is %q, not a node", in.App, o)
		}
		of[k] = j
	}
	return of
}

// benchWire measures the renewals of l on an n-node MemNetwork cluster:
// an idle phase, then a phase of the same length in which instance k
// renews on node k%n, its home (where it registered). With l.split
// it then runs the owner, null and second idle phases
// (BenchmarkRenewalPerNode). It reports the wire figures and returns
// the CPU figures.
func benchWire(b *testing.B, n int, l renewalLoad) renewalRow {
	row := renewalRow{nodes: n, instances: l.instances, apps: l.apps, rate: l.rate, load0: bench.LoadAvg()}
	bc := startCluster(b, n, true)
	insts := make([]inst, l.instances)
	per := l.instances / l.apps
	for k := range insts {
		insts[k] = makeInst("WIRE", k/per, 0, k)
	}
	// Instance k registers on, and later renews with, node k%n.
	if err := loadDirect(bc.nodes, insts); err != nil {
		b.Fatal(err)
	}
	bc.waitConverged(2 * time.Minute)
	time.Sleep(time.Second)

	homeURLs := make([]string, len(insts))
	home := make([]int, len(insts))
	for k, in := range insts {
		home[k] = k % n
		homeURLs[k] = bc.nodes[k%n].URL() + "/apps/" + in.App + "/" + in.ID + "?status=UP&lastDirtyTimestamp=" + lastDirty
	}
	owner := owners(b, bc, insts)
	// The renewals the home phase sends to a node that does not own the
	// instance's application: those are forwarded.
	sent := int(l.rate * wireDrive.Seconds())
	for k := 0; k < sent; k++ {
		if i := k % len(insts); owner[i] != home[i] {
			row.nonOwner++
		}
	}

	total := wireDrive + wireDrain
	idle := measurePhase(bc, total, nil)

	c := newClient(l.workers)
	defer c.CloseIdleConnections()
	var failures, late atomic.Int64
	b.ResetTimer()
	cw := watchCPU()
	stopProfile := startProfile(b) // of the load (home) phase only
	load := measurePhase(bc, total, driveRenewals(c, l.workers, l.rate, homeURLs, home, &failures, &late))
	stopProfile()
	row.late = late.Load()
	var ownerPhase, nullPhase, idle2 phase
	if l.split {
		ownerURLs := make([]string, len(insts))
		for k, in := range insts {
			ownerURLs[k] = bc.nodes[owner[k]].URL() + "/apps/" + in.App + "/" + in.ID + "?status=UP&lastDirtyTimestamp=" + lastDirty
		}
		late.Store(0)
		ownerPhase = measurePhase(bc, total, driveRenewals(c, l.workers, l.rate, ownerURLs, owner, &failures, &late))
		row.lateOwner = late.Load()

		null := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
		}))
		nullURLs := make([]string, len(insts))
		for k, in := range insts {
			nullURLs[k] = null.URL + "/eureka/apps/" + in.App + "/" + in.ID + "?status=UP&lastDirtyTimestamp=" + lastDirty
		}
		late.Store(0)
		nullPhase = measurePhase(bc, total, driveRenewals(c, l.workers, l.rate, nullURLs, make([]int, len(insts)), &failures, &late))
		row.lateNull = late.Load()
		c.CloseIdleConnections()
		null.Close()

		idle2 = measurePhase(bc, total, nil)
	}
	b.StopTimer()
	share, note := cw.report()
	if f := failures.Load(); f > 0 {
		b.Fatalf("%d renewals failed", f)
	}
	if moved := owners(b, bc, insts); !slices.Equal(moved, owner) {
		b.Errorf("ownership changed during the run")
	}

	iNet, iRepl, _ := idle.totals()
	lNet, lRepl, renewals := load.totals()
	dsz := digestSize(b, bc.nodes[0], bc.names[0])
	r := float64(renewals)
	if lRepl.RecordMessages != 0 || lRepl.SyncMessages != 0 {
		b.Logf("note: %d record and %d sync messages during the load phase", lRepl.RecordMessages, lRepl.SyncMessages)
	}
	w := wireCost(lNet, lRepl, iNet, iRepl, dsz)
	rw := w.per(r)

	// Per node: what the node sent per renewal it served.
	var maxNodeMsgs, maxNodeBytes, maxNodeWire float64
	var perNode strings.Builder
	for i := range bc.nodes {
		rn := float64(load.renewals[i])
		nw := wireCost(load.net[i], load.repl[i], idle.net[i], idle.repl[i], dsz).per(rn)
		maxNodeMsgs = max(maxNodeMsgs, nw.replMsgs)
		maxNodeBytes = max(maxNodeBytes, nw.replBytes)
		maxNodeWire = max(maxNodeWire, nw.wireBytes)
		fmt.Fprintf(&perNode, " %s %d/%d/%.1f/%.1f", bc.names[i], load.renewals[i], load.repl[i].RenewalMessages, nw.replBytes, nw.wireBytes)
	}
	secs := total.Seconds()

	row.renewals = renewals
	row.fwdKeys, row.renewalMsgs = lRepl.Renewals, lRepl.RenewalMessages
	row.idle, row.home, row.owner, row.null, row.idle2 = idle.used(), load.used(), ownerPhase.used(), nullPhase.used(), idle2.used()
	if l.split {
		_, oRepl, or := ownerPhase.totals()
		row.ownerRenewals, row.ownerFwdKeys = or, oRepl.Renewals
		_, _, row.nullRequests = nullPhase.totals()
	}
	row.share, row.load1 = share, bench.LoadAvg()

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(r, "renewals")
	b.ReportMetric(rw.replMsgs, "msgs/renewal")
	b.ReportMetric(float64(lRepl.Renewals)/r, "fwd-keys/renewal")
	b.ReportMetric(float64(row.nonOwner)/r, "non-owner/renewal")
	b.ReportMetric(rw.replBytes, "payload-B/renewal")
	b.ReportMetric(rw.wireBytes, "wire-B/renewal")
	b.ReportMetric(maxNodeMsgs, "node-max-msgs/renewal")
	b.ReportMetric(maxNodeWire, "node-max-wire-B/renewal")
	b.ReportMetric(float64(iNet.PacketsSent+w.idleGossipStreams)/secs/float64(n), "gossip-msgs/s/node")
	b.ReportMetric(float64(iNet.PacketBytes+w.idleGossipStreamBytes)/secs/float64(n), "gossip-B/s/node")
	b.ReportMetric(share, "cpu-share")
	// What a renewal costs in CPU, the whole cluster and the load generator
	// together: the load phase's process CPU minus the idle CPU for as
	// long (the same cluster, gossip, reports and anti-entropy, no
	// renewals), per renewal. Flat in the cluster size when a renewal is
	// served by one node and forwarded, coalesced, to one owner.
	cpuPerRenewal := row.perRenewal(row.home, renewals)
	b.ReportMetric(cpuPerRenewal, "cpu-µs/renewal")
	b.ReportMetric(row.idleRate(), "idle-cpu-ms/s")
	if l.split {
		b.ReportMetric(row.perRenewal(row.owner, row.ownerRenewals), "owner-cpu-µs/renewal")
		b.ReportMetric(row.perRenewal(row.null, row.nullRequests), "null-http-cpu-µs/request")
		b.ReportMetric(row.fwdPerForwarded(), "fwd-cpu-µs/forwarded")
	}
	b.Logf("nodes=%d, %d instances in %d apps, %d renewals over %v (+%v drain), %d sent >100ms behind schedule\n"+
		"  load phase: replicator %d msgs %d B (%d renewal msgs with %d keys, %d digests of %d B); memnet %d packets %d B, %d streams %d B\n"+
		"  idle phase: replicator %d msgs %d B (%d digests); memnet %d packets %d B, %d streams %d B\n"+
		"  memberlist's own traffic (idle phase): %d packets %d B + %d push/pull streams %d B = %.1f msgs/s/node, %.0f B/s/node\n"+
		"  anti-entropy digests: %.1f B compressed on the wire each (idle phase average)\n"+
		"  per renewal: %.4f msgs, %.1f B payload (msgpack), %.1f B on the wire (compressed, framed; load streams minus non-renewal streams)\n"+
		"  gross, everything the cluster sent in the load phase per renewal: %.4f msgs, %.1f B\n"+
		"  per node (renewals served/renewal msgs sent/payload B per renewal/wire B per renewal):%s\n"+
		"  CPU (this process: every node and the load generator): load phase %v in %v, idle %.1f ms/s, "+
		"(load − idle for as long) ÷ renewals = %.1f µs per renewal\n  %s",
		n, l.instances, l.apps, renewals, wireDrive, wireDrain, row.late,
		lRepl.Messages, lRepl.Bytes, lRepl.RenewalMessages, lRepl.Renewals, lRepl.DigestMessages, dsz,
		lNet.PacketsSent, lNet.PacketBytes, lNet.StreamsOpened, lNet.StreamBytes,
		iRepl.Messages, iRepl.Bytes, iRepl.DigestMessages, iNet.PacketsSent, iNet.PacketBytes, iNet.StreamsOpened, iNet.StreamBytes,
		iNet.PacketsSent, iNet.PacketBytes, w.idleGossipStreams, w.idleGossipStreamBytes,
		float64(iNet.PacketsSent+w.idleGossipStreams)/secs/float64(n), float64(iNet.PacketBytes+w.idleGossipStreamBytes)/secs/float64(n),
		w.digestWire, rw.replMsgs, rw.replBytes, rw.wireBytes,
		float64(lNet.PacketsSent+lNet.StreamsOpened)/r, float64(lNet.PacketBytes+lNet.StreamBytes)/r, perNode.String(),
		load.cpu.Round(time.Millisecond), load.wall.Round(time.Millisecond), row.idleRate(), cpuPerRenewal, note)
	if l.split {
		b.Logf("split: owner phase %d renewals (%d forwarded keys), %v CPU in %v, %.1f µs/renewal; "+
			"null server %d requests, %v CPU in %v, %.1f µs/request; second idle %v CPU in %v; late %d/%d",
			row.ownerRenewals, row.ownerFwdKeys, ownerPhase.cpu.Round(time.Millisecond), ownerPhase.wall.Round(time.Millisecond),
			row.perRenewal(row.owner, row.ownerRenewals), row.nullRequests, nullPhase.cpu.Round(time.Millisecond),
			nullPhase.wall.Round(time.Millisecond), row.perRenewal(row.null, row.nullRequests),
			idle2.cpu.Round(time.Millisecond), idle2.wall.Round(time.Millisecond), row.lateOwner, row.lateNull)
	}
	return row
}

// renewalWire is the renewal traffic of a load phase, separated from the rest with
// the help of an idle phase of the same length.
type renewalWire struct {
	renewalMsgs  float64 // exact (Replicator.Stats)
	renewalBytes float64 // payload: replicator bytes minus digests
	wireRenewal  float64 // on the memnet wire, compressed and framed
	// memberlist's own streams (push/pull) in the idle phase: the streams
	// that are not replicator messages.
	idleGossipStreams, idleGossipStreamBytes uint64
	digestWire                               float64 // one digest on the wire
}

// wireCost separates the renewal traffic. Every replicator message is one
// memnet stream. The replicator's payload bytes of renewals are its load
// bytes minus its digests (whose encoded size dsz is known exactly). On the
// wire, the streams of a load phase that are not renewal messages (digests,
// memberlist's push/pull) are charged at the average size of the idle
// phase's streams, which are exactly those kinds.
func wireCost(lNet memnet.NetStats, lRepl cluster.WireStats, iNet memnet.NetStats, iRepl cluster.WireStats, dsz uint64) renewalWire {
	w := renewalWire{renewalMsgs: float64(lRepl.RenewalMessages)}
	w.renewalBytes = float64(lRepl.Bytes) - float64(lRepl.DigestMessages*dsz)
	if iNet.StreamsOpened >= iRepl.Messages {
		w.idleGossipStreams = iNet.StreamsOpened - iRepl.Messages
	}
	avgIdle := 0.0
	if iNet.StreamsOpened > 0 {
		avgIdle = float64(iNet.StreamBytes) / float64(iNet.StreamsOpened)
		if iRepl.Messages > 0 {
			// Push/pull streams are rare; attribute their share by count.
			w.idleGossipStreamBytes = uint64(avgIdle * float64(w.idleGossipStreams))
		}
	}
	w.digestWire = avgIdle
	other := float64(lNet.StreamsOpened) - float64(lRepl.RenewalMessages)
	w.wireRenewal = float64(lNet.StreamBytes) - max(other, 0)*avgIdle
	return w
}

// perRenewal is a renewalWire divided by a number of renewals.
type perRenewal struct{ replMsgs, replBytes, wireBytes float64 }

func (w renewalWire) per(r float64) perRenewal {
	if r == 0 {
		return perRenewal{}
	}
	return perRenewal{w.renewalMsgs / r, w.renewalBytes / r, w.wireRenewal / r}
}

// ---- 3. time for a new node to become ready ---------------------------------------

// readySizes are the registry sizes of BenchmarkReady: -ready-sizes
// 10000,100000,1000000 adds the goals' 1M (about 8 GB of memory for the
// four nodes, and a few minutes to load).
var readySizes = flag.String("ready-sizes", "10000,100000", "comma-separated registry sizes of BenchmarkReady")

// readyPerApp is the instances per application of BenchmarkReady's
// registry (-ready-per-app 1000: the goals' 1,000 applications of 1,000 at 1M).
var readyPerApp = flag.Int("ready-per-app", 20, "instances per application in BenchmarkReady")

// BenchmarkReady loads a 3-node loopback cluster and measures how long a
// fourth node takes, from node.Start, to report ready and to hold every
// instance.
func BenchmarkReady(b *testing.B) {
	var sizes []int
	for _, f := range strings.Split(*readySizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 20 {
			b.Fatalf("-ready-sizes: bad size %q (at least 20)", f)
		}
		sizes = append(sizes, n)
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) { benchReady(b, size) })
	}
}

func benchReady(b *testing.B, size int) {
	bc := startCluster(b, 3, false)
	insts := make([]inst, size)
	for k := range insts {
		insts[k] = makeInst("READY", k / *readyPerApp, 0, k) // -ready-per-app instances per application
	}
	t := time.Now()
	lw := watchCPU()
	if err := loadDirect(bc.nodes[:1], insts); err != nil {
		b.Fatal(err)
	}
	loaded := time.Since(t)
	bc.waitConverged(5 * time.Minute)
	_, lnote := lw.report()
	fan := bc.nodes[0].Replicator().Stats()
	fanMsgs, fanBytes := fan.Sent()
	b.Logf("instances=%d: loaded on n0 in %v, converged on 3 nodes after %v (n0 sent %d msgs, %.0f B per instance and peer, %d records in transfers); %s",
		size, loaded, time.Since(t), fanMsgs, float64(fanBytes)/float64(2*size), fan.TransferRecords, lnote)
	if got := bc.nodes[0].View().Snapshot().Count(); got != size {
		b.Fatalf("cluster holds %d instances, want %d", got, size)
	}
	before := make([]cluster.WireStats, 3)
	for i, nd := range bc.nodes {
		before[i] = nd.Replicator().Stats()
	}

	b.ResetTimer()
	stopProfile := startProfile(b)
	stopTrace := startTrace(b)
	defer stopTrace()
	cw := watchCPU()
	t0 := time.Now()
	nd, err := bc.add("n3")
	if err != nil {
		b.Fatal(err)
	}
	started := time.Since(t0)
	var ready, full, conv time.Duration
	countAtReady := -1
	var lastTrace time.Time
	for ready == 0 || full == 0 {
		el := time.Since(t0)
		if ready == 0 && nd.Ready() {
			ready = el
			countAtReady = nd.View().Snapshot().Count()
		}
		if full == 0 && nd.View().Snapshot().Count() == size {
			full = el
		}
		if el > 3*time.Minute {
			b.Fatalf("after %v: ready %v, %d of %d instances", el, nd.Ready(), nd.View().Snapshot().Count(), size)
		}
		if traceOn && time.Since(lastTrace) > 100*time.Millisecond {
			lastTrace = time.Now()
			var line strings.Builder
			for i, x := range bc.nodes {
				ws := x.Replicator().Stats()
				fmt.Fprintf(&line, " %s[%d sent=%dmsg/%dkB d=%d s=%d]", bc.names[i], x.View().Snapshot().Count(), ws.Messages, ws.Bytes>>10,
					ws.DigestMessages, ws.SyncMessages)
			}
			fmt.Fprintf(os.Stderr, "%7.0fms ready=%v:%s\n", ms(el), nd.Ready(), line.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	bc.waitConverged(2 * time.Minute)
	conv = time.Since(t0)
	b.StopTimer()
	stopProfile()
	stopTrace()
	share, note := cw.report()
	var sent cluster.WireStats
	for i := 0; i < 3; i++ {
		sent = addWire(sent, subWire(bc.nodes[i].Replicator().Stats(), before[i]))
	}
	own := nd.Replicator().Stats()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(ready), "ready-ms")
	b.ReportMetric(float64(countAtReady), "instances-at-ready")
	b.ReportMetric(ms(full), "full-count-ms")
	b.ReportMetric(ms(conv), "converged-ms")
	sentMsgs, sentBytes := sent.Sent()
	ownMsgs, ownBytes := own.Sent()
	b.ReportMetric(float64(sentBytes)/float64(size), "peer-B/instance")
	// How many copies of the registry the peers' transfers sent (one is
	// needed).
	b.ReportMetric(float64(sent.TransferRecords)/float64(size), "copies-sent")
	b.ReportMetric(share, "cpu-share")
	b.Logf("instances=%d: node.Start returned after %v; ready after %v holding %d; all %d after %v; converged after %v\n"+
		"  peers sent %d msgs, %d B (%.0f B/instance): %d records in transfers, %d record msgs, %d digests; new node sent %d msgs %d B: %d sync requests, %d digests\n  %s",
		size, started, ready, countAtReady, size, full, conv, sentMsgs, sentBytes,
		float64(sentBytes)/float64(size), sent.TransferRecords, sent.RecordMessages, sent.DigestMessages, ownMsgs, ownBytes,
		own.SyncMessages, own.DigestMessages, note)
	if countAtReady != size {
		b.Errorf("node reported ready holding %d of %d instances", countAtReady, size)
	}
}

// ---- 4. convergence after a partition heals -----------------------------------------

const (
	healRegisters = 500 // per side during the partition
	healCancels   = 200 // per side during the partition
)

// BenchmarkHealConvergence partitions a loaded 5-node MemNetwork cluster
// 2|3, writes on both sides, heals and measures the time until every node
// holds the same registry (same apps hashcode, same instance versions). It
// does so healRounds times on the same cluster and reports the median and
// the worst round: one heal is too noisy a sample on a shared machine.
func BenchmarkHealConvergence(b *testing.B) {
	for _, size := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) { benchHeal(b, size) })
	}
}

func benchHeal(b *testing.B, size int) {
	bc := startCluster(b, 5, true)
	insts := make([]inst, size)
	for k := range insts {
		insts[k] = makeInst("HEAL", k/20, 0, k)
	}
	if err := loadDirect(bc.nodes, insts); err != nil {
		b.Fatal(err)
	}
	bc.waitConverged(2 * time.Minute)
	b.ResetTimer()
	var rs []healRound
	for round := 0; round < healRounds; round++ {
		r := healOnce(b, bc, insts, round)
		msgs, bytes := r.sent.Sent()
		b.Logf("round %d: partition detected after %v; heal: members merged after %v, registries converged after %v on %d instances\n"+
			"  during the heal the nodes sent %d msgs, %.1f MB (%d records in transfers): %d digests, %d sync requests\n  %s",
			round, r.detect, r.merged, r.conv, r.count, msgs, float64(bytes)/1e6, r.sent.TransferRecords,
			r.sent.DigestMessages, r.sent.SyncMessages, r.note)
		rs = append(rs, r)
	}
	b.StopTimer()
	med := func(f func(healRound) float64) (median, worst float64) {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2], v[len(v)-1]
	}
	convMed, convMax := med(func(r healRound) float64 { return ms(r.conv) })
	mergedMed, _ := med(func(r healRound) float64 { return ms(r.merged) })
	detectMed, _ := med(func(r healRound) float64 { return ms(r.detect) })
	mbMed, _ := med(func(r healRound) float64 { _, bytes := r.sent.Sent(); return float64(bytes) / 1e6 })
	syncMed, _ := med(func(r healRound) float64 { return float64(r.sent.SyncMessages) })
	shareMed, _ := med(func(r healRound) float64 { return r.share })
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(len(rs)), "rounds")
	b.ReportMetric(convMed, "converge-median-ms")
	b.ReportMetric(convMax, "converge-max-ms")
	b.ReportMetric(mergedMed, "members-merged-median-ms")
	b.ReportMetric(detectMed, "partition-detect-median-ms")
	b.ReportMetric(mbMed, "heal-MB-sent-median")
	b.ReportMetric(syncMed, "heal-sync-requests-median")
	recsMed, _ := med(func(r healRound) float64 { return float64(r.sent.TransferRecords) })
	// Each side changed healRegisters+healCancels records, which the
	// nodes of the other side lack: 3 deliveries for each change on the
	// left, 2 for each on the right. Anything beyond is redundant.
	needed := float64((healRegisters + healCancels) * (3 + 2))
	b.ReportMetric(recsMed, "heal-records-moved-median")
	b.ReportMetric(needed, "heal-records-needed")
	b.ReportMetric(recsMed/needed, "records-moved/needed")
	b.ReportMetric(shareMed, "cpu-share")
}

const healRounds = 3

// healRound is what one partition and heal measured.
type healRound struct {
	detect, merged, conv time.Duration
	count                int
	sent                 cluster.WireStats
	share                float64
	note                 string
}

// healOnce partitions the cluster 2|3, waits until each side declares the
// other failed, writes on both sides (round selects fresh instances and
// cancels), heals and waits until every node holds the same registry.
func healOnce(b *testing.B, bc *benchCluster, insts []inst, round int) healRound {
	size := len(insts)
	apps := size / 20
	var r healRound
	left, right := bc.nodes[:2], bc.nodes[2:]
	bc.net.Partition(bc.names[:2], bc.names[2:])
	r.detect = waitFor(b, "each side to declare the other failed", 2*time.Minute, 10*time.Millisecond, func() bool {
		for _, nd := range left {
			if len(nd.Members().LiveMembers()) != len(left) {
				return false
			}
		}
		for _, nd := range right {
			if len(nd.Members().LiveMembers()) != len(right) {
				return false
			}
		}
		return true
	})

	// Writes on both sides: new instances (addresses disjoint per side and
	// round) in existing applications, and cancels of disjoint loaded
	// instances.
	write := func(side []*node.Node, net, cancelFrom int) {
		var fresh []inst
		for k := 0; k < healRegisters; k++ {
			fresh = append(fresh, makeInst("HEAL", (k*7)%apps, net, k))
		}
		if err := loadDirect(side, fresh); err != nil {
			b.Fatal(err)
		}
		for k := 0; k < healCancels; k++ {
			in := insts[cancelFrom+k*(size/(2*healCancels))]
			ok, err := side[k%len(side)].Registry().Cancel(context.Background(), in.App, in.ID, false)
			if err != nil || !ok {
				b.Fatalf("cancel %s: %v %v", in.ID, ok, err)
			}
		}
	}
	write(left, 1+2*round, 2*round)
	write(right, 2+2*round, 2*round+1)
	bc.waitConverged(time.Minute, left...)
	bc.waitConverged(time.Minute, right...)
	want := size + (round+1)*(2*healRegisters-2*healCancels)

	before := make([]cluster.WireStats, len(bc.nodes))
	for i, nd := range bc.nodes {
		before[i] = nd.Replicator().Stats()
	}
	stopProfile := func() {}
	stopTrace := func() {}
	if round == 0 {
		stopProfile = startProfile(b)
		stopTrace = startTrace(b)
	}
	defer stopTrace()
	cw := watchCPU()
	t0 := time.Now()
	bc.net.Heal()
	var lastTrace time.Time
	dumped := false
	for r.conv == 0 {
		el := time.Since(t0)
		if r.merged == 0 {
			all := true
			for _, nd := range bc.nodes {
				if len(nd.Members().LiveMembers()) != 5 {
					all = false
				}
			}
			if all {
				r.merged = el
			}
		}
		if converged(bc.nodes) {
			r.conv = el
		}
		if el > 2*time.Minute {
			b.Fatalf("no convergence %v after the heal", el)
		}
		if el > 5*time.Second && !dumped {
			dumped = true
			dumpGoroutines(b, fmt.Sprintf("heal%d", round))
			stopTrace()
		}
		if traceOn && time.Since(lastTrace) > 500*time.Millisecond {
			lastTrace = time.Now()
			var line strings.Builder
			for i, nd := range bc.nodes {
				st := stateOf(nd)
				ws := nd.Replicator().Stats()
				fmt.Fprintf(&line, " %s[%d live=%d %x digests=%d syncs=%d]", bc.names[i], st.count, len(nd.Members().LiveMembers()),
					st.versions&0xffff, ws.DigestMessages, ws.SyncMessages)
			}
			fmt.Fprintf(os.Stderr, "%7.0fms:%s\n", ms(el), line.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopProfile()
	r.share, r.note = cw.report()
	if r.merged == 0 {
		r.merged = r.conv
	}
	for i, nd := range bc.nodes {
		r.sent = addWire(r.sent, subWire(nd.Replicator().Stats(), before[i]))
	}
	r.count = bc.nodes[0].View().Snapshot().Count()
	if r.count != want {
		b.Errorf("round %d converged on %d instances, want %d", round, r.count, want)
	}
	// The next round starts from a whole cluster.
	bc.waitMembers(5, time.Minute)
	return r
}
