package simulations

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

	"github.com/heureka/heureka/actors"
)

// Event is one entry of a scenario's timeline.
type Event struct {
	// At is the time since the scenario started.
	At time.Duration
	// Kind names the event: "partition", "heal", "loss", "delay", "crash",
	// "restart", "clients-crash", "clients-recover", "faults-end", …
	Kind string
	// Detail says which nodes or clients, and how.
	Detail string
}

// Life is one stretch during which a client ran for an instance id: from
// its first registration attempt until it stopped.
type Life struct {
	// Start is when the client sent its first registration.
	Start time.Time
	// Acked is when a registration first succeeded; zero if none did.
	Acked time.Time
	// AckedBy is the node that acknowledged that registration.
	AckedBy string
	// End is when the client stopped renewing; zero while it runs.
	End time.Time
	// Deregistered reports that the client cancelled successfully at End.
	Deregistered bool
	// CancelledBy is the node that answered the successful cancel.
	CancelledBy string
	// Renewed is, per node, when the client last registered or renewed
	// there successfully during this life.
	Renewed map[string]time.Time
	// Forwarded is, per node, when a renewal of this life was last
	// forwarded there: the owner of the application as the node the client
	// renewed on saw it at the time. The owner counts a forwarded renewal
	// as the client's own.
	Forwarded map[string]time.Time
	// Registrations are the successful registrations of this life, the
	// first one and those after a renewal answered 404: when the request
	// was sent and when it was acknowledged. The version a registration
	// makes is stamped in between.
	Registrations []Span
}

// Span is a stretch of time.
type Span struct{ From, To time.Time }

// InstanceLog is what the clients did under one instance id.
type InstanceLog struct {
	App, ID string
	// Location is the node the client lives next to (see Topology).
	Location string
	// Lives are the client's runs under this id, in order; a client that
	// restarts with the same id (as a restarted service does) adds one.
	Lives []Life
}

// lifeAt returns the life running at t, or nil.
func (l *InstanceLog) lifeAt(t time.Time) *Life {
	for i := range l.Lives {
		lf := &l.Lives[i]
		if !t.Before(lf.Start) && (lf.End.IsZero() || t.Before(lf.End)) {
			return lf
		}
	}
	return nil
}

// Sample is one read of one application from one node over HTTP.
type Sample struct {
	// At is when the request was sent.
	At time.Time
	// Node and App say what was read.
	Node, App string
	// Incarnation is which start of Node answered (1 for the first).
	Incarnation int
	// Ready reports whether Node had finished its initial sync.
	Ready bool
	// Topo is the reachability when the request was sent.
	Topo *Topology
	// IDs are the instance ids served; nil when the request failed.
	IDs map[string]bool
}

// Probe is one in-process reading of every running node.
type Probe struct {
	// At is when the probe started.
	At time.Time
	// Up lists the running nodes, sorted.
	Up []string
	// Topo is the reachability when the probe started.
	Topo *Topology
	// Ready, Fingerprint, Live (sorted live member names) and SP
	// (self-preservation) are per running node.
	Ready       map[string]bool
	Fingerprint map[string]string
	Live        map[string][]string
	SP          map[string]actors.SelfPreservationStatus
	// LiveSince is, per running node, the latest change of state of a
	// member it counts live (a join, a refuted death, a suspicion
	// cleared): a flap shorter than the probe interval leaves no trace
	// in Live but moves it (see wholeAfterHeal).
	LiveSince map[string]time.Time
	// Tombstones is, per running node, what its registry would send a peer
	// in tombstones (see TombstoneCensus); nil in the probes that took no
	// census (one a second).
	Tombstones map[string]TombstoneCensus
}

// TombstoneCensus counts the tombstones a node's registry still serves to
// peers (actors.Registry.Records) and finds the oldest by its deletion's
// HLC time.
type TombstoneCensus struct {
	Count int
	// Oldest is the age of the oldest at the probe, and OldestID its
	// "APP/id".
	Oldest   time.Duration
	OldestID string
}

// Observations are everything a scenario run saw, for the checkers.
type Observations struct {
	// Start is when the scenario started (after the cluster formed).
	Start time.Time
	// FaultsEnd is when the last fault was lifted; zero means the scenario
	// injected no network or node faults (the checkers then use QuietStart).
	FaultsEnd time.Time
	// QuietStart is when the churn and the faults stopped.
	QuietStart time.Time
	// QuietEnd is when the teardown (every client cancelling) began.
	QuietEnd time.Time
	// End is when sampling stopped.
	End time.Time
	// Nodes are the node names.
	Nodes []string
	// SampleInterval is the sampler's period (gaps longer than a few of
	// them mean the node was down).
	SampleInterval time.Duration
	// LeaseDuration is the clients' lease duration.
	LeaseDuration time.Duration
	// Timers are the cluster's timers (LeaseDuration and SampleInterval
	// repeat two of them for the older checkers).
	Timers Timers
	// SteadyAt is when the scenario's first clients had all registered (the
	// end of the warm-up); zero if it never waited for them.
	SteadyAt time.Time
	// Instances are the clients' logs by instance id.
	Instances map[string]*InstanceLog
	// Samples are the HTTP reads, in the order they were sent per node.
	Samples []Sample
	// Probes are the in-process readings, in time order.
	Probes []Probe
	// ClientsCrashed and ClientsRecovered mark a mass client failure and
	// the clients' return; CrashedIDs are the ids that went silent.
	ClientsCrashed, ClientsRecovered time.Time
	CrashedIDs                       []string
	// Timeline is the scenario's events.
	Timeline []Event
	// Crashes are the nodes' crashes, in time order.
	Crashes []NodeCrash
	// Datacenters are the observations of the datacenters scenario (its
	// own clusters, clients and ?regions= reads); nil in the others.
	Datacenters *DCObservations
}

// NodeCrash is one crash of a node: its process and everything only it
// held were lost at At.
type NodeCrash struct {
	Node string
	At   time.Time
}

// settled is when the checkers start to expect convergence: the end of the
// faults, or of the churn when there were no faults.
func (o *Observations) settled() time.Time {
	if !o.FaultsEnd.IsZero() {
		return o.FaultsEnd
	}
	return o.QuietStart
}

// sampler reads every application from every running node over HTTP
// every interval, one goroutine per node per round, until ctx ends.
func (s *Sim) sampler(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Timers.SampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		apps := s.appNames()
		topo := s.c.Topology()
		var wg sync.WaitGroup
		for _, name := range s.c.Up() {
			nd := s.c.Node(name)
			if nd == nil {
				continue
			}
			inc := s.c.Incarnation(name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := make([]Sample, 0, len(apps))
				for _, app := range apps {
					smp := Sample{At: time.Now(), Node: name, App: app, Incarnation: inc, Ready: nd.Ready(), Topo: topo}
					var code int
					smp.IDs, code = s.readApp(ctx, nd.URL(), app)
					if code == http.StatusForbidden {
						// Not ready (initial sync not finished): the node
						// refuses reads rather than serve a partial
						// registry. Not an empty registry.
						smp.Ready = false
					}
					out = append(out, smp)
				}
				s.rec.AddSamples(out)
			}()
		}
		wg.Wait()
		s.rec.RoundDone(start)
	}
}

// readApp returns the instance ids GET {base}/apps/{app} lists (empty on
// 404), or nil when the request fails or is refused (403 from a node that
// is not ready), and the status code (0 without an answer).
func (s *Sim) readApp(ctx context.Context, base, app string) (map[string]bool, int) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/apps/"+app, nil)
	if err != nil {
		return nil, 0
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return map[string]bool{}, resp.StatusCode
	case http.StatusOK:
	default:
		return nil, resp.StatusCode
	}
	var doc struct {
		Application struct {
			Instance []struct {
				InstanceID string `json:"instanceId"`
			} `json:"instance"`
		} `json:"application"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return nil, resp.StatusCode
	}
	ids := make(map[string]bool, len(doc.Application.Instance))
	for _, in := range doc.Application.Instance {
		ids[in.InstanceID] = true
	}
	return ids, resp.StatusCode
}

// prober reads every running node in process every interval, and puts
// changes of membership and self-preservation on the timeline.
func (s *Sim) prober(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Timers.ProbeInterval)
	defer tick.Stop()
	w := &transitions{live: map[string]string{}, sp: map[string]bool{}, counted: map[string]bool{},
		spEvents: slices.Contains(s.sc.Invariants, InvSelfPreservation)}
	every := max(1, int(time.Second/s.cfg.Timers.ProbeInterval))
	for n := 0; ; n++ {
		p := s.probe()
		if n%every == 0 {
			p.Tombstones = s.tombstoneCensus(ctx, p.Up)
		}
		s.rec.AddProbe(p)
		w.note(s.rec, &p)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probe reads every running node once.
func (s *Sim) probe() Probe {
	p := Probe{
		At:          time.Now(),
		Topo:        s.c.Topology(),
		Ready:       map[string]bool{},
		Fingerprint: map[string]string{},
		Live:        map[string][]string{},
		SP:          map[string]actors.SelfPreservationStatus{},
		LiveSince:   map[string]time.Time{},
	}
	for _, name := range s.c.Up() {
		nd := s.c.Node(name)
		if nd == nil {
			continue
		}
		p.Up = append(p.Up, name)
		p.Ready[name] = nd.Ready()
		if s.fingerprint != nil {
			p.Fingerprint[name] = s.fingerprint(nd)
		} else {
			p.Fingerprint[name] = Fingerprint(nd)
		}
		p.Live[name] = liveNames(nd)
		p.LiveSince[name] = liveSince(nd)
		if sp := nd.Registry().SelfPreservation(); sp != nil {
			p.SP[name] = *sp
		}
	}
	return p
}

// tombstoneCensus reads the tombstones every running node in up would send
// a peer, application by application.
func (s *Sim) tombstoneCensus(ctx context.Context, up []string) map[string]TombstoneCensus {
	out := map[string]TombstoneCensus{}
	apps := s.appNames()
	for _, name := range up {
		nd := s.c.Node(name)
		if nd == nil {
			continue
		}
		var c TombstoneCensus
		now := time.Now()
		ok := true
		for _, app := range apps {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			recs, err := nd.Registry().Records(cctx, app)
			cancel()
			if err != nil {
				ok = false
				break
			}
			for _, r := range recs {
				if !r.Deleted {
					continue
				}
				c.Count++
				if age := now.Sub(time.UnixMilli(actors.HLCMillis(r.Version.Clock))); age > c.Oldest {
					c.Oldest, c.OldestID = age, r.App+"/"+r.ID
				}
			}
		}
		if ok {
			out[name] = c
		}
	}
	return out
}

// HoldsAny reports whether some node of p lists one of the instances keys
// (APP/ID).
func (p *Probe) HoldsAny(keys []string) bool {
	for _, fp := range p.Fingerprint {
		for _, k := range keys {
			if strings.Contains(fp, "|"+k+"@") {
				return true
			}
		}
	}
	return false
}

// instanceKeys returns the instance keys (APP/ID) of cs, for HoldsAny.
func instanceKeys(cs []*Client) []string {
	keys := make([]string, len(cs))
	for i, cl := range cs {
		keys[i] = cl.App + "/" + cl.ID
	}
	return keys
}

// Converged reports whether every running node of p is ready and all hold
// the same registry. A nil probe has not converged.
func (p *Probe) Converged() bool {
	if p == nil || len(p.Up) == 0 {
		return false
	}
	ref := p.Fingerprint[p.Up[0]]
	for _, n := range p.Up {
		if !p.Ready[n] || p.Fingerprint[n] != ref {
			return false
		}
	}
	return true
}

// MembersComplete reports whether every running node of p sees exactly the
// running nodes as live. A nil probe is not complete.
func (p *Probe) MembersComplete() bool {
	if p == nil || len(p.Up) == 0 {
		return false
	}
	for _, n := range p.Up {
		if !slices.Equal(p.Live[n], p.Up) {
			return false
		}
	}
	return true
}

// transitions turns consecutive probes into timeline events: a node's view
// of the live members changed, or (in scenarios judged on
// self-preservation; elsewhere it is a figure) its self-preservation
// engaged or released. Self-preservation is reported only for nodes that
// expect renewals, once a renewal window has been counted (every node starts
// engaged, having counted nothing yet), and not during the teardown.
type transitions struct {
	live     map[string]string // node → live members as last reported
	sp       map[string]bool   // node → expiration enabled, as last reported
	counted  map[string]bool   // node → a renewal window has been counted
	spEvents bool
}

func (w *transitions) note(r *Recorder, p *Probe) {
	var tearingDown bool
	r.Mark(func(o *Observations) { tearingDown = !o.QuietEnd.IsZero() })
	if tearingDown {
		return
	}
	for _, n := range p.Up {
		live := strings.Join(p.Live[n], ",")
		if prev, ok := w.live[n]; ok && prev != live {
			r.Event("members", fmt.Sprintf("%s sees %d live: %s", n, len(p.Live[n]), live))
		}
		w.live[n] = live
		sp, ok := p.SP[n]
		if !ok || !sp.Enabled {
			continue
		}
		if sp.RenewsLastWindow > 0 {
			w.counted[n] = true
		}
		if !w.counted[n] || sp.Expected == 0 {
			continue
		}
		if prev, ok := w.sp[n]; ok && prev != sp.ExpirationEnabled && w.spEvents {
			if sp.ExpirationEnabled {
				r.Event("sp-release", fmt.Sprintf("%s: %d renewals in the last window > threshold %d (expected %d)", n, sp.RenewsLastWindow, sp.Threshold, sp.Expected))
			} else {
				r.Event("sp-engage", fmt.Sprintf("%s: %d renewals in the last window ≤ threshold %d (expected %d)", n, sp.RenewsLastWindow, sp.Threshold, sp.Expected))
			}
		}
		w.sp[n] = sp.ExpirationEnabled
	}
	for n := range w.live {
		if !slices.Contains(p.Up, n) {
			delete(w.live, n)
			delete(w.sp, n)
			delete(w.counted, n)
		}
	}
}
