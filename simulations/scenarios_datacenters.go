package simulations

// The datacenters scenarios: Heureka clusters, each its own gossip cluster
// in its own region, federated through Eureka's remote-regions API as
// docs/federation.md describes (the other regions are followed through
// their configured URLs), with clients registering, renewing and
// cancelling in each region, and the WAN between them cut for longer than
// the remote drop time and the tombstone TTL, then healed. datacenters
// runs two regions following each other; datacenters-ring three, each
// following the next (dc1 → dc2 → dc3 → dc1), where an echo would travel
// the ring.
//
// In each region, the nodes the cluster chooses (federation Config.Links,
// two of three) hold the WAN link to each remote region; the third follows
// one of them over its region's network (a relay), or the WAN while no
// relay answers.
//
// The datacenters are clusters of their own, started by the scenario on
// memnet networks of their own; the harness's cluster stays idle. Each
// region's remote-region URL is a wanLink (wanproxy.go): a TCP proxy in
// front of the other region's nodes, which the scenario cuts and heals.
// An observer reads GET /eureka/apps?regions=<the others> from every node
// every sample interval, with the node's region states (in process), and
// the checkers in invariant_region*.go judge those reads
// (DCObservations). A dcRun owns one run of any datacenters scenario (those
// of scenarios_datacenters_faults.go too): its steps (the set-up, the
// steady clients, the churn, the observer, a cut's heal, the teardown)
// are what every scenario's timeline is made of.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/internal/simclient"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/node"
)

// dcNodes is the number of nodes in each datacenter.
const dcNodes = 3

// DCObservations are what the datacenters scenario saw.
type DCObservations struct {
	// Regions are the region names; Nodes each region's node names.
	Regions []string
	Nodes   map[string][]string
	// Follows lists, per region, the remote regions its nodes follow; nil:
	// every other region.
	Follows map[string][]string
	// Instances are the clients' instances by id (ids are unique across
	// regions).
	Instances map[string]*DCInstance
	// Reads are the observer's reads, in time order.
	Reads []DCRead
	// Cuts are the windows during which every WAN link was cut.
	Cuts []Span
	// Restarts are the nodes restarted as fresh processes, in time order.
	Restarts []DCRestart
	// Teardown is when the clients started to cancel at the end.
	Teardown time.Time
	// WAN are the nodes' requests over the WAN links (pulls and change
	// streams; relays are local), in the order they started (dc_wan.go).
	WAN []DCWANUse
	// Links is how many nodes of a region hold each remote's WAN link
	// (federation Config.Links).
	Links int
}

// DCInstance is one client's instance: its region and what became of it.
type DCInstance struct {
	Region, App, ID string
	// Acked is when its first registration succeeded (zero: never).
	Acked time.Time
	// Ended is when the client stopped; Cancelled that a node accepted
	// its cancel.
	Ended     time.Time
	Cancelled bool
}

// DCRestart is one restart of a node: its process stopped at Stopped and
// a fresh one (empty registry, its federation loading) was ready at Ready.
type DCRestart struct {
	Region, Node   string
	Stopped, Ready time.Time
}

// DCRead is one read of GET /eureka/apps?regions=<the other regions> from
// one node, with the node's region states read just before.
type DCRead struct {
	At time.Time
	// Round numbers the observer's rounds (every node once per round).
	Round        int
	Region, Node string
	// Code is the answer's status (0: no answer).
	Code int
	// Instances maps every instance id served to its heureka.region
	// marker: "" for a local instance.
	Instances map[string]string
	// Dups are the ids served more than once.
	Dups []string
	// States are the node's remote regions' states, and LastOK their
	// last successful pulls (or stream activity), read just before At.
	States map[string]federation.State
	LastOK map[string]time.Time
}

// regionTimers returns t's federation timers, defaults for zero ones.
func regionTimers(t Timers) (pull, stale, drop time.Duration) {
	d := DefaultTimers()
	pull, stale, drop = t.RegionPullInterval, t.RegionStaleAfter, t.RegionDropAfter
	if pull <= 0 {
		pull = d.RegionPullInterval
	}
	if stale <= 0 {
		stale = d.RegionStaleAfter
	}
	if drop <= 0 {
		drop = d.RegionDropAfter
	}
	return pull, stale, drop
}

// datacenterFederation is the federation of a node of region following
// remotes, with t's region timers and the others in their production
// ratios to the stale time (documented on Timers), and transparent
// fallback on (Eureka's default, which an echo needs).
func datacenterFederation(t Timers, region string, remotes []federation.Remote, stream bool) federation.Config {
	pull, stale, drop := regionTimers(t)
	fc := federation.DefaultConfig()
	fc.Region = region
	fc.Remotes = remotes
	fc.PullInterval = pull
	fc.StaleAfter = stale
	fc.DropAfter = drop
	fc.RequestTimeout = stale / 6
	fc.DeltaRetention = 3 * stale
	fc.StreamIdleTimeout = stale * 3 / 4
	fc.Stream = stream
	fc.TransparentFallback = true
	return fc
}

// regionKeepAlive is the remotes' stream keep-alive: 15 s against the
// default 1 m stale time.
func regionKeepAlive(t Timers) time.Duration {
	_, stale, _ := regionTimers(t)
	return stale / 4
}

// datacenter is one region's cluster.
type datacenter struct {
	region string
	net    *memnet.Network
	names  []string
	nodes  map[string]*node.Node
}

// dcWorld is the scenario's datacenters, WAN links, clients and
// observations.
type dcWorld struct {
	s     *Sim
	dcs   []*datacenter
	links []*wanLink // in front of each region (dcs' order)
	// remotes are, per region, the remote regions its nodes follow,
	// each through the WAN link in front of it; a restarted node follows
	// the same.
	remotes map[string][]federation.Remote
	// linkRegion maps each WAN link's host:port to the region behind it
	// (dc_wan.go).
	linkRegion map[string]string

	mu      sync.Mutex
	obs     DCObservations
	clients []*dcClient
	seq     map[string]int
	round   int
}

// dcClient is a client of one region.
type dcClient struct {
	region, app, id string
	cl              simclient.Client
}

// startDatacenters starts n regions (dc1, dc2, …) of k nodes each, every
// node following every other region (ring: the next one only) through that
// region's WAN link, and waits until each region formed and every node
// loaded every remote it follows.
func startDatacenters(s *Sim, n, k int, ring bool) (*dcWorld, error) {
	w := &dcWorld{s: s, seq: map[string]int{}, remotes: map[string][]federation.Remote{}, linkRegion: map[string]string{}}
	w.obs.Links = federation.DefaultConfig().Links
	w.obs.Nodes = map[string][]string{}
	w.obs.Follows = map[string][]string{}
	w.obs.Instances = map[string]*DCInstance{}
	inbound := map[string]*wanLink{} // region → the link in front of it
	for i := 0; i < n; i++ {
		dc := &datacenter{region: fmt.Sprintf("dc%d", i+1), net: memnet.New(s.cfg.Seed*7919 + int64(i)), nodes: map[string]*node.Node{}}
		for j := 0; j < k; j++ {
			dc.names = append(dc.names, fmt.Sprintf("%s-n%d", dc.region, j))
		}
		w.dcs = append(w.dcs, dc)
		w.obs.Regions = append(w.obs.Regions, dc.region)
		w.obs.Nodes[dc.region] = slices.Clone(dc.names)
		l, err := newWANLink()
		if err != nil {
			w.close()
			return nil, err
		}
		w.links = append(w.links, l)
		inbound[dc.region] = l
		w.linkRegion[l.ln.Addr().String()] = dc.region
	}
	for di, dc := range w.dcs {
		for oi, o := range w.dcs {
			if o != dc && (!ring || oi == (di+1)%n) {
				w.remotes[dc.region] = append(w.remotes[dc.region], federation.Remote{Name: o.region, URL: inbound[o.region].URL()})
				w.obs.Follows[dc.region] = append(w.obs.Follows[dc.region], o.region)
			}
		}
		for j, name := range dc.names {
			nd, err := node.Start(w.nodeConfig(di, j, "127.0.0.1:0", slices.Clone(dc.names[:j]), 0))
			if err != nil {
				w.close()
				return nil, fmt.Errorf("simulations: start %s: %w", name, err)
			}
			w.mu.Lock()
			dc.nodes[name] = nd
			w.mu.Unlock()
		}
		var addrs []string
		for _, name := range dc.names {
			addrs = append(addrs, dc.nodes[name].Addr())
		}
		inbound[dc.region].SetTargets(addrs)
	}
	limit := time.Now().Add(30 * time.Second)
	for !w.formed() {
		if time.Now().After(limit) {
			w.close()
			return nil, fmt.Errorf("simulations: datacenters did not form and federate within 30s")
		}
		if err := s.Sleep(20 * time.Millisecond); err != nil {
			w.close()
			return nil, err
		}
	}
	return w, nil
}

// nodeConfig is the configuration of node j of region di, listening on
// addr: a member of its region's gossip cluster (joining join) that
// follows the region's remotes, with the run's timers. incarnation counts
// the node's restarts, so that a fresh process draws other seeds.
func (w *dcWorld) nodeConfig(di, j int, addr string, join []string, incarnation int) node.Config {
	s, t := w.s, w.s.Timers()
	dc := w.dcs[di]
	name := dc.names[j]
	cfg := node.DefaultConfig(name)
	cfg.HTTPAddr = addr
	cfg.Logger = s.c.log
	seed := s.cfg.Seed*1000 + 500 + int64(di)*10 + int64(j) + 100*int64(incarnation)
	cfg.Registry.Seed = seed
	cc := cluster.DefaultLocalConfig()
	cc.Join = join
	cc.Transport = dc.net.NewTransport(name)
	cc.Resolver = dc.net.Resolve
	cfg.Cluster = &cc
	cfg.Replication = cluster.DefaultReplicatorConfig()
	cfg.Replication.Seed = seed
	t.ApplyTo(&cfg)
	// The first node of each region follows the change streams, the
	// others poll: both paths cross the WAN.
	fc := datacenterFederation(t, dc.region, w.remotes[dc.region], j == 0)
	// Gossip addresses are memnet names: the relays' HTTP addresses come
	// from the world (a restarted node keeps its address).
	fc.MemberURL = func(member string) string {
		w.mu.Lock()
		defer w.mu.Unlock()
		if nd := dc.nodes[member]; nd != nil {
			return "http://" + nd.Addr()
		}
		return ""
	}
	// What crosses the WAN is recorded (region-wan-links).
	fc.HTTPClient = &http.Client{Timeout: fc.RequestTimeout,
		Transport: &dcWANTracker{w: w, region: dc.region, node: name, base: http.DefaultTransport}}
	cfg.Federation = &fc
	pc := httpapi.DefaultPushConfig()
	pc.StreamKeepAlive = regionKeepAlive(t)
	cfg.Push = &pc
	return cfg
}

// formed reports whether every region's nodes are ready, see each other
// and have loaded every remote region.
func (w *dcWorld) formed() bool {
	for _, dc := range w.dcs {
		for _, name := range dc.names {
			nd := dc.nodes[name]
			if !nd.Ready() || !slices.Equal(liveNames(nd), dc.names) || nd.Federation() == nil || !nd.Federation().Ready() {
				return false
			}
		}
	}
	return true
}

// close stops the nodes it started (not the processes of restarted
// nodes: dcRun owns those), then the links and the networks.
func (w *dcWorld) close() {
	var nds []*node.Node
	for _, dc := range w.dcs {
		for _, nd := range dc.nodes {
			nds = append(nds, nd)
		}
	}
	stopNodes(nds)
	for _, l := range w.links {
		l.Close()
	}
	for _, dc := range w.dcs {
		dc.net.Shutdown()
	}
}

// stopNodes stops nds all at once, giving each 10 s.
func stopNodes(nds []*node.Node) {
	var wg sync.WaitGroup
	for _, nd := range nds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = nd.Stop(ctx)
		}()
	}
	wg.Wait()
}

// cutLinks cuts or heals links.
func cutLinks(links []*wanLink, down bool) {
	for _, l := range links {
		if down {
			l.Cut()
		} else {
			l.Heal()
		}
	}
}

// dc returns the datacenter of region.
func (w *dcWorld) dc(region string) *datacenter {
	for _, dc := range w.dcs {
		if dc.region == region {
			return dc
		}
	}
	return nil
}

// newClient starts a client of app in region, living next to the node
// loc (its other nodes follow in a seeded order).
func (w *dcWorld) newClient(region, app, loc string) *dcClient {
	s := w.s
	dc := w.dc(region)
	var others []string
	for _, n := range dc.names {
		if n != loc {
			others = append(others, n)
		}
	}
	w.mu.Lock()
	w.seq[region+app]++
	id := fmt.Sprintf("%s-%s-%03d", region, strings.ToLower(app), w.seq[region+app])
	in := &DCInstance{Region: region, App: app, ID: id}
	w.obs.Instances[id] = in
	c := &dcClient{region: region, app: app, id: id}
	w.clients = append(w.clients, c)
	w.mu.Unlock()
	t := s.Timers()
	dirty := time.Now().UnixMilli()
	st := &s.stats
	c.cl.Start(simclient.Config{
		App: app, ID: id, Order: append([]string{loc}, s.Shuffled(others)...), LastDirty: dirty,
		Body: simclient.RegisterBody(simclient.Instance{
			App: app, ID: id, HostName: id + ".sim", IP: "10.9.0.2", LastDirty: dirty,
			RenewSecs: max(1, int(t.RenewInterval/time.Second)), LeaseSecs: int(t.LeaseDuration / time.Second),
		}),
		Phase: s.Between(0, t.RenewInterval), RenewInterval: t.RenewInterval,
		Send: func(ctx context.Context, name, method, path, body string) (int, error) {
			nd := dc.nodes[name]
			if nd == nil {
				return 0, errUnreachable
			}
			return simclient.Send(ctx, s.http, 2*time.Second, method, nd.URL()+path, body)
		},
		Events: simclient.Events{
			Registered: func(_ string, _, at time.Time, again bool) {
				st.registrations.Add(1)
				if again {
					st.reRegistrations.Add(1)
				}
				w.mu.Lock()
				if in.Acked.IsZero() {
					in.Acked = at
				}
				w.mu.Unlock()
			},
			Renewed:     func(string, time.Time) { st.renewals.Add(1) },
			RenewFailed: func() { st.renewFailures.Add(1) },
			FailedOver:  func() { st.failovers.Add(1) },
			Ended: func(at time.Time, how simclient.Ending, _ string) {
				switch how {
				case simclient.Cancelled:
					st.cancels.Add(1)
				case simclient.CancelNotFound:
					st.cancelNotFound.Add(1)
				case simclient.CancelFailed:
					st.cancelFailures.Add(1)
				}
				w.mu.Lock()
				in.Ended, in.Cancelled = at, how == simclient.Cancelled
				w.mu.Unlock()
			},
		},
	})
	return c
}

// acked reports whether every client in cs has registered.
func (w *dcWorld) acked(cs []*dcClient) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range cs {
		if w.obs.Instances[c.id].Acked.IsZero() {
			return false
		}
	}
	return true
}

// read reads the region states of nd, node name of region, then its
// ?regions=<others> registry.
func (w *dcWorld) read(ctx context.Context, nd *node.Node, region, name string, others []string) DCRead {
	r := DCRead{Region: region, Node: name, States: map[string]federation.State{}, LastOK: map[string]time.Time{}}
	for _, st := range nd.Federation().Status() {
		r.States[st.Name] = st.State
		r.LastOK[st.Name] = st.LastSuccess
	}
	r.At = time.Now()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, nd.URL()+"/apps?regions="+strings.Join(others, ","), nil)
	if err != nil {
		return r
	}
	req.Header.Set("Accept", "application/json")
	res, err := w.s.http.Do(req)
	if err != nil {
		return r
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return r // no complete answer: Code 0
	}
	r.Code = res.StatusCode
	if r.Code != http.StatusOK {
		return r
	}
	r.Instances, r.Dups, err = decodeRegionRead(body)
	if err != nil {
		r.Code = 0
	}
	return r
}

// samples turns a read into the harness's samples (one per application),
// so that the report's registry chart shows the datacenters' nodes.
func (r DCRead) samples() []Sample {
	if r.Code != http.StatusOK {
		return nil
	}
	byApp := map[string]map[string]bool{}
	for id := range r.Instances {
		// ids are <region>-<app>-<n>
		parts := strings.Split(id, "-")
		if len(parts) < 3 {
			continue
		}
		app := strings.ToUpper(parts[1])
		if byApp[app] == nil {
			byApp[app] = map[string]bool{}
		}
		byApp[app][id] = true
	}
	out := make([]Sample, 0, len(byApp))
	for app, ids := range byApp {
		out = append(out, Sample{At: r.At, Node: r.Node, App: app, Incarnation: 1, Ready: true, IDs: ids})
	}
	return out
}

// decodeRegionRead decodes a JSON applications document into instance id
// → region marker, and the ids served twice.
func decodeRegionRead(body []byte) (map[string]string, []string, error) {
	var doc struct {
		Applications struct {
			Application []struct {
				Instance json.RawMessage `json:"instance"`
			} `json:"application"`
		} `json:"applications"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil, err
	}
	type inst struct {
		InstanceID string            `json:"instanceId"`
		Metadata   map[string]string `json:"metadata"`
	}
	out := map[string]string{}
	var dups []string
	for _, a := range doc.Applications.Application {
		var list []inst
		if len(a.Instance) > 0 && a.Instance[0] == '{' {
			var one inst
			if err := json.Unmarshal(a.Instance, &one); err != nil {
				return nil, nil, err
			}
			list = []inst{one}
		} else if len(a.Instance) > 0 {
			if err := json.Unmarshal(a.Instance, &list); err != nil {
				return nil, nil, err
			}
		}
		for _, in := range list {
			if _, ok := out[in.InstanceID]; ok {
				dups = append(dups, in.InstanceID)
			}
			out[in.InstanceID] = in.Metadata[federation.MarkerKey]
		}
	}
	return out, dups, nil
}

// converged reports whether, in the last complete round, every node's view
// of every remote region equals that region's own registry.
func (w *dcWorld) converged() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.round < 2 {
		return false
	}
	var last []DCRead
	for _, r := range w.obs.Reads {
		if r.Round == w.round-1 {
			last = append(last, r)
		}
	}
	ok, _ := roundConverged(&w.obs, last)
	return ok
}

// dcRun is one run of a datacenters scenario: the world, the current
// process of every node (a restart replaces it; the world keeps the one
// it started), the degrading proxies if any, the steady clients, the churn
// and the observer. Its methods are the steps the scenarios' timelines
// are made of, each written once.
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

// startDCRun starts n regions (ring: each following the next), with
// degrade a wanFault behind every WAN link (proxyLinks), and the observer;
// then puts how in the start event, registers the steady clients and
// starts the churn. The caller closes the run.
func startDCRun(s *Sim, n int, ring, degrade bool, how string) (*dcRun, error) {
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
		if err := r.proxyLinks(); err != nil {
			r.close()
			return nil, err
		}
	}
	r.obsCtx, r.stopObs = context.WithCancel(context.Background())
	r.observing = true
	r.obsWG.Add(1)
	go func() { defer r.obsWG.Done(); r.observe(r.obsCtx) }()
	r.churnCtx, r.stopChurn = context.WithCancel(s.ctx)
	s.Event("start", "%s", how)
	if err := r.registerSteady(); err != nil {
		r.close()
		return nil, err
	}
	r.startChurn()
	return r, nil
}

// node returns name's current process.
func (r *dcRun) node(name string) *node.Node {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	return r.live[name]
}

// observe reads every node's current process every sample interval until
// ctx ends.
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
				nd := r.node(name)
				wg.Add(1)
				go func() {
					defer wg.Done()
					rd := w.read(ctx, nd, dc.region, name, others)
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
	o.Restarts = slices.Clone(w.obs.Restarts)
	o.WAN = slices.Clone(w.obs.WAN)
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
	stopNodes(restarted)
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

// startChurn starts short-lived clients in random regions: one every
// ~400 ms, living 1–2.5 s, each cancelling.
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

// changesThenQuiet is the first part of a long fault: a second in, a
// cancel and a registration in every region (during names the fault in
// their events), which cannot cross until the fault ends; the churn
// stops one client life (and half a second) before end, and it returns at
// end, so that nothing changes after it and every remote view must come
// to equal its region's registry.
func (r *dcRun) changesThenQuiet(during string, end time.Time) error {
	s := r.s
	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	r.changes(during)
	return r.quietBy(end)
}

// quietBy stops the churn one client life (and half a second) before end
// and returns at end: nothing changes after it.
func (r *dcRun) quietBy(end time.Time) error {
	s := r.s
	if err := s.Sleep(time.Until(end.Add(-dcMaxLife - 500*time.Millisecond))); err != nil {
		return err
	}
	r.endChurn()
	return s.Sleep(time.Until(end))
}

// window records [from, to] in the observations' Cuts: the time the
// region invariants do not count as WAN up time, and after whose end the
// views must converge.
func (r *dcRun) window(from, to time.Time) {
	r.w.mu.Lock()
	r.w.obs.Cuts = append(r.w.obs.Cuts, Span{From: from, To: to})
	r.w.mu.Unlock()
}

// healed follows the heal of what, cut at cutAt: the cut's window ends
// now, the fault is lifted, and the remote views must converge (the
// checker holds them to its bound).
func (r *dcRun) healed(cutAt time.Time, what string) error {
	healAt := time.Now()
	r.window(cutAt, healAt)
	r.s.lifted()
	r.s.Event("wan-heal", "%s healed after %v", what, healAt.Sub(cutAt).Round(time.Millisecond))
	return r.waitConverged(healAt)
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

// teardown cancels every client and observes a propagation bound more, so
// that the cancels are judged too.
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

// wanCuts is what cutTwice cuts and how its events name it.
type wanCuts struct {
	links []*wanLink
	// what names the links in the events ("every WAN link"); long is the
	// long cut's event, given its length; during follows "the cut" and
	// "the short cut" in the changes' events.
	what   string
	long   func(cutLen time.Duration) string
	during string
}

// cutTwice is the timeline of datacenters, datacenters-ring and
// datacenters-one-link, on c's links. After a lead of 3–3.5 s they are cut
// for longer than the drop time and the tombstone TTL (changesThenQuiet),
// then healed, and the remote views must converge. Then a short cut, half
// the stale time, with a cancel and a registration in every region: no
// region may turn stale, the streams resume (on whichever node the proxy
// picks) and the polls go on with deltas; healed, the views must converge
// again. The WAN stays whole until the run's duration is up, then every
// client cancels (teardown).
func (r *dcRun) cutTwice(c wanCuts) error {
	s, t := r.s, r.t
	_, stale, drop := regionTimers(t)
	d := s.Duration()
	lead := 3*time.Second + s.Between(0, 500*time.Millisecond)
	cutLen := max(drop, t.TombstoneTTL) + 3*time.Second
	if err := s.Sleep(lead); err != nil {
		return err
	}
	cutAt := time.Now()
	cutLinks(c.links, true)
	s.fault()
	s.Event("wan-cut", "%s", c.long(cutLen))
	if err := r.changesThenQuiet("the cut"+c.during, cutAt.Add(cutLen)); err != nil {
		return err
	}
	cutLinks(c.links, false)
	if err := r.healed(cutAt, c.what); err != nil {
		return err
	}

	if err := s.Sleep(time.Second); err != nil {
		return err
	}
	shortAt := time.Now()
	cutLinks(c.links, true)
	s.fault()
	s.Event("wan-cut", "%s cut for %v (half the stale time)", c.what, stale/2)
	r.changes("the short cut" + c.during)
	if err := s.Sleep(time.Until(shortAt.Add(stale / 2))); err != nil {
		return err
	}
	cutLinks(c.links, false)
	if err := r.healed(shortAt, c.what); err != nil {
		return err
	}
	if err := s.Sleep(max(2*time.Second, time.Until(cutAt.Add(d-lead)))); err != nil {
		return err
	}
	return r.teardown()
}

// driveDatacenters: two regions following each other over a WAN that is
// cut for longer than the drop time and the tombstone TTL while both take
// registrations and cancels, then healed; then cut again for half the
// stale time (cutTwice).
func driveDatacenters(s *Sim) error { return runDatacenters(s, 2, false) }

// driveDatacentersRing is driveDatacenters with three regions in a ring.
func driveDatacentersRing(s *Sim) error { return runDatacenters(s, 3, true) }

// runDatacenters drives the datacenters scenarios with n regions, cutting
// every WAN link.
func runDatacenters(s *Sim, n int, ring bool) error {
	how := "each node follows every other region"
	if ring {
		how = "each region's nodes follow the next region, in a ring"
	}
	r, err := startDCRun(s, n, ring, false,
		fmt.Sprintf("%d regions of %d nodes federated (%s; the first node of each by stream, the others by polls)", n, dcNodes, how))
	if err != nil {
		return err
	}
	defer r.close()
	_, _, drop := regionTimers(r.t)
	return r.cutTwice(wanCuts{
		links: r.w.links,
		what:  "every WAN link",
		long: func(cutLen time.Duration) string {
			return fmt.Sprintf("every WAN link cut (for %v: longer than the drop time %v and the tombstone TTL %v)", cutLen, drop, r.t.TombstoneTTL)
		},
	})
}

// datacentersShortTimers shortens, for the short runs, the tombstone TTL
// (as long-partition does) and the drop time with it (both 10 minutes in
// production), and so the cut.
func datacentersShortTimers(t *Timers) {
	t.TombstoneTTL = 8 * time.Second
	t.RegionDropAfter = 8 * time.Second
}
