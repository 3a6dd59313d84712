// Package federation serves other datacenters' registries beside the local
// one, through Eureka's own remote-regions API, so that the Java clients
// that already exist (eureka.client.fetch-remote-regions-registry) see them.
//
// # What it owns
//
// One Heureka cluster runs per datacenter ("region"). For each configured
// remote region, every node of the cluster keeps a copy of the remote
// registry, and a few of them (Config.Links, chosen by the cluster: see
// "Who holds the WAN link" below) fetch it over the WAN: from a Heureka
// remote by following its change stream (GET
// {url}stream: a snapshot, then deltas checked by apps__hashcode, resumed
// by Last-Event-ID, repaired by a digest exchange, gzip-compressed: see
// "Bytes on the WAN"; stream.go),
// from a Java Eureka remote (or while the
// stream is down) by polling GET {url}apps/ in full once, then GET
// {url}apps/delta every PullInterval, checked against the delta's
// apps__hashcode (a mismatch fetches in full at once; pull.go). Remote
// instances are held here, apart from the local registry: they never enter
// the actors, the view or the gossip cluster, so they are never
// replicated, never evicted by local rules and never served to another
// region's pull.
//
// Data leaves through the merged documents (merge.go): httpapi calls Apps
// and Delta for ?regions= reads, and Apps, Delta, VIP and App (one
// application: the local one, else the first region's, as Eureka's
// getApplication) for plain reads with TransparentFallback, and serves
// their bytes; the plain reads without it are the view's and do not come
// here. clients/reference's TestRegionsDifferential compares them with the
// reference Eureka server's.
//
// # Who holds the WAN link
//
// For each region, the Config.Links live members that rank highest by
// rendezvous hashing of (region, member) follow the remote over the WAN
// (links.go); every node computes the same choice from its membership
// (Config.Members, which node fills in), and the next member in rank takes
// over when a chosen one fails or leaves. Every other node follows the
// region from one of the chosen members over the local network (relay.go:
// GET /admin/regions/{region}/relay, the same snapshot and delta documents
// as a remote's change stream, read by the same stream reader, plus the
// relay's state and the age of its last WAN success, which the follower
// takes as its own so that stale and drop come when the relay's do). A
// relay sends a snapshot only while its copy is ok, and relays only what it
// follows over the WAN itself. A node whose relays break, cannot be
// reached or stay other than ok for StaleAfter follows the WAN itself
// ("fallback") until a relay is usable again (a relay that answers 503,
// no link in its own view yet or not loaded yet, is asked again after a
// pull interval; a broken one after StaleAfter), so a region read never
// depends on one node. Status says, per region, how the node follows it
// (Via, Relay, Links, and ViaReason for a fallback). WAN bytes are per
// link, not per node.
//
// A relayed node takes its relay's state as its own: its copy goes stale
// when the relay's does, and drops when the relay says it dropped (its
// state event, then the delta that deletes every instance), not on its
// own tick a moment before; the relay's stream is not cut on a drop, and
// the relay's deltas rebuild the copy after the heal, which its
// keep-alives then keep fresh (pull.go's relayHoldsCopy and onRelay;
// relay_drop_test.go).
//
// With HTTP basic auth on, the relay route needs the read role and the
// nodes hold no credentials: a follower signs its relay request with the
// cluster's shared secret, the gossip keyring (relayauth.go: an HMAC over
// method, path and time, checked against every key within
// RelayAuthWindow), and the relay lets a signed request in by its
// signature alone. A cluster with auth on and no gossip key has no shared
// secret: every node follows the WAN, warns at start and says why.
//
// # Bytes on the WAN
//
// A follower asks a Heureka remote for its change stream gzip-compressed
// (encoding=gzip and Accept-Encoding: gzip; internal/streamzip), and a
// relay for its relay stream likewise. The remote compresses each write
// for that connection alone and ends it with a sync flush, so an event is
// decoded as soon as its bytes arrive, and the DEFLATE window runs across
// events, so a delta compresses against the ones before it. A remote or
// relay of the previous release ignores the parameter and answers plain,
// which the follower reads as before (no Content-Encoding); a follower of
// the previous release does not ask and gets the plain stream. Only a
// reader that asks pays for a compressor (see streamzip for why
// Accept-Encoding alone is not enough); at most streamzip.MaxStreams
// compressed streams per process, beyond which they are served plain.
//
// Batching is the remote's: its stream hub (httpapi's stream_hub.go) sends
// a change after a quiet spell of PushConfig.StreamCoalesce (25 ms) at
// once and gathers the changes that follow an event closer than that into
// one delta event StreamCoalesce after it; a writer sends everything due
// for a connection at once (a snapshot, the events queued, a keep-alive)
// as one compressed batch with one flush. So a burst costs one event per
// 25 ms, and a lone change is not held back. A relay writes what its
// follower's queue holds, then flushes once.
//
// WAN bytes grow with what changes, not with the registry: a change costs
// its delta event, about 80 bytes compressed against about 915 plain, at
// 10,000 instances as at 100,000 (bench/cmd/wanbytes; BENCHMARKS.md,
// "Several datacenters"). A snapshot (the initial load, or a dropped copy)
// is the whole registry, compressed, and crosses once: a starting follower
// that can stream does not poll in full beside it. A follower that holds a
// copy and reconnects (a break the remote's window cannot replay, a
// hashcode mismatch) sends the digest of its copy (POST {url}stream;
// internal/appdigest) and gets only the applications that differ and the
// names of those removed (a "repair" event; a mismatch after it takes a
// snapshot; a remote of the previous release answers 405 and the follower
// takes the snapshot). While the remote does not answer, the follower does
// not poll: a poll after a failed one is a full fetch, the reconnection a
// repair. Relays, on the local network, keep their snapshots. Polling costs more:
// each delta repeats a change for the remote's whole delta retention.
// heureka_region_received_bytes_total{region,from} counts the body bytes
// as they came on the connection, compressed, from the WAN (streams and
// polls) and from relays.
//
// # Never re-exported, never stale forever
//
//   - A pull from another region (User-Agent Java-EurekaClient-RemoteRegion,
//     which Heureka's pulls send too) is answered with local data only, even
//     with TransparentFallback, so a ring or a full mesh of regions echoes
//     nothing back.
//   - Every served remote instance carries its region in metadata
//     (MarkerKey) and a zone (ZoneKey, the region's name when it had none);
//     a pulled instance that already carries a marker was re-exported by
//     someone else and is not served. The one exception is a relayed copy:
//     a node that follows region X through a local relay accepts the
//     marker X (and only X) on what the relay sends.
//   - A local instance wins over a remote one with the same application and
//     id; a stale echo can never overwrite a local record.
//   - A region with no successful pull for StaleAfter is shown stale
//     (/admin/regions, heureka_region_state); after DropAfter its instances
//     are dropped from every read until a pull succeeds again.
//
// # Concurrency
//
// One goroutine per region (pull.go) owns that region's mutable state
// (region.go) and where it is followed from, and publishes immutable
// snapshots through an atomic pointer and into the region's relay hub; a
// second one per region reads its stream (the remote's or a relay's) and
// hands what it decodes to the first, tagged with the target's generation
// so that a former target's leftovers are ignored. Each relayed follower
// is one HTTP handler goroutine reading a buffered channel the hub fills
// under its lock. Readers never lock anything but the small document
// cache.
//
// # Not done here (yet)
//
// Eureka's global application whitelist and versions__delta as Eureka
// numbers region deltas are not implemented; tombstones do not cross
// datacenters. A repair's digest grows with the number of applications.
// See docs/federation.md.
package federation
