// Package client is a small Eureka client for Go services, for Heureka and
// for stock Eureka servers alike. It owns three things:
//
//   - the registration of one instance: Register, Renew, Cancel and
//     SetStatus are single calls; Run registers, renews every
//     RenewalInterval, registers again when a renewal is answered 404 (as
//     Eureka clients do), and cancels the registration when its context
//     ends;
//   - watches of an application (Watch) or a VIP address (WatchVIP): they
//     deliver the current instance list on a channel and a new one after
//     each change, using Heureka's blocking reads (ETag, If-None-Match and
//     wait) and falling back to polling against a server without them;
//   - failover across the configured servers, in order, like the Java
//     client (servers.go).
//
// Data enters through Config (validated by New; invalid values are
// refused, never replaced) and leaves as JSON over net/http: the client
// speaks the JSON form of the Eureka REST API only, and depends on the
// standard library alone. It holds no copy of the registry: there is no
// full or delta fetch, no local cache to query and no load balancer;
// a watch hands over lists and forgets them.
//
// Concurrency: a Client's methods may be called from any goroutine. Run
// blocks until its context ends (run it in its own goroutine); each watch
// runs one goroutine until its context ends, then closes its channel.
// Logs go to Config.Logger.
package client
