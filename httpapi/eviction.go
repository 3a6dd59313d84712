package httpapi

// Eviction holds, as the API shows them
//
// The registry's rule: anything that stops eviction has a limit, a reason
// in plain words on the status endpoints and the dashboard, and a metric.
// Two layers can stop this node's eviction:
//
//   - the registry's self-preservation (actors), engaged when too few
//     renewals arrive across the cluster; and
//   - the cluster layer (cluster.Replicator.EvictionHolds): an alive member
//     whose renewal reports stopped arriving ("silent-member"), no report
//     from any other member at all ("deaf"), or members that report but are
//     not alive in this node's view ("views-disagree").
//
// This file is their one model. EvictionHold is one hold and Eviction is
// all of them with whether expiration may run; NewEviction is the only
// place the two layers are joined, so GET /admin/eviction, GET and PUT
// /admin/self-preservation (evictionHolds), /eureka/status (eviction), the
// dashboard, the heureka command and the heureka_eviction_held gauge all
// show the same list. The cluster layer reaches this package through the
// small EvictionHoldSource interface (the node adapts cluster.Replicator to
// it), so httpapi stays free of the cluster package; a single node has no
// source and can be held by self-preservation only.
//
// Not listed: a lease's own grace after this node learned it late or took
// its application over (it delays that lease, not eviction), and the
// warm-up of a node's first renewal window (self-preservation judges
// nothing then and eviction runs).

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heureka/heureka/actors"
)

// The reasons of EvictionHold. The cluster layer's are its own constants
// (cluster.HoldSilentMember, …), repeated here because this package does
// not import it; a test in package node checks that they agree.
const (
	// HoldSelfPreservation: the registry's self-preservation is engaged.
	// Its bound is the renewal-threshold update interval (the release),
	// except after a collapse, which it holds until renewals come back.
	HoldSelfPreservation = "self-preservation"
	// HoldSilentMember: an alive member's renewal reports stopped reaching
	// this node; bounded by the silent-member bound.
	HoldSilentMember = "silent-member"
	// HoldDeaf: no report from any other member; bounded by the
	// silent-member bound.
	HoldDeaf = "deaf"
	// HoldViewsDisagree: members report that are not alive in this node's
	// view; it lasts the silent-member bound at most.
	HoldViewsDisagree = "views-disagree"
)

// EvictionHoldReasons are the reasons heureka_eviction_held always
// reports, in order.
var EvictionHoldReasons = []string{HoldSelfPreservation, HoldSilentMember, HoldDeaf, HoldViewsDisagree}

// EvictionHold is one reason this node evicts nothing now: the JSON form
// that GET /admin/eviction, /admin/self-preservation, /eureka/status and
// the dashboard serve and the heureka command decodes. The one definition
// of that shape.
type EvictionHold struct {
	// Reason is one of the Hold constants.
	Reason string `json:"reason"`
	// Members are the cluster members the hold is about, in name order;
	// [] when it is about none (self-preservation).
	Members []string `json:"members"`
	// Since is when the hold began (RFC 3339, UTC); absent when unknown.
	Since time.Time `json:"since,omitzero"`
	// Until is when it ends at the latest (RFC 3339, UTC); absent when no
	// time is known in advance: self-preservation lasts until renewals
	// recover or its release.
	Until time.Time `json:"until,omitzero"`
	// Detail says it in plain words, with the bound.
	Detail string `json:"detail"`
}

// Eviction is GET /admin/eviction and /eureka/status's eviction element:
// whether expired leases may be evicted now, and every hold that stops it.
type Eviction struct {
	// ExpirationEnabled is true when nothing holds eviction (Holds is
	// empty). Self-preservation's own expirationEnabled is about
	// self-preservation alone.
	ExpirationEnabled bool `json:"expirationEnabled"`
	// Holds are the holds on now, self-preservation's first; [] when none.
	Holds []EvictionHold `json:"holds"`
}

// EvictionHoldSource gives the holds on eviction that are not the
// registry's own: the cluster layer's (the node adapts
// cluster.Replicator). It is read on every request and scrape that shows
// them, so it must not block.
type EvictionHoldSource interface {
	// EvictionHolds returns the holds on now; nil when none.
	EvictionHolds() []EvictionHold
}

// NewEviction joins the registry's self-preservation reading (nil: none)
// and the source's holds (nil source: a single node) into one list:
// self-preservation's hold first, when it is engaged, then the source's in
// its order. Times are UTC and Members never nil.
func NewEviction(sp *actors.SelfPreservationStatus, src EvictionHoldSource) Eviction {
	holds := []EvictionHold{}
	if sp != nil && sp.Engaged {
		h := EvictionHold{Reason: HoldSelfPreservation, Members: []string{}, Detail: sp.Reason}
		if !sp.EngagedSince.IsZero() {
			h.Since = sp.EngagedSince.UTC()
		}
		if h.Detail == "" {
			h.Detail = "engaged: fewer renewals than expected arrive; expired leases are kept"
		}
		holds = append(holds, h)
	}
	if src != nil {
		for _, h := range src.EvictionHolds() {
			if h.Members == nil {
				h.Members = []string{}
			}
			if !h.Since.IsZero() {
				h.Since = h.Since.UTC()
			}
			if !h.Until.IsZero() {
				h.Until = h.Until.UTC()
			}
			holds = append(holds, h)
		}
	}
	return Eviction{ExpirationEnabled: len(holds) == 0, Holds: holds}
}

// eviction is this node's Eviction now.
func (s *Server) eviction() Eviction {
	return NewEviction(s.cfg.Registry.SelfPreservation(), s.cfg.EvictionHolds)
}

// getEviction serves GET /admin/eviction: every hold on eviction.
func (s *Server) getEviction(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.eviction())
}

// appendEvictionXML appends the <eviction> element of the XML status
// document, indented one level, with the same children as the JSON object:
// each hold a <hold>, each member a <member>.
func appendEvictionXML(b *strings.Builder, e Eviction) {
	b.WriteString("  <eviction>\n")
	fmt.Fprintf(b, "    <expirationEnabled>%t</expirationEnabled>\n    <holds>\n", e.ExpirationEnabled)
	for _, h := range e.Holds {
		elem := func(name, val string) {
			fmt.Fprintf(b, "        <%s>%s</%s>\n", name, escapeXMLText(val), name)
		}
		b.WriteString("      <hold>\n")
		elem("reason", h.Reason)
		b.WriteString("        <members>\n")
		for _, m := range h.Members {
			fmt.Fprintf(b, "          <member>%s</member>\n", escapeXMLText(m))
		}
		b.WriteString("        </members>\n")
		if !h.Since.IsZero() {
			elem("since", h.Since.Format(time.RFC3339Nano))
		}
		if !h.Until.IsZero() {
			elem("until", h.Until.Format(time.RFC3339Nano))
		}
		elem("detail", h.Detail)
		b.WriteString("      </hold>\n")
	}
	b.WriteString("    </holds>\n  </eviction>\n")
}

// evictionHeldDesc is heureka_eviction_held.
var evictionHeldDesc = prometheus.NewDesc("heureka_eviction_held",
	"1 while eviction on this node is held for the reason (self-preservation, silent-member, deaf, views-disagree), 0 otherwise; "+
		"GET /admin/eviction says why in plain words.", []string{"reason"}, nil)

// evictionCollector reports heureka_eviction_held, reading the holds at
// scrape time through NewEviction, as the endpoints do.
type evictionCollector struct {
	registry Registry
	src      EvictionHoldSource
}

// Describe implements prometheus.Collector.
func (c evictionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- evictionHeldDesc }

// Collect implements prometheus.Collector: every reason of
// EvictionHoldReasons, and a reason the source adds beyond them (bounded by
// the cluster code) while it holds.
func (c evictionCollector) Collect(ch chan<- prometheus.Metric) {
	held := map[string]bool{}
	for _, h := range NewEviction(c.registry.SelfPreservation(), c.src).Holds {
		held[h.Reason] = true
	}
	for _, r := range EvictionHoldReasons {
		ch <- prometheus.MustNewConstMetric(evictionHeldDesc, prometheus.GaugeValue, boolValue(held[r]), r)
		delete(held, r)
	}
	for r := range held {
		ch <- prometheus.MustNewConstMetric(evictionHeldDesc, prometheus.GaugeValue, 1, r)
	}
}
