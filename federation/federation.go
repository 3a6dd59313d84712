package federation

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors/view"
)

// Federation pulls the remote regions and serves their instances beside
// the local registry's. Create it with New, start it with Start, stop it
// with Stop; every other method is safe for concurrent use.
type Federation struct {
	cfg     Config
	log     *slog.Logger
	client  *http.Client
	enc     [view.NumFormats]view.Encoder
	names   []string // the remote regions, sorted
	pullers []*puller

	// regions holds each region's served state, replaced whole by its
	// puller (publish).
	regions map[string]*atomic.Pointer[regionSnap]
	// gen increases with every published change of any region: merged
	// documents are cached per (local snapshot version, gen).
	gen atomic.Uint64
	// ready is set once every region has loaded once.
	ready atomic.Bool
	docs  docCache
	// deltaVersion counts merged delta builds: their versions__delta
	// (Eureka keeps a separate counter for region deltas too).
	deltaVersion atomic.Uint64
	// relaysClosed: CloseRelays was called (shutdown).
	relaysClosed atomic.Bool
	// relayAuth signs and checks relay requests (relayauth.go).
	relayAuth *relayAuth

	stopOnce sync.Once
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New validates cfg and returns a stopped Federation that encodes merged
// documents with enc (eureka.Encoders()).
func New(cfg Config, enc [view.NumFormats]view.Encoder) (*Federation, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if rs, ok := cfg.Members.(RelaySecrets); ok {
		if cfg.RelayKeys == nil {
			cfg.RelayKeys = rs.RelayKeys()
		}
		cfg.RelayNeedsAuth = cfg.RelayNeedsAuth || rs.RelayNeedsAuth()
	}
	f := &Federation{cfg: cfg, log: cfg.Logger.With("component", "federation"), enc: enc,
		regions: map[string]*atomic.Pointer[regionSnap]{}, client: cfg.HTTPClient,
		relayAuth: newRelayAuth(cfg.RelayKeys, cfg.Now)}
	if f.client == nil {
		f.client = &http.Client{Timeout: cfg.RequestTimeout}
	}
	m := newMetrics(cfg.Metrics)
	for _, r := range cfg.Remotes {
		st := newRegionState(r.Name, cfg.Region)
		if len(r.Apps) > 0 {
			st.apps = map[string]bool{}
			for _, a := range r.Apps {
				st.apps[strings.ToUpper(a)] = true
			}
		}
		p := &puller{f: f, remote: r, base: baseURL(r.URL), st: st, logged: st.state, metrics: m.region(r.Name),
			hub: newRelayHub(f), relayBad: map[string]time.Time{}, relayWhy: map[string]string{}}
		f.pullers = append(f.pullers, p)
		ptr := &atomic.Pointer[regionSnap]{}
		ptr.Store(st.snapshot())
		f.regions[r.Name] = ptr
		f.names = append(f.names, r.Name)
	}
	sortStrings(f.names)
	m.f = f
	f.ready.Store(len(cfg.Remotes) == 0)
	return f, nil
}

// Start starts one puller per region.
func (f *Federation) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	for _, p := range f.pullers {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			p.run(ctx)
		}()
	}
	f.log.Info("federation started", "region", f.cfg.Region, "remotes", f.names,
		"pullInterval", f.cfg.PullInterval, "staleAfter", f.cfg.StaleAfter, "dropAfter", f.cfg.DropAfter,
		"transparentFallback", f.cfg.TransparentFallback, "relaysSigned", len(f.relayAuth.keys) > 0)
	if f.cfg.Members != nil && f.relaysBlocked() {
		f.log.Warn("federation: relays off: HTTP basic auth is on and the cluster has no gossip key, "+
			"so the nodes cannot authenticate to each other's relay route; every node follows every remote region "+
			"over the WAN itself (set --gossip-key to share a secret)", "remotes", f.names)
	}
}

// Stop stops the pullers and waits for them; it is idempotent.
func (f *Federation) Stop() {
	f.stopOnce.Do(func() {
		if f.cancel != nil {
			f.cancel()
		}
		f.wg.Wait()
	})
}

// Region is this cluster's region name.
func (f *Federation) Region() string { return f.cfg.Region }

// Remotes lists the remote regions' names, sorted.
func (f *Federation) Remotes() []string { return append([]string(nil), f.names...) }

// Ready reports whether every remote region has loaded once: until then
// Eureka answers every ?regions= read 403 (whichever regions it names),
// and so does Heureka.
func (f *Federation) Ready() bool { return f.ready.Load() }

// TransparentFallback reports whether reads without ?regions= carry every
// remote region (Config.TransparentFallback).
func (f *Federation) TransparentFallback() bool { return f.cfg.TransparentFallback }

// publish installs a region's new served state.
func (f *Federation) publish(name string, s *regionSnap, changed bool) {
	f.regions[name].Store(s)
	if changed {
		f.gen.Add(1)
	}
	if !f.ready.Load() {
		for _, n := range f.names {
			if !f.regions[n].Load().loaded {
				return
			}
		}
		f.ready.Store(true)
		f.gen.Add(1)
	}
}

// snaps returns the served states of the named regions that are
// configured, in the order given; unknown names are skipped (Eureka
// ignores them too).
func (f *Federation) snaps(names []string) []*regionSnap {
	out := make([]*regionSnap, 0, len(names))
	for _, n := range names {
		if p := f.regions[n]; p != nil {
			out = append(out, p.Load())
		}
	}
	return out
}

// RegionStatus is one remote region as operators see it.
type RegionStatus struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	State State  `json:"state"`
	// Loaded: a pull has succeeded once.
	Loaded bool `json:"loaded"`
	// Instances served from the region now.
	Instances int `json:"instances"`
	// LastSuccess is the time of the last successful pull (zero: never).
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
	// LagSeconds is the time since LastSuccess, in seconds.
	LagSeconds float64 `json:"lagSeconds"`
	// LastChange is when the region's instances last changed.
	LastChange time.Time `json:"lastChange,omitzero"`
	// LastError is the last failed pull's error ("" after a success).
	LastError string `json:"lastError,omitempty"`
	// Via says how this node follows the region: "wan" (it holds one of
	// the region's WAN links, or runs alone), "relay" (from the member
	// Relay, over the local network) or "fallback" (over the WAN, no relay
	// being usable).
	Via Via `json:"via,omitempty"`
	// Relay is the member this node follows the region from (Via relay).
	Relay string `json:"relay,omitempty"`
	// ViaReason says why a node that is not a link follows the WAN
	// (Via fallback): the relay set aside and why, or that relays cannot
	// be authenticated (auth on, no gossip key).
	ViaReason string `json:"viaReason,omitempty"`
	// Links are the members chosen to hold the region's WAN link, best
	// first, as this node sees them (none without a cluster).
	Links []string `json:"links,omitempty"`
}

// Status returns every remote region's status, sorted by name.
func (f *Federation) Status() []RegionStatus {
	now := f.cfg.Now()
	out := make([]RegionStatus, 0, len(f.names))
	for _, p := range f.pullers {
		s := f.regions[p.remote.Name].Load()
		rs := RegionStatus{Name: s.name, URL: redacted(p.base), State: s.state, Loaded: s.loaded, Instances: s.total,
			LastSuccess: s.lastOK, LastChange: s.lastChange, LastError: s.lastErr, Via: s.via, Relay: s.relay, ViaReason: s.viaReason, Links: s.links}
		if !s.lastOK.IsZero() {
			rs.LagSeconds = now.Sub(s.lastOK).Seconds()
		}
		out = append(out, rs)
	}
	sortStatus(out)
	return out
}

// Report is the document of GET /admin/regions.
type Report struct {
	// Region is this cluster's region.
	Region string `json:"region"`
	// Ready: every remote region has loaded once.
	Ready bool `json:"ready"`
	// TransparentFallback: reads without ?regions= carry every region.
	TransparentFallback bool `json:"transparentFallback"`
	// Remotes are the remote regions, sorted by name.
	Remotes []RegionStatus `json:"remotes"`
}

// Report returns the document of GET /admin/regions (a Report).
func (f *Federation) Report() any {
	return Report{Region: f.cfg.Region, Ready: f.Ready(), TransparentFallback: f.cfg.TransparentFallback, Remotes: f.Status()}
}

// redacted is u without its password, for status and logs.
func redacted(u string) string {
	if pu, err := url.Parse(u); err == nil {
		return pu.Redacted()
	}
	return u
}
