package httpapi

// Self-preservation as the API shows it: the operator's run-time switch
// (GET and PUT /admin/self-preservation) and the figures that /eureka/status
// and /cluster/members report about this node's decision. The holds on
// eviction, self-preservation's among them, are eviction.go's.
//
// The figures are the registry's own reading (actors.SelfPreservationStatus),
// shown as they are: the actors layer decides whether self-preservation is
// engaged and says why; this file only renders the decision. In a cluster
// Expected and RenewsLastWindow are cluster-wide (see the actors type).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heureka/heureka/actors"
)

// SelfPreservation is the JSON form of an actors.SelfPreservationStatus,
// served by GET /admin/self-preservation and embedded in /eureka/status, in
// this node's row of /cluster/members and in the dashboard's state; the
// heureka command decodes it. The one definition of that shape.
type SelfPreservation struct {
	// Enabled is the switch (--self-preservation, or the last PUT).
	Enabled bool `json:"enabled"`
	// Engaged reports whether expired leases are being held now.
	Engaged bool `json:"engaged"`
	// EngagedSince is when the current engagement began; null when not
	// engaged.
	EngagedSince *time.Time `json:"engagedSince"`
	// Reason says why expiration is enabled or not, in the registry's words.
	Reason string `json:"reason"`
	// Expected is the number of clients expected to renew.
	Expected int `json:"expected"`
	// Threshold is the number of renewals per window at or below which
	// self-preservation engages.
	Threshold int `json:"threshold"`
	// RenewsLastWindow is the measured renewals of the last complete
	// window, cluster-wide: LocalRenewals plus PeerRenewals.
	RenewsLastWindow int64 `json:"renewsLastWindow"`
	// LocalRenewals is this node's own count.
	LocalRenewals int64 `json:"localRenewals"`
	// PeerRenewals is the reachable peers' counts, summed.
	PeerRenewals int64 `json:"peerRenewals"`
	// Members is how many members' counts were summed (this node included).
	Members int `json:"members"`
	// ExpirationEnabled reports whether eviction may run.
	ExpirationEnabled bool `json:"expirationEnabled"`
	// WindowSeconds is the length of the renewal window in seconds
	// (fractional when tests shrink it).
	WindowSeconds float64 `json:"windowSeconds"`
	// Protected is, while engaged, the clients expected when the
	// engagement began (0 otherwise); RecoveryThreshold the renewals per
	// window above which they count as back: two closes above it release
	// self-preservation.
	Protected         int `json:"protected"`
	RecoveryThreshold int `json:"recoveryThreshold"`
	// EvictionHolds is every hold on this node's eviction now,
	// self-preservation's own included: GET /admin/eviction's holds. GET and
	// PUT /admin/self-preservation fill it ([] when none); where this object
	// is embedded in another document (/eureka/status, /cluster/members, the
	// dashboard's state) it is nil and left out, for those documents carry
	// the holds in an eviction element of their own or not at all. Nodes
	// from before it send none.
	EvictionHolds []EvictionHold `json:"evictionHolds,omitzero"`
}

// NewSelfPreservation converts a reading; nil gives the zero value.
func NewSelfPreservation(st *actors.SelfPreservationStatus) SelfPreservation {
	if st == nil {
		return SelfPreservation{}
	}
	v := SelfPreservation{
		Enabled:           st.Enabled,
		Engaged:           st.Engaged,
		Reason:            st.Reason,
		Expected:          st.Expected,
		Threshold:         st.Threshold,
		RenewsLastWindow:  st.RenewsLastWindow,
		LocalRenewals:     st.LocalRenewals,
		PeerRenewals:      st.PeerRenewals,
		Members:           st.Members,
		ExpirationEnabled: st.ExpirationEnabled,
		WindowSeconds:     st.Window.Seconds(),
		Protected:         st.Protected,
		RecoveryThreshold: st.RecoveryThreshold,
	}
	if !st.EngagedSince.IsZero() {
		t := st.EngagedSince.UTC()
		v.EngagedSince = &t
	}
	return v
}

// selfPreservationDecision is the one-line form of a reading that
// Member.SelfPreservation carries: the registry's Reason, which already
// opens with the decision ("engaged: …", "not engaged: …",
// "self-preservation is off: …"), or, when it gives none, just the decision
// ("engaged", "not engaged" or "disabled").
func selfPreservationDecision(st *actors.SelfPreservationStatus) string {
	switch {
	case st == nil:
		return ""
	case st.Reason != "":
		return st.Reason
	case !st.Enabled:
		return "disabled"
	case st.Engaged:
		return "engaged"
	}
	return "not engaged"
}

// appendSelfPreservationXML appends the <selfPreservation> element of the
// XML status document, indented one level, with the same children as the
// JSON object (engagedSince only while engaged).
func appendSelfPreservationXML(b *strings.Builder, v SelfPreservation) {
	elem := func(name, val string) {
		fmt.Fprintf(b, "    <%s>%s</%s>\n", name, escapeXMLText(val), name)
	}
	b.WriteString("  <selfPreservation>\n")
	elem("enabled", strconv.FormatBool(v.Enabled))
	elem("engaged", strconv.FormatBool(v.Engaged))
	if v.EngagedSince != nil {
		elem("engagedSince", v.EngagedSince.Format(time.RFC3339Nano))
	}
	elem("reason", v.Reason)
	elem("expected", strconv.Itoa(v.Expected))
	elem("threshold", strconv.Itoa(v.Threshold))
	elem("renewsLastWindow", strconv.FormatInt(v.RenewsLastWindow, 10))
	elem("localRenewals", strconv.FormatInt(v.LocalRenewals, 10))
	elem("peerRenewals", strconv.FormatInt(v.PeerRenewals, 10))
	elem("members", strconv.Itoa(v.Members))
	elem("expirationEnabled", strconv.FormatBool(v.ExpirationEnabled))
	elem("windowSeconds", strconv.FormatFloat(v.WindowSeconds, 'f', -1, 64))
	elem("protected", strconv.Itoa(v.Protected))
	elem("recoveryThreshold", strconv.Itoa(v.RecoveryThreshold))
	b.WriteString("  </selfPreservation>\n")
}

// marshalJSON encodes v without HTML escaping and without the trailing
// newline json.Encoder adds.
func marshalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("httpapi: encoding %T: %v", v, err)) // only plain structs come here
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// adminSelfPreservation is the document of GET and PUT
// /admin/self-preservation: the current reading and every hold on
// eviction, both from one reading of the registry.
func (s *Server) adminSelfPreservation() SelfPreservation {
	st := s.cfg.Registry.SelfPreservation()
	v := NewSelfPreservation(st)
	v.EvictionHolds = NewEviction(st, s.cfg.EvictionHolds).Holds
	return v
}

// getSelfPreservation serves GET /admin/self-preservation: the current
// reading as JSON, with the holds on eviction.
func (s *Server) getSelfPreservation(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.adminSelfPreservation())
}

// putSelfPreservation serves PUT /admin/self-preservation?enabled=true|false:
// it switches self-preservation and answers 200 with the reading that
// results. It is not authenticated yet (see routes).
func (s *Server) putSelfPreservation(w http.ResponseWriter, r *http.Request) {
	enabled, err := enabledParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.cfg.Registry.SetSelfPreservation(r.Context(), enabled); err != nil {
		s.fail(w, r, err)
		return
	}
	// An operator turning eviction protection off is worth a line in the
	// log, with where the request came from.
	s.log.Warn("self-preservation switched at run time", "enabled", enabled, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, s.adminSelfPreservation())
}

// enabledParam parses the enabled query parameter: exactly one of true or
// false (any case).
func enabledParam(r *http.Request) (bool, error) {
	vs := r.URL.Query()["enabled"]
	switch {
	case len(vs) == 0 || (len(vs) == 1 && vs[0] == ""):
		return false, badRequest("missing enabled parameter (PUT /admin/self-preservation?enabled=true|false)")
	case len(vs) > 1:
		return false, badRequest("enabled given more than once; give it once, true or false")
	}
	switch strings.ToLower(vs[0]) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, badRequest(fmt.Sprintf("invalid enabled value %s (want true or false)", jsonString(vs[0])))
}
