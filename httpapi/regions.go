package httpapi

// Remote regions
//
// With Config.Regions set (package federation), GET apps, apps/delta and
// the VIP reads answer as a Eureka server with remote regions does:
//
//   - ?regions=dc2,dc3 on apps and apps/delta adds those regions'
//     instances to the local ones, in the same application elements, with
//     apps__hashcode over the union. The list is lower-cased, split on ','
//     and sorted, like Eureka's; unknown names are ignored. Until every
//     configured region has loaded once, such a read answers 403 (the Java
//     client then tries another server, or fetches in full after a 403
//     delta).
//   - Without ?regions=, reads stay local unless transparent fallback is
//     on; then apps, apps/delta and the VIP reads carry every region, and a
//     one-application read falls back to the first remote region holding
//     the application when it has no local instance (Eureka's
//     one-application and VIP reads ignore ?regions= and follow that
//     switch too).
//   - A pull by another region's server (isRegionPull) always gets local
//     data only, with or without ?regions=, so that no region re-exports
//     another's instances, whatever the topology.
//
// The region-less path costs one nil check when federation is off, and a
// query-string check when it is on: it still serves the view's prepared
// bytes. Region reads have no ETag and do not block (wait=): that is for
// the local resources.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/sabotage"
)

// Regions is the read side of federation (package federation's
// Federation implements it). Every method is safe for concurrent use.
type Regions interface {
	// Ready reports whether every configured region has loaded once.
	Ready() bool
	// TransparentFallback reports whether reads without ?regions= carry
	// every region.
	TransparentFallback() bool
	// Apps is the full registry document of local with the named regions
	// (sorted, lower case; nil: every region).
	Apps(local *view.Snapshot, regions []string, f view.Format, gz bool) []byte
	// Delta is the delta document of local with the named regions' recent
	// changes, apps__hashcode over the full union.
	Delta(local *view.Snapshot, regions []string, f view.Format, gz bool) []byte
	// VIP is the document of a VIP (secure: a secure VIP) over local and
	// every region.
	VIP(local *view.Snapshot, vip string, secure bool, f view.Format, gz bool) []byte
	// App is the document of one application with transparent fallback:
	// the local application when it has instances, else the first remote
	// region's (as Eureka's getApplication), and whether it has any.
	App(local *view.Snapshot, name string, f view.Format, gz bool) ([]byte, bool)
	// Report is what GET /admin/regions serves (JSON).
	Report() any
}

// errRegionsNotReady answers a ?regions= read before every region loaded.
var errRegionsNotReady = &httpError{code: http.StatusForbidden,
	msg: "remote regions not loaded yet; fetch from another server or retry"}

// regionPullAgent starts the User-Agent of a remote region's pull by
// Heureka (and by Eureka 1.x's Jersey 1 RemoteRegionRegistry).
const regionPullAgent = "Java-EurekaClient-RemoteRegion"

// isRegionPull reports whether r is another region's pull, to be answered
// with local data only: its User-Agent starts with regionPullAgent, or it
// identifies as a Eureka server (DiscoveryIdentity-Name: DefaultServer).
// eureka-client 2.x's Jersey 3 transport sends Jersey's own User-Agent, so
// a Java server's RemoteRegionRegistry is known by its identity only (seen
// against the reference server, clients/reference/regions_test.go); Java
// peers send that identity on replication POSTs, never on registry reads.
func isRegionPull(r *http.Request) bool {
	if sabotage.On(sabotage.RegionPullGetsRemote) {
		return false
	}
	return strings.HasPrefix(headerValue(r.Header, "User-Agent"), regionPullAgent) ||
		headerValue(r.Header, "Discoveryidentity-Name") == "DefaultServer"
}

// regionsOf says whether r is a region read and which regions it asks
// for: explicit (the ?regions= list, parsed as Eureka parses it) or, with
// transparent fallback, nil for every region. explicit reports a
// ?regions= list (only those wait for every region to load).
func (s *Server) regionsOf(r *http.Request) (regions []string, ok, explicit bool) {
	if r.URL.RawQuery != "" {
		if v := r.URL.Query().Get("regions"); v != "" {
			regions = parseRegions(v)
		}
	}
	// The plain path: no regions asked and no fallback costs these two
	// comparisons.
	if len(regions) == 0 && !s.regionsFallback {
		return nil, false, false
	}
	if isRegionPull(r) {
		return nil, false, false // another region's pull: local only, whatever it asks
	}
	if len(regions) > 0 {
		return regions, true, true
	}
	return nil, true, false
}

// parseRegions lower-cases, splits on ',' and sorts a regions parameter;
// blank and repeated names are dropped.
func parseRegions(v string) []string {
	var out []string
	for _, p := range strings.Split(strings.ToLower(v), ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// serveRegionDoc serves a region read of apps or apps/delta; it reports
// false when r is not one (the caller serves the local document).
func (s *Server) serveRegionDoc(w http.ResponseWriter, r *http.Request, delta bool) bool {
	regions, ok, explicit := s.regionsOf(r)
	if !ok {
		return false
	}
	if explicit && !s.cfg.Regions.Ready() {
		s.fail(w, r, errRegionsNotReady)
		return true
	}
	f, gz := negotiate(r)
	snap := s.cfg.View.Snapshot()
	if delta {
		writeDoc(w, f, gz, s.cfg.Regions.Delta(snap, regions, f, gz))
	} else {
		writeDoc(w, f, gz, s.cfg.Regions.Apps(snap, regions, f, gz))
	}
	return true
}

// serveRegionVIP serves a VIP read with transparent fallback; false when
// the read stays local.
func (s *Server) serveRegionVIP(w http.ResponseWriter, r *http.Request, vip string, secure bool) bool {
	if !s.regionsFallback || isRegionPull(r) {
		return false
	}
	f, gz := negotiate(r)
	writeDoc(w, f, gz, s.cfg.Regions.VIP(s.cfg.View.Snapshot(), vip, secure, f, gz))
	return true
}

// serveRegionApp serves a one-application read with transparent fallback;
// false when the read stays local.
func (s *Server) serveRegionApp(w http.ResponseWriter, r *http.Request, name string) bool {
	if !s.regionsFallback || isRegionPull(r) {
		return false
	}
	f, gz := negotiate(r)
	doc, ok := s.cfg.Regions.App(s.cfg.View.Snapshot(), name, f, gz)
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return true
	}
	writeDoc(w, f, gz, doc)
	return true
}

// getRegions serves GET /admin/regions: this cluster's region and every
// remote region's state, lag, last change and instance count.
func (s *Server) getRegions(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Regions == nil {
		writeJSON(w, http.StatusOK, map[string]any{"remotes": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, s.cfg.Regions.Report())
}

// appendRegionsXML writes /admin/regions's document as /eureka/status's
// regions element, through its JSON form (the Report is package
// federation's): each member becomes an element, each list item a
// <remote>.
func appendRegionsXML(b *strings.Builder, report any) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(marshalJSON(report)), &doc); err != nil {
		return
	}
	b.WriteString("  <regions>\n")
	appendXMLValue(b, doc, "    ")
	b.WriteString("  </regions>\n")
}

// appendXMLValue writes the members of a decoded JSON object as elements,
// keys sorted.
func appendXMLValue(b *strings.Builder, v map[string]any, indent string) {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch x := v[k].(type) {
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok {
					fmt.Fprintf(b, "%s<remote>\n", indent)
					appendXMLValue(b, m, indent+"  ")
					fmt.Fprintf(b, "%s</remote>\n", indent)
				}
			}
		case map[string]any:
			fmt.Fprintf(b, "%s<%s>\n", indent, k)
			appendXMLValue(b, x, indent+"  ")
			fmt.Fprintf(b, "%s</%s>\n", indent, k)
		default:
			fmt.Fprintf(b, "%s<%s>%s</%s>\n", indent, k, escapeXMLText(fmt.Sprint(x)), k)
		}
	}
}
