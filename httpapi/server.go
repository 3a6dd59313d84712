package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/sabotage"
)

// Registry is what the HTTP API needs from the registry's write side
// (actors.Registry implements it).
type Registry = actors.API

// Snapshots gives the read snapshots (view.View implements it).
type Snapshots interface {
	// Snapshot is what cached reads serve.
	Snapshot() *view.Snapshot
	// Latest is the newest state, for live lookups.
	Latest() *view.Snapshot
}

// Member is one cluster member as the API reports it.
type Member struct {
	Name    string  `json:"name"`
	Address string  `json:"address"`
	State   string  `json:"state"` // alive, suspect, dead or left
	Owned   float64 `json:"owned"` // share of applications this member owns
	// URL is the member's Eureka API base URL, when known.
	URL string `json:"url,omitempty"`
	// SelfPreservation is the member's self-preservation decision and why,
	// as it last reported it (its actors.SelfPreservationStatus.Reason,
	// e.g. "engaged: 3 renewals … at or below the threshold of 8 …"); ""
	// when not known. The cluster layer fills it; the API fills it for this
	// node when the cluster layer has not (always for a single node).
	SelfPreservation string `json:"selfPreservation,omitempty"`
	// RenewalsLastWindow is the number of client renewals the member
	// counted itself in its last complete renewal window (its own share of
	// the cluster-wide figure); 0 when not known.
	RenewalsLastWindow int64 `json:"renewalsLastWindow,omitempty"`
}

// Cluster reports cluster membership; nil means a single node.
type Cluster interface {
	Members() []Member
}

// Config configures the HTTP API.
type Config struct {
	// Registry executes writes. Required.
	Registry Registry
	// View serves reads. Required.
	View Snapshots
	// Cluster lists members for /eureka/status and /cluster/members.
	Cluster Cluster
	// EvictionHolds gives the cluster layer's holds on eviction (the node
	// adapts cluster.Replicator); /admin/eviction, /admin/self-preservation,
	// /eureka/status and heureka_eviction_held show them beside
	// self-preservation's (eviction.go). Nil: a single node, held by
	// self-preservation only.
	EvictionHolds EvictionHoldSource
	// Ready reports whether the node has finished its initial cluster sync.
	// While it returns false, /readyz answers 503 and every registry read
	// answers 403 (see gate), so that clients fetch from another server;
	// writes are accepted, and a renewal of an instance not known yet
	// waits until the node is ready before it answers (404 only if the
	// sync did not bring it). Nil: always ready.
	Ready func() bool
	// ReadyReason, if set, says in plain words why the node is not ready
	// (syncing, its seeds refuse it and why, no seed reachable) or that it
	// serves alone; /readyz, /eureka/status and the dashboard show it.
	ReadyReason func() string
	// NodeName and Version describe this node in /eureka/status.
	NodeName, Version string
	// MaxBodyBytes limits request bodies (after gzip decoding). Default 1 MiB.
	MaxBodyBytes int64
	// Logger receives request errors. Default: discard.
	Logger *slog.Logger
	// Metrics registers the API's Prometheus metrics; nil uses a private
	// registry. /metrics serves it.
	Metrics *prometheus.Registry
	// Dashboard is the operator's web page (package httpapi/dashboard),
	// served at / and /eureka/ (where Spring users look for Eureka's),
	// /eureka redirecting there, with its assets and state under
	// /dashboard/; nil serves none of these paths.
	Dashboard http.Handler
	// Auth turns HTTP basic authentication on, with read and write roles
	// (auth.go); nil or no users: the API is open. New panics if it is
	// invalid: check it with AuthConfig.Validate first.
	Auth *AuthConfig
	// RateLimit limits registry fetches like Eureka's RateLimitingFilter
	// (ratelimit.go); nil: no limit. New panics if it is invalid: check it
	// with RateLimitConfig.Validate first.
	RateLimit *RateLimitConfig
	// Regions serves remote regions' instances on ?regions= reads, and on
	// every read with transparent fallback (regions.go; package
	// federation). Nil: no remote region; ?regions= is ignored.
	Regions Regions
	// Push configures blocking reads and the change stream (watch.go,
	// stream.go); nil: DefaultPushConfig. New panics if it is invalid:
	// check it with PushConfig.Validate first.
	Push *PushConfig
}

// Server is the Eureka REST API as an http.Handler. It holds no registry
// state: writes go to the Registry, reads come from the View's snapshot.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	router  *router // the fast path for the hot routes, then mux
	log     *slog.Logger
	started time.Time
	metrics *metrics
	auth    *authenticator // nil: auth off
	limiter *rateLimiter   // nil: no rate limit
	handler http.Handler   // router behind auth and the rate limiter
	push    *push          // blocking reads and the change stream
	// regionsFallback is Config.Regions.TransparentFallback(), read once.
	regionsFallback bool
}

// BasePaths are the prefixes the Eureka API is served under: Spring Cloud's
// /eureka/ and the Netflix WAR's /eureka/v2/.
var BasePaths = []string{"/eureka", "/eureka/v2"}

// New returns the API handler.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), log: cfg.Logger.With("component", "http"), started: time.Now()}
	s.router = &router{mux: s.mux}
	s.metrics = newMetrics(cfg.Metrics, cfg.Registry, cfg.View, cfg.EvictionHolds)
	s.push = newPush(cfg.Push, cfg.View, cfg.Metrics)
	s.regionsFallback = cfg.Regions != nil && cfg.Regions.TransparentFallback()
	s.routes()
	var err error
	if s.auth, err = newAuthenticator(cfg.Auth); err != nil {
		panic(err)
	}
	if s.limiter, err = newRateLimiter(cfg.RateLimit); err != nil {
		panic(err)
	}
	// Authentication first: a client without credentials gets 401 and
	// takes no fetch tokens.
	s.handler = s.protect(s.limit(s.router))
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) routes() {
	// The hot paths: served by the fast path of router.go and by the mux
	// alike, through the same endpoints.
	f := &s.router.fast
	f.apps = s.endpoint("apps", s.gate(plain(s.getApps)))
	f.delta = s.endpoint("delta", s.gate(plain(s.getDelta)))
	f.app = s.endpoint("app", s.gate(s.getApp))
	f.register = s.endpoint("register", s.register)
	f.instance = s.endpoint("instance", s.gate(s.getInstance))
	f.renew = s.endpoint("renew", s.renew)
	f.cancel = s.endpoint("cancel", s.cancel)
	for _, base := range BasePaths {
		// Registry reads are gated on readiness; writes are not.
		s.mux.Handle("GET "+base+"/apps", f.apps)
		s.mux.Handle("GET "+base+"/apps/{$}", f.apps)
		s.mux.Handle("GET "+base+"/apps/delta", f.delta)
		s.mux.Handle("GET "+base+"/apps/delta/{$}", f.delta)
		s.mux.Handle("GET "+base+"/apps/{app}", f.app)
		s.mux.Handle("POST "+base+"/apps/{app}", f.register)
		s.mux.Handle("GET "+base+"/apps/{app}/{id}", f.instance)
		s.mux.Handle("PUT "+base+"/apps/{app}/{id}", f.renew)
		s.mux.Handle("DELETE "+base+"/apps/{app}/{id}", f.cancel)
		s.handle("PUT "+base+"/apps/{app}/{id}/status", "statusoverride", s.setStatus)
		s.handle("DELETE "+base+"/apps/{app}/{id}/status", "statusoverride", s.deleteStatus)
		s.handle("PUT "+base+"/apps/{app}/{id}/metadata", "metadata", s.metadata)
		s.mux.Handle("GET "+base+"/instances/{id}", s.endpoint("instance", s.gate(plain(s.getInstanceByID))))
		s.mux.Handle("GET "+base+"/vips/{vip}", s.endpoint("vip", s.gate(plain(s.getVIP))))
		s.mux.Handle("GET "+base+"/svips/{svip}", s.endpoint("vip", s.gate(plain(s.getSVIP))))
		s.mux.Handle("GET "+base+"/stream", s.endpoint("stream", s.gate(plain(s.stream))))
		s.mux.Handle("POST "+base+"/stream", s.endpoint("stream", s.gate(plain(s.stream)))) // a repair (stream_repair.go)
		s.handle("POST "+base+"/peerreplication/batch", "batch", s.batch)
		s.handle("POST "+base+"/peerreplication/batch/{$}", "batch", s.batch)
		s.handle("PUT "+base+"/asg/{asg}/status", "asg", s.asgStatus)
		s.handle("GET "+base+"/status", "status", s.status)
		s.handle("GET "+base+"/serverinfo/statusoverrides", "statusoverrides", s.statusOverrides)
		// Jersey serves every resource with a trailing slash as well
		// (found by clients/reference): the same endpoints.
		s.mux.Handle("GET "+base+"/apps/{app}/{$}", f.app)
		s.mux.Handle("POST "+base+"/apps/{app}/{$}", f.register)
		s.mux.Handle("GET "+base+"/apps/{app}/{id}/{$}", f.instance)
		s.mux.Handle("PUT "+base+"/apps/{app}/{id}/{$}", f.renew)
		s.mux.Handle("DELETE "+base+"/apps/{app}/{id}/{$}", f.cancel)
		s.handle("PUT "+base+"/apps/{app}/{id}/status/{$}", "statusoverride", s.setStatus)
		s.handle("DELETE "+base+"/apps/{app}/{id}/status/{$}", "statusoverride", s.deleteStatus)
		s.handle("PUT "+base+"/apps/{app}/{id}/metadata/{$}", "metadata", s.metadata)
		s.mux.Handle("GET "+base+"/instances/{id}/{$}", s.endpoint("instance", s.gate(plain(s.getInstanceByID))))
		s.mux.Handle("GET "+base+"/vips/{vip}/{$}", s.endpoint("vip", s.gate(plain(s.getVIP))))
		s.mux.Handle("GET "+base+"/svips/{svip}/{$}", s.endpoint("vip", s.gate(plain(s.getSVIP))))
	}
	s.handle("GET /cluster/members", "members", s.members)
	s.handle("GET /healthz", "health", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") })
	s.handle("GET /readyz", "ready", s.readyz)
	// Operator endpoints. With Config.Auth, reading them needs the read role
	// and changing them the write role (a PUT here changes whether the
	// registry evicts anything).
	s.handle("GET /admin/self-preservation", "admin", s.getSelfPreservation)
	s.handle("PUT /admin/self-preservation", "admin", s.putSelfPreservation)
	s.handle("GET /admin/eviction", "admin", s.getEviction)
	s.handle("GET /admin/regions", "admin", s.getRegions)
	s.routeRegionsRelay()
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}))
	if s.cfg.Dashboard != nil {
		for _, p := range []string{"GET /{$}", "GET /eureka/{$}", "GET /eureka", "GET /dashboard/"} {
			s.handle(p, "dashboard", s.cfg.Dashboard.ServeHTTP)
		}
	}
}

// endpoint returns the endpoint of h, counted and timed under route (see
// routeMetrics; one route label per operation).
func (s *Server) endpoint(route string, h paramHandler) *endpoint {
	return &endpoint{s: s, metrics: s.metrics.route(route), h: h}
}

// handle registers h for pattern on the mux, counted and timed under route.
// The {app} and {id} path values are checked before h runs (see
// checkParams).
func (s *Server) handle(pattern, route string, h http.HandlerFunc) {
	s.mux.Handle(pattern, s.endpoint(route, plain(h)))
}

// plain adapts a handler that reads no params (or reads them from the
// request's path values) to a paramHandler.
func plain(h http.HandlerFunc) paramHandler {
	return func(w http.ResponseWriter, r *http.Request, _ params) { h(w, r) }
}

// errNotReady is the answer to a registry read while the node is not ready.
var errNotReady = &httpError{code: http.StatusForbidden,
	msg: "not ready: initial cluster sync in progress; fetch from another server"}

// gate answers 403 while the node is not ready (Config.Ready), as Netflix
// Eureka does during waitTimeInMsWhenSyncEmpty: a node that has not synced
// yet would serve an empty or partial registry, and the Java client and
// fargo treat a 403 on a fetch as "try the next server", whereas a 200 with
// a partial registry would be believed (and a 404 on an instance taken as
// "gone"). Netflix gates apps, delta, one app and the VIPs; Heureka gates
// the instance GETs as well, for the same reason.
func (s *Server) gate(h paramHandler) paramHandler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		if s.cfg.Ready != nil && !s.cfg.Ready() {
			s.fail(w, r, errNotReady)
			return
		}
		h(w, r, p)
	}
}

// readyPoll is how often a renewal waiting for the initial sync looks.
const readyPoll = 10 * time.Millisecond

// waitReady waits, if this node is not ready yet, until it is or the
// request ends, and reports whether it waited and the node is ready now.
// A renewal of an instance this node does not know yet must not answer
// 404 while the initial sync that brings it is running: the client would
// register again for nothing, with the node's restart as the only cause.
// The wait is bounded by the node's ready timeout (it reports ready when
// that runs out, synced or not) and by the client's own timeout.
func (s *Server) waitReady(r *http.Request) bool {
	if s.cfg.Ready == nil || s.cfg.Ready() || sabotage.On(sabotage.RenewNotFoundBeforeReady) {
		return false
	}
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return false
		case <-t.C:
			if s.cfg.Ready() {
				return true
			}
		}
	}
}

// checkParams rejects an {app} or {id} path value that no registry entry
// can have: one holding '/' (sent as %2F; net/http's mux matches it within
// one segment and unescapes it) or bytes that are not UTF-8 (sent as, e.g.,
// %FF). Such a name could be registered but never addressed by a client
// that builds paths from it, and Tomcat (Eureka's container) refuses
// encoded slashes with 400 too.
func checkParams(p params) error {
	for _, v := range [...]struct{ val, what string }{{p.app, "app name"}, {p.id, "instance id"}} {
		switch {
		case strings.IndexByte(v.val, '/') >= 0:
			return badRequest(fmt.Sprintf("%s %s must not contain '/' (sent as %%2F)", v.what, jsonString(v.val)))
		case !utf8.ValidString(v.val):
			return badRequest(fmt.Sprintf("%s %s is not valid UTF-8", v.what, jsonString(v.val)))
		}
	}
	return nil
}

// replicated reports whether a request comes from a Eureka peer.
func replicated(r *http.Request) bool {
	return headerValue(r.Header, "X-Netflix-Discovery-Replication") == "true"
}

// headerValue is h.Get(key) for a key already in canonical form, without
// canonicalizing it again (net/http stores canonical keys; Get of a
// lower-case key allocates its canonical form on every call).
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// appName is the upper-cased {app} path value: app names match
// case-insensitively.
func appName(r *http.Request) string { return strings.ToUpper(r.PathValue("app")) }

// appName is the upper-cased app name of p (see appName).
func (p params) appName() string { return strings.ToUpper(p.app) }

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Ready != nil && !s.cfg.Ready() {
		msg := "not ready: initial cluster sync in progress"
		if s.cfg.ReadyReason != nil {
			if why := s.cfg.ReadyReason(); why != "" {
				msg = why
			}
		}
		writeText(w, http.StatusServiceUnavailable, msg)
		return
	}
	writeText(w, http.StatusOK, "ready")
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}
