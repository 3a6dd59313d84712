package httpapi

// Routing of the hot paths
//
// Every Eureka client sends a renewal every 30 s and fetches the delta
// every 30 s, so these requests, and registrations and one-application
// reads, are most of what a registry serves, each with little work of its
// own. net/http's ServeMux costs them a pattern-tree walk and an allocated
// slice of path values per request, which measured a tenth of a renewal's
// server time (BENCHMARKS.md, "Per-request cost"). route splits the path of
// these few shapes by hand instead and hands the values to the handler as
// params; everything else, and anything unusual about a hot path, goes to
// the mux, which stays the single description of the API (routes in
// server.go): the fast table below must answer exactly as the mux would.
//
// The fast path takes a request only when
//   - its method is GET, PUT, POST or DELETE (HEAD and the rest: mux);
//   - its path was sent without escapes that change it (URL.RawPath ""),
//     so a "%2F" inside a name never splits a segment here;
//   - its path is clean: no empty, "." or ".." segment (the mux redirects
//     those), and a base path of BasePaths followed by /apps;
//   - the remaining segments name one of: apps, apps/ and apps/delta (GET),
//     apps/{app} (GET: one application, POST: register) and
//     apps/{app}/{id} (GET: instance, PUT: renew, DELETE: cancel).
// "delta" as {app} is the delta for GET, as the mux's more specific
// pattern says, and an application named DELTA for POST.

import (
	"net/http"
	"strings"

	"github.com/heureka/heureka/internal/sabotage"
)

// params are a request's {app} and {id} path values ("" when its route has
// none).
type params struct{ app, id string }

// pathParams reads params from the mux's path values.
func pathParams(r *http.Request) params {
	return params{app: r.PathValue("app"), id: r.PathValue("id")}
}

// paramHandler is a handler that takes its path values as arguments.
type paramHandler func(w http.ResponseWriter, r *http.Request, p params)

// endpoint is one API operation: its handler behind the path-value check,
// and its metrics. The mux and the fast path share it.
type endpoint struct {
	s       *Server
	metrics *routeMetrics
	h       paramHandler
}

// serve counts and times the request, checks its path values
// (checkParams) and runs the handler.
func (e *endpoint) serve(w http.ResponseWriter, r *http.Request, p params) {
	e.metrics.inFlight.Inc()
	defer e.metrics.inFlight.Dec()
	sw, start := e.metrics.begin(w)
	if err := checkParams(p); err != nil {
		e.s.fail(sw, r, err)
	} else {
		e.h(sw, r, p)
	}
	e.metrics.end(sw, start)
}

// ServeHTTP implements http.Handler for the mux.
func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) { e.serve(w, r, pathParams(r)) }

// fastRoutes are the endpoints of the hot paths (see the file comment);
// nil entries are not served by the fast path.
type fastRoutes struct {
	apps, delta, app, register, instance, renew, cancel *endpoint
}

// router serves the hot paths through fast and everything else through
// mux.
type router struct {
	fast fastRoutes
	mux  *http.ServeMux
}

// ServeHTTP implements http.Handler.
func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e, p := rt.match(r); e != nil {
		e.serve(w, r, p)
		return
	}
	rt.mux.ServeHTTP(w, r)
}

// match returns the fast path's endpoint for r and its path values, or nil
// when the mux must route r.
func (rt *router) match(r *http.Request) (*endpoint, params) {
	switch r.Method {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete:
	default:
		return nil, params{}
	}
	if r.URL.RawPath != "" {
		return nil, params{}
	}
	rest, ok := cutAppsPrefix(r.URL.Path)
	if !ok {
		return nil, params{}
	}
	f := &rt.fast
	if rest == "" || rest == "/" {
		return pick(r.Method == http.MethodGet, f.apps, params{})
	}
	// rest is "/…": one or two clean segments.
	app, id, two := strings.Cut(rest[1:], "/")
	if !cleanSegment(app) {
		return nil, params{}
	}
	if !two {
		switch r.Method {
		case http.MethodGet:
			if app == "delta" && !sabotage.On(sabotage.FastRouteDeltaAsApp) {
				return f.delta, params{}
			}
			return f.app, params{app: app}
		case http.MethodPost:
			return f.register, params{app: app}
		}
		return nil, params{}
	}
	if app == "delta" && id == "" {
		return pick(r.Method == http.MethodGet, f.delta, params{})
	}
	if !cleanSegment(id) || strings.IndexByte(id, '/') >= 0 {
		return nil, params{}
	}
	p := params{app: app, id: id}
	switch r.Method {
	case http.MethodGet:
		return f.instance, p
	case http.MethodPut:
		return f.renew, p
	case http.MethodDelete:
		return f.cancel, p
	}
	return nil, params{}
}

// pick returns e and p when ok, else no endpoint.
func pick(ok bool, e *endpoint, p params) (*endpoint, params) {
	if !ok {
		return nil, params{}
	}
	return e, p
}

// cutAppsPrefix strips a base path and "/apps" from path: "" or "/…" is
// left. The bases share no prefix that ends a segment ("/eureka" is
// followed by "/apps" or "/v2"), so the order of BasePaths does not matter.
func cutAppsPrefix(path string) (string, bool) {
	for _, base := range BasePaths {
		rest, ok := strings.CutPrefix(path, base)
		if !ok {
			continue
		}
		rest, ok = strings.CutPrefix(rest, "/apps")
		if ok && (rest == "" || rest[0] == '/') {
			return rest, true
		}
	}
	return "", false
}

// cleanSegment reports whether s is a path segment the mux matches as it
// is, without a redirect: not empty, ".", or "..".
func cleanSegment(s string) bool {
	return s != "" && s != "." && s != ".."
}
