package dashboard

// The state endpoint: one JSON document with everything the page shows,
// built per request from the snapshot, the self-preservation reading, the
// holds on eviction and the cluster members. Field names are the page's (dashboard.js), not
// Eureka's: nothing but the page is meant to read this document, and its
// shape may change with the page.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/httpapi"
)

// State is the document GET /dashboard/api/state serves.
type State struct {
	// Now is the server's clock in epoch milliseconds; the page ages
	// leases against it, not against the browser's clock.
	Now int64 `json:"now"`
	// RefreshMillis is how often the page should poll.
	RefreshMillis int64 `json:"refreshMillis"`
	// Node describes the node that serves the page.
	Node NodeInfo `json:"node"`
	// Members are the cluster members in name order, this node included.
	Members []MemberInfo `json:"members"`
	// SelfPreservation is this node's reading.
	SelfPreservation httpapi.SelfPreservation `json:"selfPreservation"`
	// Eviction is every hold on this node's eviction, self-preservation's
	// and the cluster layer's, as GET /admin/eviction serves it.
	Eviction httpapi.Eviction `json:"eviction"`
	// Regions is this cluster's region and the remote regions' states, as
	// GET /admin/regions serves them; absent without remote regions.
	Regions any `json:"regions,omitempty"`
	// Registry summarizes the snapshot.
	Registry RegistryInfo `json:"registry"`
	// Applications are the snapshot's applications in name order ([] when
	// there are none); null when the request's known parameter names this
	// snapshot, which the page holds already.
	Applications []AppInfo `json:"applications"`
}

// NodeInfo describes this node.
type NodeInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Started is when the node started, epoch milliseconds.
	Started int64 `json:"started"`
	// UptimeSeconds is the time since Started.
	UptimeSeconds float64 `json:"uptimeSeconds"`
	// Ready is false while the initial cluster sync runs: the registry
	// shown may be partial, and Eureka reads on this node answer 403.
	Ready bool `json:"ready"`
	// ReadyReason says why the node is not ready (its seeds refuse it,
	// none is reachable, it is syncing) or that it serves alone.
	ReadyReason string `json:"readyReason,omitempty"`
}

// MemberInfo is one cluster member as httpapi.Cluster reports it, plus
// whether it is this node.
type MemberInfo struct {
	httpapi.Member
	// Self marks the node serving the page.
	Self bool `json:"self,omitempty"`
}

// RegistryInfo summarizes a snapshot.
type RegistryInfo struct {
	// Token names the snapshot: the page sends it back as the known
	// parameter, and gets the applications only when it has changed.
	Token string `json:"token"`
	// Applications and Instances count the snapshot's contents.
	Applications int `json:"applications"`
	Instances    int `json:"instances"`
	// Statuses counts instances by status (absent statuses are left out).
	Statuses map[string]int `json:"statuses"`
}

// AppInfo is one application with its instances, in id order.
type AppInfo struct {
	Name      string         `json:"name"`
	Instances []InstanceInfo `json:"instances"`
}

// InstanceInfo is what the page shows of one instance. Timestamps are epoch
// milliseconds, 0 meaning unknown.
type InstanceInfo struct {
	ID       string `json:"id"`
	App      string `json:"app"`
	HostName string `json:"hostName"`
	IPAddr   string `json:"ipAddr"`
	// Port and SecurePort are 0 when disabled.
	Port       int    `json:"port,omitempty"`
	SecurePort int    `json:"securePort,omitempty"`
	Status     string `json:"status"`
	// OverriddenStatus is the status override in force; absent when none
	// (Eureka's UNKNOWN).
	OverriddenStatus string `json:"overriddenStatus,omitempty"`
	// Zone is the metadata "zone" (Spring's), else the data center's
	// availability-zone (AWS).
	Zone           string            `json:"zone,omitempty"`
	DataCenter     string            `json:"dataCenter,omitempty"`
	VIPAddress     string            `json:"vipAddress,omitempty"`
	SecureVIP      string            `json:"secureVipAddress,omitempty"`
	HomePageURL    string            `json:"homePageUrl,omitempty"`
	StatusPageURL  string            `json:"statusPageUrl,omitempty"`
	HealthCheckURL string            `json:"healthCheckUrl,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	// Registered is when the lease began (the lease age counts from it).
	Registered int64 `json:"registered"`
	// LastRenewal is the last renewal recorded at the instance's last
	// change (see the package doc); LastUpdated is that change.
	LastRenewal int64 `json:"lastRenewal"`
	LastUpdated int64 `json:"lastUpdated"`
	// LeaseDurationSecs and RenewalIntervalSecs are the client's lease terms.
	LeaseDurationSecs   int `json:"leaseDurationSecs"`
	RenewalIntervalSecs int `json:"renewalIntervalSecs"`
}

// state serves GET /dashboard/api/state[?known=TOKEN]: the whole State, the
// applications left out when TOKEN names the current snapshot.
func (h *Handler) state(w http.ResponseWriter, r *http.Request) {
	st := h.State(r.URL.Query().Get("known"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(st) // a failed write means the client went away
}

// State builds the state document. known is the Registry.Token the caller
// already holds: when it names the current snapshot the applications are
// left out; "" always includes them.
func (h *Handler) State(known string) *State {
	now := h.cfg.Now()
	snap := h.cfg.View.Snapshot()
	sp := h.cfg.Registry.SelfPreservation()
	st := &State{
		Now:           now.UnixMilli(),
		RefreshMillis: h.cfg.Refresh.Milliseconds(),
		Node: NodeInfo{
			Name:          h.cfg.NodeName,
			Version:       h.cfg.Version,
			Started:       h.cfg.Started.UnixMilli(),
			UptimeSeconds: now.Sub(h.cfg.Started).Seconds(),
			Ready:         h.cfg.Ready == nil || h.cfg.Ready(),
		},
		Members:          h.members(sp),
		SelfPreservation: httpapi.NewSelfPreservation(sp),
		Eviction:         httpapi.NewEviction(sp, h.cfg.EvictionHolds),
		Registry:         RegistryInfo{Token: h.epoch + "." + strconv.FormatUint(snap.Version(), 10), Statuses: map[string]int{}},
	}
	if h.cfg.ReadyReason != nil {
		st.Node.ReadyReason = h.cfg.ReadyReason()
	}
	if h.cfg.Regions != nil {
		st.Regions = h.cfg.Regions.Report()
	}
	apps := make([]AppInfo, 0)
	snap.Apps(func(a *view.App) bool {
		st.Registry.Applications++
		info := AppInfo{Name: a.Name(), Instances: make([]InstanceInfo, 0, a.Len())}
		for in := range a.All() {
			st.Registry.Instances++
			st.Registry.Statuses[string(in.Status)]++
			info.Instances = append(info.Instances, instanceInfo(in))
		}
		apps = append(apps, info)
		return true
	})
	if known != st.Registry.Token {
		st.Applications = apps
	}
	return st
}

// members lists the cluster members in name order. This node's
// self-preservation decision and renewal count are filled from sp when the
// cluster layer has not reported them (always for a single node), as
// /cluster/members does.
func (h *Handler) members(sp *actors.SelfPreservationStatus) []MemberInfo {
	var ms []httpapi.Member
	if h.cfg.Cluster != nil {
		ms = h.cfg.Cluster.Members()
	} else {
		ms = []httpapi.Member{{Name: h.cfg.NodeName, State: "alive", Owned: 1}}
	}
	out := make([]MemberInfo, len(ms))
	for i, m := range ms {
		out[i] = MemberInfo{Member: m, Self: m.Name == h.cfg.NodeName}
		if !out[i].Self || sp == nil {
			continue
		}
		if m.SelfPreservation == "" {
			out[i].SelfPreservation = sp.Reason
		}
		if m.RenewalsLastWindow == 0 {
			out[i].RenewalsLastWindow = sp.LocalRenewals
		}
	}
	slices.SortFunc(out, func(a, b MemberInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func instanceInfo(in *actors.Instance) InstanceInfo {
	info := InstanceInfo{
		ID:                  in.ID(),
		App:                 in.App,
		HostName:            in.HostName,
		IPAddr:              in.IPAddr,
		Status:              string(in.Status),
		Zone:                Zone(in),
		DataCenter:          in.DataCenterInfo.Name,
		VIPAddress:          in.VIPAddress,
		SecureVIP:           in.SecureVIPAddress,
		HomePageURL:         in.HomePageURL,
		StatusPageURL:       in.StatusPageURL,
		HealthCheckURL:      in.HealthCheckURL,
		Metadata:            in.Metadata,
		Registered:          in.LeaseInfo.RegistrationTimestamp,
		LastRenewal:         in.LeaseInfo.LastRenewalTimestamp,
		LastUpdated:         in.LastUpdatedTimestamp,
		LeaseDurationSecs:   in.LeaseInfo.DurationSecs,
		RenewalIntervalSecs: in.LeaseInfo.RenewalIntervalSecs,
	}
	if in.Port.Enabled {
		info.Port = in.Port.Number
	}
	if in.SecurePort.Enabled {
		info.SecurePort = in.SecurePort.Number
	}
	if in.OverriddenStatus != "" && in.OverriddenStatus != actors.StatusUnknown {
		info.OverriddenStatus = string(in.OverriddenStatus)
	}
	return info
}

// Zone is the zone an instance says it runs in: its metadata "zone" (what
// Spring Cloud clients set, eureka.instance.metadata-map.zone), else its
// data center's "availability-zone" (AWS clients); "" when neither is set.
func Zone(in *actors.Instance) string {
	if z := in.Metadata["zone"]; z != "" {
		return z
	}
	return in.DataCenterInfo.Metadata["availability-zone"]
}
