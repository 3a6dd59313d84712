package httpapi

// Rate limiting of registry fetches, like Eureka's RateLimitingFilter
// (spec §4.12; off by default there and here).
//
// The fetches are the GETs Eureka's filter matches with
// ^.*/apps(/[^/]*)?$: the full registry (/apps, /apps/), the delta
// (/apps/delta) and one application (/apps/{app}); Heureka also counts
// /apps/delta/, which it serves as the delta. Two server-wide token buckets
// guard them: every fetch takes a token from the fetch bucket
// (FetchAverageRate per second, burst BurstSize), and a full fetch also one
// from the full-fetch bucket (FullFetchAverageRate, the same burst). A fetch
// that finds a bucket empty is answered 503, which the Java client takes as
// "try the next server". Writes, instance reads, VIPs and everything else are
// never limited: a renewal must never be dropped for load.
//
// Privileged clients are exempt: those whose DiscoveryIdentity-Name header
// is DefaultClient (the Java client) or DefaultServer (a Eureka peer), or a
// name in PrivilegedClients, unless ThrottleStandardClients. That header is
// whatever the client says, so the exemption is a courtesy to well-behaved
// clients, not a security boundary (as in Eureka). fargo and
// eureka-js-client send no such header and are limited.
//
// It runs after authentication, so that a client without credentials cannot
// use up the tokens of those with them.

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/time/rate"
)

// RateLimitConfig configures fetch rate limiting (Config.RateLimit; nil
// leaves it off). Start from DefaultRateLimitConfig. The names follow
// Eureka's rateLimiter.* properties.
type RateLimitConfig struct {
	// BurstSize is how many fetches each bucket lets through at once
	// (rateLimiter.burstSize). Default 10.
	BurstSize int
	// FetchAverageRate is the sustained rate of fetches of any kind, per
	// second, across all clients (rateLimiter.registryFetchAverageRate).
	// Default 500.
	FetchAverageRate float64
	// FullFetchAverageRate is the sustained rate of full registry fetches
	// per second (rateLimiter.fullFetchAverageRate). Default 100: a full
	// fetch is the expensive one, and a client fetches the full registry
	// only at start and after a delta mismatch.
	FullFetchAverageRate float64
	// ThrottleStandardClients limits the Java client and Eureka peers too
	// (rateLimiter.throttleStandardClients). Default false.
	ThrottleStandardClients bool
	// PrivilegedClients are further DiscoveryIdentity-Name values that are
	// never limited (rateLimiter.privilegedClients). Default none.
	PrivilegedClients []string
}

// DefaultRateLimitConfig returns Eureka's defaults: burst 10, 500 fetches
// and 100 full fetches per second, standard clients exempt.
func DefaultRateLimitConfig() RateLimitConfig {
	return RateLimitConfig{BurstSize: 10, FetchAverageRate: 500, FullFetchAverageRate: 100}
}

// Validate reports the first problem with c; a nil c is valid (off).
func (c *RateLimitConfig) Validate() error {
	switch {
	case c == nil:
		return nil
	case c.BurstSize < 1:
		return fmt.Errorf("httpapi: rate limit BurstSize %d must be at least 1", c.BurstSize)
	case !(c.FetchAverageRate > 0):
		return fmt.Errorf("httpapi: rate limit FetchAverageRate %g must be positive", c.FetchAverageRate)
	case !(c.FullFetchAverageRate > 0):
		return fmt.Errorf("httpapi: rate limit FullFetchAverageRate %g must be positive", c.FullFetchAverageRate)
	}
	return nil
}

// fetchKind is what a request fetches, as the rate limiter sees it.
type fetchKind uint8

const (
	notAFetch fetchKind = iota
	fullFetch
	deltaFetch
	appFetch
)

// defaultPrivilegedClients are the DiscoveryIdentity-Name values of the Java
// client and of a Eureka server replicating to its peers.
var defaultPrivilegedClients = []string{"DefaultClient", "DefaultServer"}

// errThrottled is the answer to a fetch over the limit.
var errThrottled = &httpError{code: http.StatusServiceUnavailable,
	msg: "rate limited: too many registry fetches on this server; retry later or fetch from another server"}

// rateLimiter holds the two token buckets.
type rateLimiter struct {
	fetch, full *rate.Limiter
	cfg         RateLimitConfig
}

// newRateLimiter returns nil when c is nil (off).
func newRateLimiter(c *RateLimitConfig) (*rateLimiter, error) {
	if c == nil {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := *c
	cfg.PrivilegedClients = append(slices.Clone(defaultPrivilegedClients), c.PrivilegedClients...)
	return &rateLimiter{
		fetch: rate.NewLimiter(rate.Limit(c.FetchAverageRate), c.BurstSize),
		full:  rate.NewLimiter(rate.Limit(c.FullFetchAverageRate), c.BurstSize),
		cfg:   cfg,
	}, nil
}

// classifyFetch says which fetch r is: Eureka's pattern, anchored at the
// API's base paths.
func classifyFetch(r *http.Request) fetchKind {
	if r.Method != http.MethodGet {
		return notAFetch
	}
	for _, base := range BasePaths {
		rest, ok := strings.CutPrefix(r.URL.Path, base+"/apps")
		switch {
		case !ok:
			continue
		case rest == "" || rest == "/":
			return fullFetch
		case rest == "/delta" || rest == "/delta/":
			return deltaFetch
		case rest[0] == '/' && !strings.Contains(rest[1:], "/"):
			return appFetch
		}
		// "/eureka/apps/APP/ID" is an instance read, and "/eureka/apps/v2…"
		// may still match a longer base path.
	}
	return notAFetch
}

// allow reports whether a fetch of kind k may go ahead, taking its tokens.
// Like Eureka, a full fetch takes a token from both buckets, and one from
// the fetch bucket even when the full-fetch bucket then refuses it.
func (l *rateLimiter) allow(r *http.Request, k fetchKind) bool {
	if !l.cfg.ThrottleStandardClients && slices.Contains(l.cfg.PrivilegedClients, r.Header.Get("DiscoveryIdentity-Name")) {
		return true
	}
	ok := l.fetch.Allow()
	if k == fullFetch {
		ok = l.full.Allow() && ok
	}
	return ok
}

// limit wraps next with the rate limiter (a nil limiter lets everything
// through).
func (s *Server) limit(next http.Handler) http.Handler {
	l := s.limiter
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := classifyFetch(r); k != notAFetch && !l.allow(r, k) {
			w.Header().Set("Retry-After", "1")
			s.fail(w, r, errThrottled)
			return
		}
		next.ServeHTTP(w, r)
	})
}
