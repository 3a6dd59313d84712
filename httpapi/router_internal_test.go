package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routeCase is a request the router tests send.
type routeCase struct{ method, target string }

// routeCases are requests around every shape the fast path takes: each
// base, every segment count, the delta, unclean and escaped paths, and
// every method.
func routeCases() []routeCase {
	rests := []string{"", "/", "/delta", "/delta/", "/delta/ID", "/APP", "/app", "/APP/", "/APP/ID", "/APP/ID/",
		"/APP/ID/status", "/APP/ID/metadata", "//APP", "/APP//ID", "/./APP", "/../APP", "/APP/.", "/APP/..",
		"/APP/./ID", "/A%2FB", "/APP/I%2FD", "/APP/%FF", "/%FF/ID", "/A%20B/ID", "/APP/ID?x=1", "/ä/ID"}
	prefixes := []string{"/eureka/apps", "/eureka/v2/apps", "/eureka/appsX", "/eureka/v3/apps", "/EUREKA/apps", "/eureka"}
	var out []routeCase
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, p := range prefixes {
			for _, r := range rests {
				out = append(out, routeCase{m, p + r})
			}
		}
	}
	return out
}

// routeMismatches serves every case through the fast path and through the
// mux alone and lists where they differ: a request the fast path takes must
// reach the endpoint the mux picks, with the path values the mux gives it
// (or the same answer when the values are refused before the handler).
func routeMismatches(t *testing.T) (mismatches []string, fastTaken int) {
	s := New(Config{})
	var (
		got params
		ran bool
	)
	record := func(w http.ResponseWriter, _ *http.Request, p params) { got, ran = p, true }
	f := &s.router.fast
	for _, e := range []*endpoint{f.apps, f.delta, f.app, f.register, f.instance, f.renew, f.cancel} {
		e.h = record
	}
	for _, c := range routeCases() {
		r := httptest.NewRequest(c.method, c.target, nil)
		e, p := s.router.match(r)
		if e == nil {
			continue // the mux serves it
		}
		fastTaken++
		h, pattern := s.mux.Handler(r)
		if h != e {
			mismatches = append(mismatches, fmt.Sprintf("%s %s: fast path and mux (%q) pick different handlers", c.method, c.target, pattern))
			continue
		}
		via := func(h http.Handler) (params, int, string) {
			got, ran = params{}, false
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return got, w.Code, w.Body.String()
		}
		fp, fcode, fbody := via(s.router)
		fastRan := ran
		mp, mcode, mbody := via(s.mux)
		if (fastRan && fp != p) || fp != mp || fcode != mcode || fbody != mbody {
			mismatches = append(mismatches, fmt.Sprintf("%s %s: fast path params %+v, %d %q; mux %+v, %d %q",
				c.method, c.target, fp, fcode, fbody, mp, mcode, mbody))
		}
	}
	return mismatches, fastTaken
}

// The fast path routes exactly as the mux would, for every request it
// takes, and it takes the hot shapes.
func TestRouterMatchesMux(t *testing.T) {
	mismatches, taken := routeMismatches(t)
	assert.Empty(t, mismatches)
	assert.Greater(t, taken, 20, "the fast path takes the hot shapes")
}

// The fast path takes exactly the requests of its table; the rest go to
// the mux.
func TestRouterFastShapes(t *testing.T) {
	s := New(Config{})
	f := &s.router.fast
	for _, c := range []struct {
		method, target string
		want           *endpoint
		p              params
	}{
		{"GET", "/eureka/apps", f.apps, params{}},
		{"GET", "/eureka/v2/apps/", f.apps, params{}},
		{"GET", "/eureka/apps/delta", f.delta, params{}},
		{"GET", "/eureka/apps/delta/", f.delta, params{}},
		{"POST", "/eureka/apps/delta", f.register, params{app: "delta"}},
		{"GET", "/eureka/apps/APP", f.app, params{app: "APP"}},
		{"POST", "/eureka/v2/apps/APP", f.register, params{app: "APP"}},
		{"GET", "/eureka/apps/APP/ID", f.instance, params{app: "APP", id: "ID"}},
		{"PUT", "/eureka/apps/APP/ID?status=UP", f.renew, params{app: "APP", id: "ID"}},
		{"DELETE", "/eureka/apps/APP/ID", f.cancel, params{app: "APP", id: "ID"}},
		{"HEAD", "/eureka/apps/APP", nil, params{}},
		{"PUT", "/eureka/apps/APP/ID/status", nil, params{}},
		{"PUT", "/eureka/apps/A%2FB/ID", nil, params{}},
		{"GET", "/eureka/apps//ID", nil, params{}},
	} {
		e, p := s.router.match(httptest.NewRequest(c.method, c.target, nil))
		require.Equal(t, c.want, e, "%s %s", c.method, c.target)
		assert.Equal(t, c.p, p, "%s %s", c.method, c.target)
	}
}
