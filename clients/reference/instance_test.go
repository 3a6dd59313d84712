package reference_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"
)

// inst is an instance the cases register, rendered as a Java client would
// send it (full JSON with the "instance" wrapper, or XStream XML).
type inst struct {
	app, id, host, ip, status string
	port                      int
	// securePort 0 leaves the securePort element out.
	securePort    int
	secureEnabled bool
	vip, svip     string
	// dc is the dataCenterInfo name ("MyOwn", "Amazon", "Netflix");
	// "" leaves dataCenterInfo out, "-" sends one without a name.
	dc string
	// noClass leaves @class (JSON) / class (XML) off dataCenterInfo.
	noClass   bool
	amazon    map[string]string // AmazonInfo metadata
	metadata  map[string]string
	dirty     int64 // lastDirtyTimestamp; 0 leaves it out
	duration  int   // leaseInfo.durationInSecs; 0 leaves leaseInfo out
	noWrapper bool  // JSON without the {"instance": …} wrapper
	// overridden is the overriddenStatus sent ("" sends UNKNOWN).
	overridden string
	// extra are more fields, sent as strings (JSON) or elements (XML).
	extra map[string]string
}

// base is a complete instance of app with id, on host 10.0.<n>.
func base(app, id string, n int) inst {
	ip := fmt.Sprintf("10.0.0.%d", n)
	return inst{
		app: app, id: id, host: ip, ip: ip, status: "UP", port: 8080,
		vip: strings.ToLower(app), svip: strings.ToLower(app) + "-secure",
		dc: "MyOwn", dirty: clientTime + int64(n), duration: leaseSecs,
	}
}

// leaseSecs is the lease the instances ask for: longer than any run, so
// that neither server evicts one mid-test (neither is renewed throughout).
const leaseSecs = 300

// clientTime is the epoch-ms base of the lastDirtyTimestamps the cases
// send (2025-08-06): far from the servers' clocks, so that the comparator
// compares them exactly.
const clientTime int64 = 1754500000000

// with returns a copy changed by f.
func (i inst) with(f func(*inst)) inst {
	i.metadata = maps.Clone(i.metadata)
	i.amazon = maps.Clone(i.amazon)
	i.extra = maps.Clone(i.extra)
	f(&i)
	return i
}

func (i inst) dcClass() string {
	if i.dc == "Amazon" {
		return "com.netflix.appinfo.AmazonInfo"
	}
	return "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"
}

// json renders the instance as the Java client's full JSON.
func (i inst) json() string {
	m := map[string]any{}
	put := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	put("instanceId", i.id, i.id != "")
	put("hostName", i.host, i.host != "")
	put("app", i.app, i.app != "")
	put("ipAddr", i.ip, i.ip != "")
	put("status", i.status, i.status != "")
	m["overriddenStatus"] = cmp.Or(i.overridden, "UNKNOWN")
	for k, v := range i.extra {
		m[k] = v
	}
	m["port"] = map[string]any{"$": i.port, "@enabled": "true"}
	put("securePort", map[string]any{"$": i.securePort, "@enabled": fmt.Sprint(i.secureEnabled)}, i.securePort != 0)
	m["countryId"] = 1
	if i.dc != "" {
		// In the Java client's order: Eureka's decoder reads an
		// AmazonInfo's metadata only after its name (with the metadata
		// first it answers 400).
		var parts []string
		if !i.noClass {
			parts = append(parts, `"@class":`+quote(i.dcClass()))
		}
		if i.dc != "-" {
			parts = append(parts, `"name":`+quote(i.dc))
		}
		if i.amazon != nil {
			b, _ := json.Marshal(i.amazon)
			parts = append(parts, `"metadata":`+string(b))
		}
		m["dataCenterInfo"] = json.RawMessage("{" + strings.Join(parts, ",") + "}")
	}
	if i.duration != 0 {
		m["leaseInfo"] = map[string]any{"renewalIntervalInSecs": 30, "durationInSecs": i.duration,
			"registrationTimestamp": 0, "lastRenewalTimestamp": 0, "evictionTimestamp": 0, "serviceUpTimestamp": 0}
	}
	if len(i.metadata) > 0 {
		m["metadata"] = i.metadata
	} else {
		m["metadata"] = map[string]any{"@class": "java.util.Collections$EmptyMap"}
	}
	url := fmt.Sprintf("http://%s:%d/", i.host, i.port)
	m["homePageUrl"] = url
	m["statusPageUrl"] = url + "actuator/info"
	m["healthCheckUrl"] = url + "actuator/health"
	put("vipAddress", i.vip, i.vip != "")
	put("secureVipAddress", i.svip, i.svip != "")
	m["isCoordinatingDiscoveryServer"] = "false"
	put("lastUpdatedTimestamp", fmt.Sprint(i.dirty), i.dirty != 0)
	put("lastDirtyTimestamp", fmt.Sprint(i.dirty), i.dirty != 0)
	var v any = map[string]any{"instance": m}
	if i.noWrapper {
		v = m
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// xml renders the instance as XStream XML.
func (i inst) xml() string {
	var b strings.Builder
	el := func(name, v string) {
		if v != "" {
			fmt.Fprintf(&b, "  <%s>%s</%s>\n", name, html.EscapeString(v), name)
		}
	}
	b.WriteString("<instance>\n")
	el("instanceId", i.id)
	el("hostName", i.host)
	el("app", i.app)
	el("ipAddr", i.ip)
	el("status", i.status)
	el("overriddenstatus", cmp.Or(i.overridden, "UNKNOWN"))
	for _, k := range slices.Sorted(maps.Keys(i.extra)) {
		el(k, i.extra[k])
	}
	fmt.Fprintf(&b, "  <port enabled=\"true\">%d</port>\n", i.port)
	if i.securePort != 0 {
		fmt.Fprintf(&b, "  <securePort enabled=\"%t\">%d</securePort>\n", i.secureEnabled, i.securePort)
	}
	el("countryId", "1")
	if i.dc != "" {
		class := ""
		if !i.noClass {
			class = fmt.Sprintf(" class=%q", i.dcClass())
		}
		fmt.Fprintf(&b, "  <dataCenterInfo%s>\n", class)
		if i.dc != "-" {
			fmt.Fprintf(&b, "    <name>%s</name>\n", i.dc)
		}
		if i.amazon != nil {
			b.WriteString("    <metadata>\n")
			for _, k := range slices.Sorted(maps.Keys(i.amazon)) {
				fmt.Fprintf(&b, "      <%s>%s</%s>\n", k, html.EscapeString(i.amazon[k]), k)
			}
			b.WriteString("    </metadata>\n")
		}
		b.WriteString("  </dataCenterInfo>\n")
	}
	if i.duration != 0 {
		fmt.Fprintf(&b, "  <leaseInfo>\n    <renewalIntervalInSecs>30</renewalIntervalInSecs>\n"+
			"    <durationInSecs>%d</durationInSecs>\n  </leaseInfo>\n", i.duration)
	}
	if len(i.metadata) > 0 {
		b.WriteString("  <metadata>\n")
		for _, k := range slices.Sorted(maps.Keys(i.metadata)) {
			// XStream escapes '_' in element names as "__".
			name := strings.ReplaceAll(k, "_", "__")
			fmt.Fprintf(&b, "    <%s>%s</%s>\n", name, html.EscapeString(i.metadata[k]), name)
		}
		b.WriteString("  </metadata>\n")
	} else {
		b.WriteString("  <metadata class=\"java.util.Collections$EmptyMap\"/>\n")
	}
	url := fmt.Sprintf("http://%s:%d/", i.host, i.port)
	el("homePageUrl", url)
	el("statusPageUrl", url+"actuator/info")
	el("healthCheckUrl", url+"actuator/health")
	el("vipAddress", i.vip)
	el("secureVipAddress", i.svip)
	el("isCoordinatingDiscoveryServer", "false")
	if i.dirty != 0 {
		el("lastUpdatedTimestamp", fmt.Sprint(i.dirty))
		el("lastDirtyTimestamp", fmt.Sprint(i.dirty))
	}
	b.WriteString("</instance>\n")
	return b.String()
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
