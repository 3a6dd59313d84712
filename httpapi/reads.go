package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// negotiate picks the format of a cached read the way Eureka does: JSON iff
// the Accept header contains "json" (XML otherwise, also when absent),
// compact iff X-Eureka-Accept is "compact"; gzip iff Accept-Encoding
// contains "gzip".
func negotiate(r *http.Request) (f view.Format, gz bool) {
	json := strings.Contains(headerValue(r.Header, "Accept"), "json")
	compact := strings.EqualFold(headerValue(r.Header, "X-Eureka-Accept"), "compact")
	switch {
	case json && compact:
		f = view.FormatCompactJSON
	case json:
		f = view.FormatJSON
	case compact:
		f = view.FormatCompactXML
	default:
		f = view.FormatXML
	}
	return f, strings.Contains(headerValue(r.Header, "Accept-Encoding"), "gzip")
}

// contentTypes maps formats to their Content-Type header values, allocated
// once so that writing them costs nothing per request.
var contentTypes = [view.NumFormats][]string{
	view.FormatJSON:        {"application/json"},
	view.FormatXML:         {"application/xml"},
	view.FormatCompactJSON: {"application/json"},
	view.FormatCompactXML:  {"application/xml"},
}

var (
	gzipValue = []string{"gzip"}
	varyValue = []string{"Accept, Accept-Encoding, X-Eureka-Accept"}
)

// contentLengths caches Content-Length header values by length, direct
// mapped: a cached document is served many times at the same length, and
// its header value is then shared instead of formatted and allocated per
// request. Like contentTypes, the values are never modified (net/http only
// reads response headers).
var contentLengths [1024]atomic.Pointer[contentLengthEntry]

// contentLengthEntry is one cached Content-Length value.
type contentLengthEntry struct {
	n     int
	value []string
}

// contentLength returns the Content-Length header value for n bytes.
func contentLength(n int) []string {
	slot := &contentLengths[uint(n)%uint(len(contentLengths))]
	if e := slot.Load(); e != nil && e.n == n {
		return e.value
	}
	e := &contentLengthEntry{n: n, value: []string{strconv.Itoa(n)}}
	slot.Store(e)
	return e.value
}

// writeDoc writes prepared bytes with their headers.
func writeDoc(w http.ResponseWriter, f view.Format, gz bool, body []byte) {
	writeHeaders(w, f, gz, len(body))
	_, _ = w.Write(body)
}

// writeHeaders writes the headers and status of a cached read.
func writeHeaders(w http.ResponseWriter, f view.Format, gz bool, length int) {
	h := w.Header()
	h["Content-Type"] = contentTypes[f]
	h["Vary"] = varyValue
	if gz {
		h["Content-Encoding"] = gzipValue
	}
	h["Content-Length"] = contentLength(length)
	w.WriteHeader(http.StatusOK)
}

// getApps serves the full registry prepared by the view. A gzip document's
// first read is written from its parts, blocks of about 32 applications
// (one write call each), and every later read of the same snapshot from
// one joined slice: under churn, where a write replaces the snapshot
// before a second read, no read copies the document, and repeated fetches
// of an unchanged registry (the common case) cost one write. A write call
// per application measured 0.4–0.7 of a single write (BENCHMARKS.md); per
// block the calls are 32 times fewer.
func (s *Server) getApps(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Regions != nil && s.serveRegionDoc(w, r, false) {
		return
	}
	f, gz := negotiate(r)
	writeBody(w, f, gz, s.cfg.View.Snapshot().FullBody(f, gz))
}

// getDelta serves the delta; with an ETag, and held by If-None-Match and
// wait (watch.go).
func (s *Server) getDelta(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Regions != nil && s.serveRegionDoc(w, r, true) {
		return
	}
	s.serveWatched(w, r, resource{kind: resDelta})
}

// writeBody writes a prepared body with the headers of a cached read.
func writeBody(w http.ResponseWriter, f view.Format, gz bool, b view.Body) {
	writeHeaders(w, f, gz, b.Len())
	_, _ = b.WriteTo(w)
}

// getApp serves one application (Eureka answers an empty 404 for an
// unknown one); with an ETag, and held by If-None-Match and wait
// (watch.go).
func (s *Server) getApp(w http.ResponseWriter, r *http.Request, p params) {
	if s.regionsFallback && s.serveRegionApp(w, r, p.appName()) {
		return
	}
	s.serveWatched(w, r, resource{kind: resApp, name: p.appName()})
}

// getVIP serves a VIP's instances, like getApp.
func (s *Server) getVIP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Regions != nil && s.serveRegionVIP(w, r, r.PathValue("vip"), false) {
		return
	}
	s.serveWatched(w, r, resource{kind: resVIP, name: r.PathValue("vip")})
}

// getSVIP serves a secure VIP's instances, like getApp.
func (s *Server) getSVIP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Regions != nil && s.serveRegionVIP(w, r, r.PathValue("svip"), true) {
		return
	}
	s.serveWatched(w, r, resource{kind: resSVIP, name: r.PathValue("svip")})
}

// entityFormat picks JSON or XML for a non-cached entity (instance GET, 409
// body): JSON iff Accept mentions json, else XML (Eureka's first @Produces).
func entityFormat(r *http.Request) view.Format {
	if strings.Contains(headerValue(r.Header, "Accept"), "json") {
		return view.FormatJSON
	}
	return view.FormatXML
}

func (s *Server) getInstance(w http.ResponseWriter, r *http.Request, p params) {
	s.writeLiveInstance(w, r, p.appName(), p.id)
}

func (s *Server) getInstanceByID(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	inst := s.cfg.View.Latest().InstanceByID(id)
	if inst == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	s.writeLiveInstance(w, r, inst.App, id)
}

// writeLiveInstance answers an instance GET from the lease holder, not the
// cache: 404 when absent, or expired while lease expiration is enabled.
func (s *Server) writeLiveInstance(w http.ResponseWriter, r *http.Request, app, id string) {
	inst, expired, ok, err := s.cfg.Registry.Get(r.Context(), app, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok || (expired && s.cfg.Registry.SelfPreservation().ExpirationEnabled) {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	f := entityFormat(r)
	writeEntity(w, http.StatusOK, f, eureka.AppendInstanceDocument(nil, f, inst))
}

func writeEntity(w http.ResponseWriter, code int, f view.Format, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypes[f]
	h["Content-Length"] = contentLength(len(body))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func (s *Server) statusOverrides(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.cfg.View.Snapshot().Overrides())
}

// memberRow is one element of GET /cluster/members: the Member, and for
// this node alone its full self-preservation reading (what it decided, why,
// and the figures behind it).
type memberRow struct {
	Member
	SelfPreservationDetail *SelfPreservation `json:"selfPreservationDetail,omitempty"`
}

// members serves GET /cluster/members: a JSON array with one row per member.
// This node's row says what it decided about self-preservation: the
// cluster layer's SelfPreservation and RenewalsLastWindow when it filled
// them, this node's own reading otherwise, and selfPreservationDetail.
func (s *Server) members(w http.ResponseWriter, _ *http.Request) {
	var members []Member
	if s.cfg.Cluster != nil {
		members = s.cfg.Cluster.Members()
	} else {
		members = []Member{{Name: s.cfg.NodeName, State: "alive", Owned: 1}}
	}
	st := s.cfg.Registry.SelfPreservation()
	rows := make([]memberRow, len(members))
	for i, m := range members {
		rows[i].Member = m
		if m.Name != s.cfg.NodeName || st == nil {
			continue
		}
		if m.SelfPreservation == "" {
			rows[i].SelfPreservation = selfPreservationDecision(st)
		}
		if m.RenewalsLastWindow == 0 {
			rows[i].RenewalsLastWindow = st.LocalRenewals
		}
		v := NewSelfPreservation(st)
		rows[i].SelfPreservationDetail = &v
	}
	writeJSON(w, http.StatusOK, rows)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
