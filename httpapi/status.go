package httpapi

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
)

// statusInfo is Eureka's StatusInfo (GET status): general statistics, the
// cluster replicas and this server's own instance.
//
// Heureka adds a selfPreservation element after isHeathly: what this node
// decided about self-preservation and why. It is a typed object of its own
// rather than more generalStats entries, because generalStats is a map of
// strings and the figures are numbers and booleans; nothing that reads
// Eureka's StatusInfo looks past the fields it knows. A readiness element
// and an eviction element (GET /admin/eviction's document: every hold on
// eviction, self-preservation's and the cluster layer's) follow it.
type statusInfo struct {
	general  [][2]string // name, value in Eureka's order
	replicas [3]string   // registered, available, unavailable
	self     *actors.Instance
	healthy  bool
	sp       SelfPreservation
	// readiness says why the node is (not) ready, or that it serves alone.
	readiness readinessJSON
	// eviction is every hold on eviction (eviction.go).
	eviction Eviction
}

// readinessJSON is /eureka/status's readiness element.
type readinessJSON struct {
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
}

// defaultStatusPort is reported when the request carries no local address
// (the handler was called without an http.Server).
const defaultStatusPort = 8761

// localPort is the TCP port the request arrived on. It comes from the
// connection (http.LocalAddrContextKey) rather than from a Config field:
// that is the port clients really reach, also when the listen address asks
// for a free port (":0") or several listeners share one handler, and it
// needs nothing from whoever assembles the node.
func localPort(r *http.Request) int {
	switch a := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr:
		return a.Port
	case net.Addr:
		if _, p, err := net.SplitHostPort(a.String()); err == nil {
			if n, err := strconv.Atoi(p); err == nil {
				return n
			}
		}
	}
	return defaultStatusPort
}

// localIP is the IP address the request arrived on (from the connection,
// like localPort): an address, never a host name, as Eureka's ipAddr is.
// "127.0.0.1" when the request carries none.
func localIP(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if host, _, err := net.SplitHostPort(a.String()); err == nil {
			if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
				return ip.String()
			}
		}
	}
	return "127.0.0.1"
}

func (s *Server) statusInfo(r *http.Request) statusInfo {
	var st statusInfo
	up := time.Since(s.started)
	days := int(up.Hours()) / 24
	hm := fmt.Sprintf("%02d:%02d", int(up.Hours())%24, int(up.Minutes())%60)
	if days > 0 {
		hm = fmt.Sprintf("%d days %s", days, hm)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	used := ms.HeapInuse / (1 << 20)
	total := ms.Sys / (1 << 20)
	pct := 0
	if total > 0 {
		pct = int(used * 100 / total)
	}
	env := os.Getenv("HEUREKA_ENVIRONMENT")
	if env == "" {
		env = "production"
	}
	st.general = [][2]string{
		{"environment", env},
		{"num-of-cpus", fmt.Sprint(runtime.NumCPU())},
		{"total-avail-memory", fmt.Sprintf("%dmb", total)},
		{"current-memory-usage", fmt.Sprintf("%dmb (%d%%)", used, pct)},
		{"server-uptime", hm},
	}
	var reg, avail, unavail []string
	if s.cfg.Cluster != nil {
		for _, m := range s.cfg.Cluster.Members() {
			if m.Name == s.cfg.NodeName || m.State == "left" {
				continue
			}
			url := m.URL
			if url == "" {
				url = m.Address
			}
			reg = append(reg, url)
			if m.State == "alive" {
				avail = append(avail, url+",")
			} else {
				unavail = append(unavail, url+",")
			}
		}
	}
	st.replicas = [3]string{strings.Join(reg, ", "), strings.Join(avail, ""), strings.Join(unavail, "")}
	host, _ := os.Hostname()
	// The node as Eureka describes its own instance: registered and up
	// since the API started, renewed now.
	since, now := s.started.UnixMilli(), time.Now().UnixMilli()
	st.self = &actors.Instance{InstanceID: s.cfg.NodeName, HostName: host, App: "HEUREKA", IPAddr: localIP(r),
		Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown, Port: actors.Port{Number: localPort(r), Enabled: true},
		CountryID: 1, DataCenterInfo: actors.DataCenterInfo{Name: "MyOwn"},
		LeaseInfo: actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90,
			RegistrationTimestamp: since, LastRenewalTimestamp: now, ServiceUpTimestamp: since},
		IsCoordinatingDiscoveryServer: true, Metadata: map[string]string{"version": s.cfg.Version},
		LastUpdatedTimestamp: since, LastDirtyTimestamp: since}
	st.healthy = s.cfg.Ready == nil || s.cfg.Ready()
	st.readiness.Ready = st.healthy
	if s.cfg.ReadyReason != nil {
		st.readiness.Reason = s.cfg.ReadyReason()
	}
	if src, ok := s.cfg.Registry.(skewSource); ok {
		// Ready for reads, but writes are refused (refusedForSkew): the
		// status says so next to why it is ready.
		if sk := src.HLC().Skew(); sk.Behind {
			st.readiness.Reason = strings.TrimPrefix(st.readiness.Reason+"; writes refused with 503: "+sk.Reason, "; ")
		}
	}
	sp := s.cfg.Registry.SelfPreservation()
	st.sp = NewSelfPreservation(sp)
	st.eviction = NewEviction(sp, s.cfg.EvictionHolds)
	return st
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st := s.statusInfo(r)
	f := entityFormat(r)
	var b strings.Builder
	if f == 0 { // JSON
		b.WriteString(`{"generalStats":{`)
		for i, kv := range st.general {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s:%s", jsonString(kv[0]), jsonString(kv[1]))
		}
		fmt.Fprintf(&b, `},"applicationStats":{"registered-replicas":%s,"available-replicas":%s,"unavailable-replicas":%s},"instanceInfo":`,
			jsonString(st.replicas[0]), jsonString(st.replicas[1]), jsonString(st.replicas[2]))
		inst := eureka.AppendInstanceDocument(nil, f, st.self)
		// Unwrap {"instance":…} to embed the object.
		b.Write(inst[len(`{"instance":`) : len(inst)-1])
		fmt.Fprintf(&b, `,"isHeathly":%t,"selfPreservation":%s,"readiness":%s,"eviction":%s`, st.healthy,
			marshalJSON(st.sp), marshalJSON(st.readiness), marshalJSON(st.eviction))
		if s.cfg.Regions != nil {
			fmt.Fprintf(&b, `,"regions":%s`, marshalJSON(s.cfg.Regions.Report()))
		}
		b.WriteByte('}')
	} else {
		// The root and instanceInfo are named as the reference server
		// names them (XStream's class alias; found by clients/reference).
		b.WriteString("<com.netflix.eureka.util.StatusInfo>\n  <generalStats>\n")
		for _, kv := range st.general {
			fmt.Fprintf(&b, "    <%s>%s</%s>\n", kv[0], escapeXMLText(kv[1]), kv[0])
		}
		fmt.Fprintf(&b, "  </generalStats>\n  <applicationStats>\n    <registered-replicas>%s</registered-replicas>\n"+
			"    <available-replicas>%s</available-replicas>\n    <unavailable-replicas>%s</unavailable-replicas>\n  </applicationStats>\n",
			escapeXMLText(st.replicas[0]), escapeXMLText(st.replicas[1]), escapeXMLText(st.replicas[2]))
		inst := eureka.AppendInstanceDocument(nil, f, st.self)
		// Rename the <instance> document's root to instanceInfo.
		inst = bytes.TrimSuffix(bytes.TrimRight(inst, "\n"), []byte("</instance>"))
		b.WriteString("<instanceInfo")
		b.Write(bytes.TrimPrefix(inst, []byte("<instance")))
		b.WriteString("</instanceInfo>")
		fmt.Fprintf(&b, "\n  <isHeathly>%t</isHeathly>\n", st.healthy)
		appendSelfPreservationXML(&b, st.sp)
		fmt.Fprintf(&b, "  <readiness>\n    <ready>%t</ready>\n    <reason>%s</reason>\n  </readiness>\n",
			st.readiness.Ready, escapeXMLText(st.readiness.Reason))
		appendEvictionXML(&b, st.eviction)
		if s.cfg.Regions != nil {
			appendRegionsXML(&b, s.cfg.Regions.Report())
		}
		b.WriteString("</com.netflix.eureka.util.StatusInfo>")
	}
	writeEntity(w, http.StatusOK, f, []byte(b.String()))
}

// jsonString quotes s as a JSON string (Go's %q is not JSON: it writes
// \x01 or \xff escapes for control bytes and invalid UTF-8).
func jsonString(s string) string { return string(eureka.AppendJSONString(nil, s)) }

// escapeXMLText escapes s as XML character data, replacing characters XML
// cannot hold, so that the document stays well-formed.
func escapeXMLText(s string) string { return string(eureka.AppendXMLText(nil, s, false)) }
