package httpapi

// Relaying a remote region inside the cluster
//
// GET /admin/regions/{region}/relay is how the nodes of a cluster that do
// not hold a region's WAN link follow it: from a member that does, over
// the local network (package federation's relay.go describes the stream).
// It is served only when Config.Regions can relay (federation's
// Federation); with Config.Auth it needs the read role, as the other
// /admin/ reads. Like the change stream, it is not gated on readiness: a
// region's copy does not depend on the local registry's sync.

import "net/http"

// RegionsRelay is the part of Regions that serves a region's relay stream
// (package federation's Federation implements it).
type RegionsRelay interface {
	// ServeRelay serves the stream of region's copy.
	ServeRelay(w http.ResponseWriter, r *http.Request, region string)
}

// routeRegionsRelay registers GET /admin/regions/{region}/relay.
func (s *Server) routeRegionsRelay() {
	s.handle("GET /admin/regions/{region}/relay", "regions-relay", func(w http.ResponseWriter, r *http.Request) {
		rr, ok := s.cfg.Regions.(RegionsRelay)
		if !ok {
			http.NotFound(w, r)
			return
		}
		rr.ServeRelay(w, r, r.PathValue("region"))
	})
}
