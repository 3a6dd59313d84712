// Package httpapi is heureka's Eureka-compatible REST adapter: it decodes
// Eureka JSON and XML requests, calls the registry, and serves the encoded
// documents the view prepares. The document formats themselves (encoders,
// decoders, the replication batch) are package eureka's.
//
// Besides the Eureka API (under every BasePaths prefix) it serves
// /healthz, /readyz, /metrics, /cluster/members and the operator endpoints
// /admin/self-preservation and /admin/eviction (every hold on eviction, see
// eviction.go).
//
// Optional HTTP basic auth with read and write roles (Config.Auth, auth.go)
// and Eureka's fetch rate limit (Config.RateLimit, ratelimit.go) wrap every
// route; /healthz and /readyz stay open.
//
// Every route is described once, on a net/http ServeMux (routes in
// server.go); the few hot shapes (renew, register, delta, one application,
// instance reads and cancels) are split by hand before it (router.go) and
// timed by per-route observers resolved in advance (metrics.go), so that a
// small request pays no fixed cost the work does not need.
//
// While Config.Ready reports false (initial cluster sync), registry reads
// answer 403 and writes are accepted (gate, in server.go). Every error reaches
// the client through fail (errors.go), the one error-to-status map.
package httpapi
