// Package federation serves other datacenters' registries beside the local
// one, through Eureka's own remote-regions API, so that the Java clients
// that already exist (eureka.client.fetch-remote-regions-registry) see them.
//
// # What it owns
//
// One Heureka cluster runs per datacenter ("region"). For each configured
// remote region, every node of the cluster keeps a copy of the remote
// registry: from a Heureka remote by following its change stream (GET
// {url}stream: a snapshot, then deltas checked by apps__hashcode, resumed
// by Last-Event-ID; stream.go), from a Java Eureka remote (or while the
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
// # Never re-exported, never stale forever
//
//   - A pull from another region (User-Agent Java-EurekaClient-RemoteRegion,
//     which Heureka's pulls send too) is answered with local data only, even
//     with TransparentFallback, so a ring or a full mesh of regions echoes
//     nothing back.
//   - Every served remote instance carries its region in metadata
//     (MarkerKey) and a zone (ZoneKey, the region's name when it had none);
//     a pulled instance that already carries a marker was re-exported by
//     someone else and is not served.
//   - A local instance wins over a remote one with the same application and
//     id; a stale echo can never overwrite a local record.
//   - A region with no successful pull for StaleAfter is shown stale
//     (/admin/regions, heureka_region_state); after DropAfter its instances
//     are dropped from every read until a pull succeeds again.
//
// # Concurrency
//
// One goroutine per region (pull.go) owns that region's mutable state
// (region.go) and publishes immutable snapshots through an atomic pointer;
// a second one per region reads its stream and hands what it decodes to the
// first. Readers never lock anything but the small document cache.
//
// # Not done here (yet)
//
// Every node follows every region (WAN cost per node); the wish is a few
// nodes chosen by the cluster holding the WAN link and sharing what they
// receive. Eureka's global application whitelist and versions__delta as
// Eureka numbers region deltas are not implemented; see
// docs/federation.md.
package federation
