package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/httpapi"
)

// Snapshots gives the snapshot the page shows (view.View and
// httpapi.Snapshots implement it).
type Snapshots interface {
	// Snapshot is what cached Eureka reads serve.
	Snapshot() *view.Snapshot
}

// Registry gives the self-preservation reading (actors.Registry and
// httpapi.Registry implement it).
type Registry interface {
	// SelfPreservation is the current reading; never nil.
	SelfPreservation() *actors.SelfPreservationStatus
}

// Config configures the dashboard. View and Registry are required; the zero
// value of every other field is a working default.
type Config struct {
	// View gives the registry snapshot; use the one the Eureka API reads
	// (httpapi.Config.View), so that the page shows what clients fetch.
	// Required.
	View Snapshots
	// Registry gives the self-preservation reading. Required.
	Registry Registry
	// Cluster lists the members (httpapi.Config.Cluster); nil means a
	// single node, shown as the only member, alive and owning everything.
	Cluster httpapi.Cluster
	// EvictionHolds gives the cluster layer's holds on eviction
	// (httpapi.Config.EvictionHolds); the page lists them with
	// self-preservation's under "Eviction held". Nil: a single node.
	EvictionHolds httpapi.EvictionHoldSource
	// Ready reports whether the node has finished its initial cluster sync
	// (httpapi.Config.Ready); while it is false the page says that the
	// registry it shows may still be partial. Nil: always ready.
	Ready func() bool
	// ReadyReason, if set, says why the node is not ready or that it
	// serves alone (httpapi.Config.ReadyReason); the page shows it.
	ReadyReason func() string
	// NodeName and Version describe this node in the page's header.
	NodeName, Version string
	// Started is when the node started; the page shows the uptime since.
	// Default: when New is called.
	Started time.Time
	// Now is the clock that ages leases and the uptime. Default time.Now.
	Now func() time.Time
	// Regions gives the remote regions' report (httpapi.Config.Regions,
	// package federation); the page shows a "Remote regions" table. Nil:
	// no remote region, no table.
	Regions interface{ Report() any }
	// Refresh is how often the page polls the state endpoint. Default 3s;
	// must not be negative. While the page holds the API's change stream,
	// registry changes show at once whatever Refresh is, and the polls
	// bring the members, self-preservation and holds; without the stream
	// they bring registry changes too (every poll after a change carries
	// the whole registry: raise Refresh for huge registries).
	Refresh time.Duration
}

// DefaultRefresh is the page's polling interval when Config.Refresh is 0.
const DefaultRefresh = 3 * time.Second

// Handler serves the dashboard page, its assets and its state endpoint:
// GET /, GET /eureka/ (the page), GET /eureka (a redirect to /eureka/) and
// GET /dashboard/… (assets and state). A server that mounts it in its own
// mux registers the patterns "GET /{$}", "GET /eureka/{$}", "GET /eureka"
// and "GET /dashboard/" (httpapi.Config.Dashboard does); none of them
// overlaps the Eureka API.
type Handler struct {
	cfg Config
	mux *http.ServeMux
	// epoch distinguishes this handler's snapshot tokens from those of an
	// earlier process, whose snapshot versions started at 0 as well.
	epoch string
}

// New returns the dashboard handler. It panics when a required dependency is
// missing or Refresh is negative: both are programming errors of whoever
// assembles the node.
func New(cfg Config) *Handler {
	switch {
	case cfg.View == nil:
		panic("dashboard: Config.View is required")
	case cfg.Registry == nil:
		panic("dashboard: Config.Registry is required")
	case cfg.Refresh < 0:
		panic(fmt.Sprintf("dashboard: Config.Refresh %v must not be negative", cfg.Refresh))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Started.IsZero() {
		cfg.Started = cfg.Now()
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), epoch: strconv.FormatInt(cfg.Started.UnixNano(), 36)}
	h.mux.HandleFunc("GET /{$}", h.page)
	h.mux.HandleFunc("GET /eureka/{$}", h.page)
	h.mux.Handle("GET /eureka", http.RedirectHandler("/eureka/", http.StatusMovedPermanently))
	h.mux.HandleFunc("GET /dashboard/api/state", h.state)
	for _, a := range assets {
		h.mux.HandleFunc("GET /dashboard/"+a.name, a.serve)
	}
	return h
}

// ServeHTTP implements http.Handler. Any other path, including one under
// /dashboard/ that names nothing, gets 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// page serves the HTML page. Everything on it is filled in by the
// JavaScript from the state endpoint, so the page itself is static.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	pageAsset.serve(w, r)
}

//go:embed static
var static embed.FS

// asset is one embedded file, served with a content hash as its ETag so
// that a browser revalidates it cheaply (304) on every page load.
type asset struct {
	name, contentType string
	body              []byte
	etag              string
}

func loadAsset(name, contentType string) *asset {
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		panic(fmt.Sprintf("dashboard: embedded asset %s: %v", name, err)) // the build embeds it
	}
	sum := sha256.Sum256(b)
	return &asset{name: name, contentType: contentType, body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

var (
	pageAsset = loadAsset("index.html", "text/html; charset=utf-8")
	// assets are served under /dashboard/ by name.
	assets = []*asset{
		loadAsset("dashboard.css", "text/css; charset=utf-8"),
		loadAsset("dashboard.js", "text/javascript; charset=utf-8"),
	}
)

// contentSecurityPolicy allows the page nothing but its own origin: no
// inline script, no third-party content, no framing (the page has buttons
// that change the registry, so it must not be clickjacked).
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (a *asset) serve(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	hdr.Set("Referrer-Policy", "same-origin")
	// ServeContent answers If-None-Match with 304 and handles HEAD and
	// ranges; the zero modification time leaves Last-Modified out.
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}
