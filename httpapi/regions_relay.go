package httpapi

// Relaying a remote region inside the cluster
//
// GET /admin/regions/{region}/relay is how the nodes of a cluster that do
// not hold a region's WAN link follow it: from a member that does, over
// the local network (package federation's relay.go describes the stream).
// It is served only when Config.Regions can relay (federation's
// Federation). With Config.Auth, the nodes, which hold no credentials,
// pass it by a signature made with the cluster's shared secret (the gossip
// keyring; federation's relayauth.go): protect asks the Regions'
// RelayAuthenticator first, and a request on the relay route that carries
// a signature is let in or refused (401, saying why) by it alone; one
// without a signature needs the read role, as the other /admin/ reads.
// Like the change stream, it is not gated on readiness: a region's copy
// does not depend on the local registry's sync.

import (
	"net/http"
	"strings"
)

// RelayAuthenticator is the part of Regions that checks the signature of
// a node's relay request (package federation's Federation implements it).
type RelayAuthenticator interface {
	// AuthenticateRelay reports whether r carries a relay signature and,
	// if it does, why it is refused (nil: accepted).
	AuthenticateRelay(r *http.Request) (signed bool, err error)
}

// isRelayPath reports whether r asks for a region's relay stream (GET
// /admin/regions/{region}/relay), the one route a relay signature opens.
func isRelayPath(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	region, ok := strings.CutPrefix(r.URL.Path, "/admin/regions/")
	if !ok {
		return false
	}
	region, ok = strings.CutSuffix(region, "/relay")
	return ok && region != "" && !strings.Contains(region, "/")
}

// errRelayUnsigned is the 401 of a relay request with neither a signature
// nor credentials.
var errRelayUnsigned = &httpError{code: http.StatusUnauthorized,
	msg: "unauthorized: the relay route needs a node's signature (nodes sign with the cluster's gossip key: " +
		"set the same --gossip-key on every node) or credentials with the read role"}

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
