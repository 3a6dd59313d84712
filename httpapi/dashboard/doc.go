// Package dashboard is the operator's web page of a Heureka node: what the
// node is, who its cluster members are, what self-preservation decided and
// why, what holds eviction, and which applications and instances are
// registered, with a search box, live refresh and the usual status actions.
//
// # What it owns
//
// The page (served at / and at /eureka/, where Spring users expect Eureka's
// dashboard; /eureka redirects there), its assets under /dashboard/ (one
// HTML page, one CSS file and one plain JavaScript file, embedded in the
// binary with embed.FS: no CDN, no build step, it works offline) and one
// JSON read endpoint, GET /dashboard/api/state. It owns no registry state.
//
// # How data enters and leaves
//
// Everything the page shows comes from the state endpoint, built on each
// request from sources that the Eureka API reads as well:
//
//   - Config.View's Snapshot(): the snapshot that cached Eureka reads
//     (/eureka/apps) serve, so the page and clients never disagree. An
//     instance's lastRenewalTimestamp is therefore the one recorded at its
//     last change, as in /eureka/apps: renewals do not rewrite snapshots.
//   - Config.Registry's SelfPreservation(): the registry's own reading and
//     its plain-language Reason, shown as they are.
//   - Config.EvictionHolds (nil: a single node): the cluster layer's holds
//     on eviction, joined with self-preservation's by httpapi.NewEviction
//     as GET /admin/eviction joins them, and shown under "Eviction held"
//     with each hold's detail; the line is hidden while nothing holds.
//   - Config.Cluster's Members() (nil: a single node): state, gossip
//     address, ownership share and each member's self-preservation decision.
//
// The applications are the bulk of the document; they are left out when the
// page already holds the snapshot it would get (the known query parameter,
// see Handler.state), so an idle registry costs a few hundred bytes per
// poll.
//
// # How the page learns of changes
//
// The page opens the API's change stream (an EventSource on
// GET /eureka/stream, package httpapi) and reads the state endpoint as soon
// as an event arrives (at most once a second, however fast the registry
// changes), so a registration, a cancellation or a status change shows
// within about a second instead of at the next poll.
// The event's own document is not used: the page draws the registry from
// the state endpoint only. It still reads the state every Config.Refresh
// for what the stream does not carry (members, self-preservation, holds on
// eviction), and it falls back to that polling alone whenever the stream is
// unavailable: a browser without EventSource, a server that answers the
// stream with 401, 403, 404 or 503 (it retries the stream every 30 s), or a
// dropped connection while the browser reconnects (resuming with
// Last-Event-ID). The stream is a read of the Eureka API, so it needs what
// every read needs (the read role when Config.Auth is on); the browser
// sends the credentials it holds for the page's origin, as it does for the
// state endpoint. The page's root element says which way it is updated:
// data-updates="stream" or "polling".
//
// The actions (out of service, back in service, remove override,
// deregister) are not endpoints of this package: the page's JavaScript calls
// the Eureka API (/eureka/apps/…) with fetch and credentials 'same-origin',
// so whatever guards the API's writes guards the page's buttons too.
//
// # Concurrency
//
// A Handler is immutable after New and safe for concurrent use; every
// request reads its own snapshot.
//
// # What it does not do
//
// No websockets and no server push of its own (the page listens to the
// API's change stream, see above), no history or charts (that is /metrics' job) and no authentication of its
// own: the server it is mounted in decides who may read the page and who
// may write through the API.
package dashboard
