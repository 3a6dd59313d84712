package reference_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
)

// step is one request sent to both servers.
type step struct {
	// kind names the kind of request (the test counts distinct kinds).
	kind   string
	method string
	// path is relative to the servers' /eureka base.
	path   string
	header map[string]string
	body   string
	// scratch sends the request to a scratch Heureka node instead of the
	// compared one: for input the reference rejects and Heureka accepts
	// on purpose (README row lenient-json), which would otherwise leave
	// an instance in one registry only.
	scratch bool
	// refBefore is set by the runner: the reference's previous answer to
	// the same request, if any (compact-vip-stale compares with it).
	refBefore *answer
	// noAfter: no reads after this write (the tail's, after which the
	// registries differ on purpose).
	noAfter bool
	// expect names README rows whose explanations apply only where a
	// case asks for them (knownDiff.onlyExpected).
	expect []string
}

// Header presets.
var (
	jsonAccept    = map[string]string{"Accept": "application/json"}
	xmlAccept     = map[string]string{"Accept": "application/xml"}
	noAccept      = map[string]string{}
	compactJSON   = map[string]string{"Accept": "application/json", "X-Eureka-Accept": "compact"}
	compactXML    = map[string]string{"Accept": "application/xml", "X-Eureka-Accept": "compact"}
	fullExplicit  = map[string]string{"Accept": "application/json", "X-Eureka-Accept": "full"}
	gzipJSON      = map[string]string{"Accept": "application/json", "Accept-Encoding": "gzip"}
	gzipXML       = map[string]string{"Accept": "application/xml", "Accept-Encoding": "gzip"}
	jsonBody      = map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	xmlBody       = map[string]string{"Content-Type": "application/xml", "Accept": "application/xml"}
	replicaHeader = map[string]string{"x-netflix-discovery-replication": "true", "Accept": "application/json"}
)

// The instances the cases use.
var (
	order1 = base("ORDER-SERVICE", "10.0.0.1:order-service:8080", 1).with(func(i *inst) {
		i.metadata = map[string]string{"zone": "zone-a", "management.port": "8081", "under_score": "x"}
		i.securePort, i.secureEnabled = 8443, true
	})
	order2 = base("ORDER-SERVICE", "10.0.0.2:order-service:8080", 2).with(func(i *inst) {
		i.metadata = map[string]string{"zone": "zone-b", "under_score": "y"}
	})
	user1 = base("USER-SERVICE", "i-0abc", 3).with(func(i *inst) {
		i.dc = "Amazon"
		i.amazon = map[string]string{"instance-id": "i-0abc", "availability-zone": "us-east-1a",
			"public-ipv4": "1.2.3.4", "local-ipv4": "10.0.0.3", "ami-id": "ami-1"}
		i.vip = "user-service,shared-vip"
	})
	user2 = base("USER-SERVICE", "10.0.0.4:user-service:9090", 4).with(func(i *inst) {
		i.dc, i.port, i.status = "Netflix", 9090, "STARTING"
		i.vip = "shared-vip"
	})
	// noID has no instanceId: the id is its hostName.
	noID = base("PAY-SERVICE", "", 5).with(func(i *inst) {
		i.host = "pay-host-5"
		i.securePort = 443
	})
	loose = base("LOOSE-SERVICE", "10.0.0.6:loose:8080", 6).with(func(i *inst) {
		i.noWrapper = true
	})
	noClass = base("NOCLASS-SERVICE", "10.0.0.7:noclass:8080", 7).with(func(i *inst) {
		i.noClass = true
	})
	xmlNoSecure = base("XML-SERVICE", "10.0.0.8:xml:8080", 8).with(func(i *inst) {
		i.metadata = map[string]string{"k": "v & w"}
	})
	edge1 = base("EDGE1-SERVICE", "10.0.0.21:edge1:8080", 21).with(func(i *inst) { i.overridden = "OUT_OF_SERVICE" })
	edge2 = base("EDGE2-SERVICE", "10.0.0.22:edge2:8080", 22)
	edge3 = base("EDGE3-SERVICE", "10.0.0.23:edge3:8080", 23).with(func(i *inst) {
		i.extra = map[string]string{"appGroupName": "edge-group", "asgName": "edge-asg", "sid": "s1"}
	})
	edge4 = base("EDGE4-SERVICE", "10.0.0.24:edge4:8080", 24).with(func(i *inst) {
		i.extra = map[string]string{"appGroupName": "xml-group", "asgName": "xml-asg"}
		i.metadata = map[string]string{"a_b": "1", "c.d": "2"}
	})
	edge5 = base("EDGE5-SERVICE", "10.0.0.25:edge5:8080", 25).with(func(i *inst) {
		i.securePort, i.secureEnabled = 443, false
	})
	edge6 = base("EDGE6-SERVICE", "id with space", 26).with(func(i *inst) {
		i.metadata = map[string]string{"city": "Zürich", "emoji": "🚀", "html": "<b>&</b>"}
	})
	edge7  = base("EDGE7-SERVICE", "10.0.0.27:edge7:8080", 27).with(func(i *inst) { i.app = "edge7-service" })
	edge8  = base("EDGE8-SERVICE", "10.0.0.28:edge8:8080", 28)
	edge9  = base("EDGE9-SERVICE", "10.0.0.29:edge9:8080", 29)
	edge10 = base("EDGE10-SERVICE", "10.0.0.30:edge10:8080", 30)
	edge11 = base("EDGE11-SERVICE", "10.0.0.33:edge11:8080", 33)
	edge12 = base("EDGE12-SERVICE", "10.0.0.34:edge12:8080", 34)
	edge13 = base("EDGE13-SERVICE", "i-0def", 35).with(func(i *inst) {
		i.dc = "Amazon"
		i.amazon = map[string]string{"instance-id": "i-0def", "availability-zone": "eu-west-1b", "public-hostname": "ec2.example"}
	})
	tail1   = base("TAIL1-SERVICE", "10.0.0.31:tail1:8080", 31)
	tail2   = base("TAIL2-SERVICE", "10.0.0.32:tail2:8080", 32)
	gzipped = base("GZIP-SERVICE", "10.0.0.10:gzip:8080", 10)
	badUTF8 = base("UTF8-SERVICE", "10.0.0.11:utf8:8080", 11).with(func(i *inst) {
		i.metadata = map[string]string{"zone": "zone-u"}
	})
	noLease = base("NOLEASE-SERVICE", "10.0.0.9:nolease:8080", 9).with(func(i *inst) {
		i.duration = 0
		i.dirty = 0
	})
)

// gzipString is s gzipped.
func gzipString(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.String()
}

func get(kind, path string, h map[string]string) step {
	return step{kind: kind, method: http.MethodGet, path: path, header: h}
}

func put(kind, path string) step {
	return step{kind: kind, method: http.MethodPut, path: path, header: noAccept}
}

func del(kind, path string) step {
	return step{kind: kind, method: http.MethodDelete, path: path, header: noAccept}
}

func registerJSON(kind string, i inst) step {
	return step{kind: kind, method: http.MethodPost, path: "/apps/" + i.app, header: jsonBody, body: i.json()}
}

func registerXML(kind string, i inst) step {
	return step{kind: kind, method: http.MethodPost, path: "/apps/" + i.app, header: xmlBody, body: i.xml()}
}

// instPath is the path of an instance.
func instPath(i inst) string {
	id := i.id
	if id == "" {
		id = i.host
	}
	return "/apps/" + i.app + "/" + id
}

// readsOf is every read of the registry, in each format and encoding.
func readsOf() []step {
	var s []step
	for _, f := range []struct {
		name string
		h    map[string]string
	}{
		{"JSON", jsonAccept}, {"XML", xmlAccept}, {"no Accept", noAccept}, {"compact JSON", compactJSON},
		{"compact XML", compactXML}, {"explicit full JSON", fullExplicit}, {"gzip JSON", gzipJSON}, {"gzip XML", gzipXML},
	} {
		s = append(s,
			get("GET apps "+f.name, "/apps", f.h),
			get("GET apps/delta "+f.name, "/apps/delta", f.h),
			get("GET apps/{app} "+f.name, "/apps/ORDER-SERVICE", f.h),
			get("GET vips "+f.name, "/vips/shared-vip", f.h),
			get("GET svips "+f.name, "/svips/order-service-secure", f.h),
		)
	}
	for _, f := range []struct {
		name string
		h    map[string]string
	}{{"JSON", jsonAccept}, {"XML", xmlAccept}, {"no Accept", noAccept}, {"gzip JSON", gzipJSON}} {
		s = append(s,
			get("GET apps/{app}/{id} "+f.name, instPath(order1), f.h),
			get("GET instances/{id} "+f.name, "/instances/"+order1.id, f.h),
		)
	}
	return append(s,
		get("GET apps/ (trailing slash)", "/apps/", jsonAccept),
		get("GET apps/delta/ (trailing slash)", "/apps/delta/", jsonAccept),
		get("GET v2/apps", "/v2/apps", jsonAccept),
		get("GET apps?regions=", "/apps?regions=us-west-2,eu-west-1", jsonAccept),
		get("GET apps/delta?regions=", "/apps/delta?regions=us-west-2", jsonAccept),
		get("GET apps/{app} lower-case", "/apps/order-service", jsonAccept),
		get("GET apps/{app} amazon", "/apps/USER-SERVICE", jsonAccept),
		get("GET apps/{app} amazon XML", "/apps/USER-SERVICE", xmlAccept),
		get("GET apps/{app} unknown", "/apps/NO-SUCH-APP", jsonAccept),
		get("GET apps/{app}/{id} unknown id", "/apps/ORDER-SERVICE/no-such-id", jsonAccept),
		get("GET apps/{app}/{id} unknown app", "/apps/NO-SUCH-APP/"+order1.id, jsonAccept),
		get("GET apps/{app}/{id} wrong app", "/apps/USER-SERVICE/"+order1.id, jsonAccept),
		get("GET apps/{app}/{id} lower-case app", "/apps/order-service/"+order1.id, jsonAccept),
		get("GET instances/{id} unknown", "/instances/no-such-id", jsonAccept),
		get("GET instances/{id} amazon", "/instances/"+user1.id, jsonAccept),
		get("GET vips unknown", "/vips/no-such-vip", jsonAccept),
		get("GET vips single of a list", "/vips/user-service", jsonAccept),
		get("GET svips unknown", "/svips/no-such-vip", xmlAccept),
	)
}

// afterWrite is what the test reads after every write, to see its effect.
func afterWrite() []step {
	return []step{
		get("GET apps/delta JSON", "/apps/delta", jsonAccept),
		get("GET apps JSON", "/apps", jsonAccept),
	}
}

// catalogue is the request sequence. Reads after writes are added by the
// runner (afterWrite).
func catalogue() []step {
	s := []step{
		get("GET apps JSON", "/apps", jsonAccept),
		get("GET apps XML", "/apps", xmlAccept),
		get("GET apps/delta JSON", "/apps/delta", jsonAccept),
		get("GET apps/delta XML", "/apps/delta", xmlAccept),
		get("GET vips unknown", "/vips/no-such-vip", jsonAccept),

		// Registrations, in both formats and with the variants clients send.
		registerJSON("register JSON (metadata, securePort enabled, MyOwn)", order1),
		registerXML("register XML (metadata, no securePort)", order2),
		registerJSON("register JSON (Amazon dataCenterInfo, VIP list)", user1),
		registerXML("register XML (Netflix dataCenterInfo, STARTING)", user2),
		registerJSON("register JSON (no instanceId)", noID),
		registerJSON("register JSON (no instance wrapper)", loose).onScratch(),
		registerJSON("register JSON (dataCenterInfo without @class)", noClass).onScratch(),
		{kind: "register JSON (Amazon metadata before name)", method: http.MethodPost, path: "/apps/USER-SERVICE",
			header: jsonBody, scratch: true, body: strings.Replace(user1.json(),
				`"name":"Amazon","metadata":{"ami-id":"ami-1","availability-zone":"us-east-1a","instance-id":"i-0abc","local-ipv4":"10.0.0.3","public-ipv4":"1.2.3.4"}`,
				`"metadata":{"ami-id":"ami-1","availability-zone":"us-east-1a","instance-id":"i-0abc","local-ipv4":"10.0.0.3","public-ipv4":"1.2.3.4"},"name":"Amazon"`, 1)},
		registerXML("register XML (escaped metadata value)", xmlNoSecure),
		registerJSON("register JSON (no leaseInfo, no lastDirtyTimestamp)", noLease),
		{kind: "register JSON lower-case app in path", method: http.MethodPost, path: "/apps/order-service",
			header: jsonBody, body: order1.json()},
	}
	s = append(s, readsOf()...)
	s = append(s,
		// Validation, each of Eureka's messages.
		registerJSON("register mismatched app", order1.with(func(i *inst) { i.app = "OTHER" })).at("/apps/ORDER-SERVICE"),
		registerJSON("register missing hostName", order1.with(func(i *inst) { i.host = "" })),
		registerJSON("register missing ipAddr", order1.with(func(i *inst) { i.ip = "" })),
		registerJSON("register missing app", order1.with(func(i *inst) { i.app = "" })).at("/apps/ORDER-SERVICE"),
		registerJSON("register missing instanceId and hostName", order1.with(func(i *inst) { i.id, i.host = "", "" })),
		registerJSON("register missing dataCenterInfo", order1.with(func(i *inst) { i.dc = "" })),
		registerJSON("register missing dataCenterInfo name", order1.with(func(i *inst) { i.dc = "-" })),
		registerXML("register XML missing hostName", order2.with(func(i *inst) { i.host = "" })),
		step{kind: "register malformed JSON", method: http.MethodPost, path: "/apps/ORDER-SERVICE", header: jsonBody,
			body: `{"instance":{"hostName":`},
		step{kind: "register malformed XML", method: http.MethodPost, path: "/apps/ORDER-SERVICE", header: xmlBody,
			body: `<instance><hostName>h</instance>`},
		step{kind: "register empty JSON object", method: http.MethodPost, path: "/apps/ORDER-SERVICE", header: jsonBody,
			body: `{}`},
		step{kind: "register text/plain body", method: http.MethodPost, path: "/apps/ORDER-SERVICE",
			header: map[string]string{"Content-Type": "text/plain"}, body: order1.json()},

		// Renewals.
		put("renew", instPath(order1)),
		put("renew lastDirtyTimestamp equal", instPath(order1)+fmt.Sprintf("?status=UP&lastDirtyTimestamp=%d", order1.dirty)),
		put("renew lastDirtyTimestamp older", instPath(order1)+fmt.Sprintf("?status=UP&lastDirtyTimestamp=%d", order1.dirty-1000)),
		put("renew lastDirtyTimestamp newer", instPath(order2)+fmt.Sprintf("?status=UP&lastDirtyTimestamp=%d", order2.dirty+1000)),
		step{kind: "renew replica older (409)", method: http.MethodPut, header: replicaHeader,
			path: instPath(order1) + fmt.Sprintf("?status=UP&lastDirtyTimestamp=%d", order1.dirty-5)},
		step{kind: "renew with {} JSON body", method: http.MethodPut, path: instPath(order1), header: jsonBody, body: `{}`},
		put("renew unknown instance", "/apps/ORDER-SERVICE/no-such-id"),
		put("renew unknown app", "/apps/NO-SUCH-APP/"+order1.id),
		put("renew bad lastDirtyTimestamp", instPath(order1)+"?lastDirtyTimestamp=yesterday"),

		// Status overrides.
		put("status override OUT_OF_SERVICE", instPath(order1)+"/status?value=OUT_OF_SERVICE"),
		put("status override same value again", instPath(order1)+"/status?value=OUT_OF_SERVICE"),
		get("GET serverinfo/statusoverrides", "/serverinfo/statusoverrides", jsonAccept),
		put("renew under override", instPath(order1)),
		registerJSON("re-register under override", order1),
		put("status override missing value", instPath(order1)+"/status"),
		put("status override lower-case value", instPath(order1)+"/status?value=up"),
		put("status override unknown instance", "/apps/ORDER-SERVICE/no-such-id/status?value=OUT_OF_SERVICE"),
		put("status override with lastDirtyTimestamp", instPath(order2)+fmt.Sprintf("/status?value=DOWN&lastDirtyTimestamp=%d", order2.dirty+7)),
		del("delete override with value=UP", instPath(order1)+"/status?value=UP"),
		del("delete override, none set", instPath(order1)+"/status"),
		del("delete override bad value", instPath(order1)+"/status?value=SIDEWAYS"),
		del("delete override unknown instance", "/apps/ORDER-SERVICE/no-such-id/status"),
		put("status override OUT_OF_SERVICE on amazon", instPath(user1)+"/status?value=OUT_OF_SERVICE"),
		del("delete override without value", instPath(user1)+"/status"),
		put("renew after override removed (UNKNOWN)", instPath(user1)),
		registerJSON("re-register after override removed", user1),

		// Metadata.
		put("metadata one key", instPath(order2)+"/metadata?zone=zone-c"),
		put("metadata several keys", instPath(order2)+"/metadata?a=1&b=2&under_score=z"),
		put("metadata unknown instance", "/apps/ORDER-SERVICE/no-such-id/metadata?a=1"),
		put("metadata no keys", instPath(order2)+"/metadata"),

		// Re-registration with an older lastDirtyTimestamp keeps the stored data.
		registerJSON("re-register older lastDirtyTimestamp", order2.with(func(i *inst) {
			i.dirty -= 100
			i.metadata = map[string]string{"stale": "true"}
		})),

		// Peer replication batch.
		step{kind: "peerreplication/batch", method: http.MethodPost, path: "/peerreplication/batch/", header: jsonBody,
			body: batchBody()},
		step{kind: "peerreplication/batch malformed", method: http.MethodPost, path: "/peerreplication/batch",
			header: jsonBody, body: `{"replicationList":[`},
		step{kind: "peerreplication/batch empty list", method: http.MethodPost, path: "/peerreplication/batch",
			header: jsonBody, body: `{"replicationList":[]}`},

		// Odd paths and methods.
		step{kind: "HEAD apps", method: http.MethodHead, path: "/apps", header: jsonAccept},
		get("GET unknown path", "/no-such-resource", jsonAccept),
		get("GET unknown path below apps", "/apps/ORDER-SERVICE/"+order1.id+"/nothing", jsonAccept),
		put("PUT asg status", "/asg/my-asg/status?value=ENABLED"),

		get("GET status JSON", "/status", jsonAccept),
		get("GET status XML", "/status", xmlAccept),
		get("GET v1/apps", "/v1/apps", jsonAccept),
		get("GET apps/delta/x", "/apps/delta/x", jsonAccept),
		get("GET instances/ without id", "/instances/", jsonAccept),
		step{kind: "POST apps (no app)", method: http.MethodPost, path: "/apps", header: jsonBody, body: "{}"},
		get("GET %2F in app name", "/apps/A%2FB", jsonAccept),
		put("renew %2F in instance id", "/apps/ORDER-SERVICE/a%2Fb"),
		step{kind: "register gzip body", method: http.MethodPost, path: "/apps/" + gzipped.app, scratch: true,
			header: map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"},
			body:   gzipString(gzipped.json())},

		// Edge cases of state: overrides against client-reported
		// statuses, replicas, re-registration after a cancel.
		registerJSON("register with overriddenStatus in body", edge1),
		get("GET apps/{app} edge JSON", "/apps/"+edge1.app, jsonAccept),
		registerJSON("re-register DOWN under override", edge1.with(func(i *inst) { i.status, i.overridden = "DOWN", "" })),
		put("renew DOWN instance under override", instPath(edge1)),
		del("delete override value=DOWN", instPath(edge1)+"/status?value=DOWN"),
		put("status override to current status (UP)", instPath(order1)+"/status?value=UP"),
		put("status override STARTING instance", instPath(user2)+"/status?value=OUT_OF_SERVICE"),
		put("renew STARTING under override", instPath(user2)),
		del("delete override STARTING instance", instPath(user2)+"/status"),
		put("metadata under override", instPath(order1)+"/metadata?new=1"),
		step{kind: "register replica", method: http.MethodPost, path: "/apps/" + edge2.app,
			header: map[string]string{"Content-Type": "application/json", "x-netflix-discovery-replication": "true"},
			body:   edge2.json()},
		step{kind: "renew replica newer", method: http.MethodPut, header: replicaHeader,
			path: instPath(edge2) + fmt.Sprintf("?status=UP&lastDirtyTimestamp=%d", edge2.dirty+1)},
		get("GET apps/{app}/{id} JSON", instPath(edge2), jsonAccept),
		step{kind: "cancel replica", method: http.MethodDelete, header: replicaHeader, path: instPath(edge2)},
		registerJSON("register extra fields (appGroupName, asgName, sid, countryId)", edge3),
		registerXML("register XML extra fields", edge4),
		registerJSON("register port and securePort disabled", edge5),
		registerJSON("register unicode metadata", edge6),
		registerJSON("register lower-case app in body", edge7),
		step{kind: "register to v2 path", method: http.MethodPost, path: "/v2/apps/" + edge8.app, header: jsonBody, body: edge8.json()},
		step{kind: "register JSON charset UTF-8", method: http.MethodPost, path: "/apps/" + edge9.app,
			header: map[string]string{"Content-Type": "application/json; charset=UTF-8"}, body: edge9.json()},
		step{kind: "register JSON charset UTF-16", method: http.MethodPost, path: "/apps/" + edge9.app,
			header: map[string]string{"Content-Type": "application/json; charset=UTF-16"}, body: edge9.json()},
		step{kind: "register without Content-Type (XML)", method: http.MethodPost, path: "/apps/" + edge10.app,
			header: noAccept, body: edge10.xml(), scratch: true},
		step{kind: "register JSON numeric strings and boolean @enabled", method: http.MethodPost, path: "/apps/" + edge11.app,
			header: jsonBody, body: strings.NewReplacer(`"$":8080`, `"$":"8080"`, `"countryId":1`, `"countryId":"1"`,
				`"@enabled":"true"`, `"@enabled":true`, `"durationInSecs":90`, `"durationInSecs":"90"`).Replace(edge11.json())},
		step{kind: "register XML overriddenStatus camel-case, port disabled", method: http.MethodPost, path: "/apps/" + edge12.app,
			header: xmlBody, body: strings.NewReplacer("<overriddenstatus>UNKNOWN</overriddenstatus>",
				"<overriddenStatus>OUT_OF_SERVICE</overriddenStatus>", `<port enabled="true">`, `<port enabled="false">`).Replace(edge12.xml())},
		registerXML("register XML Amazon", edge13),
		put("status override DOWN", instPath(edge13)+"/status?value=DOWN"),
		put("status override STARTING", instPath(edge13)+"/status?value=STARTING"),
		put("status override UNKNOWN", instPath(edge13)+"/status?value=UNKNOWN"),
		put("renew with status=DOWN param", instPath(edge13)+"?status=DOWN"),
		del("delete override value=DOWN, none set", instPath(edge11)+"/status?value=DOWN"),
		put("metadata odd keys", instPath(edge11)+"/metadata?a.b=1&x-y=2&empty="),
		put("metadata repeated key", instPath(edge11)+"/metadata?r=1&r=2"),
		get("GET apps Accept */*", "/apps", map[string]string{"Accept": "*/*"}),
		get("GET apps Accept JSON with charset", "/apps", map[string]string{"Accept": "application/json;charset=UTF-8"}),
		get("GET apps Accept XML, JSON", "/apps", map[string]string{"Accept": "application/xml, application/json"}),
		get("GET apps Accept text/html", "/apps", map[string]string{"Accept": "text/html"}),
		get("GET apps X-Eureka-Accept COMPACT", "/apps", map[string]string{"Accept": "application/json", "X-Eureka-Accept": "COMPACT"}),
		get("GET apps X-Eureka-Accept bogus", "/apps", map[string]string{"Accept": "application/json", "X-Eureka-Accept": "bogus"}),
		get("GET instance Accept */*", instPath(order1), map[string]string{"Accept": "*/*"}),
		get("GET instance Accept text/html", instPath(order1), map[string]string{"Accept": "text/html"}),
		get("GET apps/{app}/ trailing slash", "/apps/ORDER-SERVICE/", jsonAccept),
		get("GET instance id with space", "/apps/EDGE6-SERVICE/id%20with%20space", jsonAccept),
		step{kind: "peerreplication/batch unknown instances", method: http.MethodPost, path: "/peerreplication/batch",
			header: jsonBody, body: `{"replicationList":[` +
				`{"appName":"ORDER-SERVICE","id":"nobody","action":"Cancel"},` +
				`{"appName":"ORDER-SERVICE","id":"nobody","status":"OUT_OF_SERVICE","lastDirtyTimestamp":1,"action":"StatusUpdate"},` +
				`{"appName":"ORDER-SERVICE","id":"nobody","status":"UP","lastDirtyTimestamp":1,"action":"DeleteStatusOverride"}]}`},
		step{kind: "peerreplication/batch unknown action", method: http.MethodPost, path: "/peerreplication/batch",
			header: jsonBody, body: `{"replicationList":[{"appName":"ORDER-SERVICE","id":"nobody","action":"Frobnicate"}]}`},

		// Cancels.
		del("cancel", instPath(order2)),
		del("cancel again", instPath(order2)),
		del("cancel unknown app", "/apps/NO-SUCH-APP/x"),
		del("cancel no-instanceId instance", instPath(noID)),
	)
	s = append(s, readsOf()...)
	// Invalid UTF-8 in a body: both refuse it (README row body-decode-400).
	s = append(s, step{kind: "register invalid UTF-8", method: http.MethodPost, path: "/apps/" + badUTF8.app,
		header: jsonBody, body: strings.Replace(badUTF8.json(), "zone-u", "zone-\xff", 1)})
	return append(s, tail()...)
}

// tail are sequences after which the two registries differ on purpose:
// nothing is read after them but the instance GETs that show the
// difference, each naming the README row it expects.
func tail() []step {
	noAfter := func(s step) step {
		s.noAfter = true
		return s
	}
	expect := func(s step, id string) step {
		s.expect = append(s.expect, id)
		return s
	}
	return []step{
		// A replica's renewal with a newer lastDirtyTimestamp and an
		// override: 404 on both; Eureka keeps the override on the
		// instance without applying it.
		noAfter(step{kind: "register replica", method: http.MethodPost, path: "/apps/" + tail1.app,
			header: map[string]string{"Content-Type": "application/json", "x-netflix-discovery-replication": "true"},
			body:   tail1.json()}),
		noAfter(step{kind: "renew replica newer with overriddenstatus", method: http.MethodPut, header: replicaHeader,
			path: instPath(tail1) + fmt.Sprintf("?status=UP&lastDirtyTimestamp=%d&overriddenstatus=OUT_OF_SERVICE", tail1.dirty+1)}),
		expect(get("GET apps/{app}/{id} JSON", instPath(tail1), jsonAccept), "replica-renew-override"),
		expect(get("GET apps/{app}/{id} XML", instPath(tail1), xmlAccept), "replica-renew-override"),

		// A registration no newer than a cancel, arriving after it.
		noAfter(registerJSON("register", tail2)),
		noAfter(del("cancel", instPath(tail2))),
		noAfter(registerJSON("re-register after cancel, same lastDirtyTimestamp", tail2)),
		expect(get("GET apps/{app}/{id} JSON", instPath(tail2), jsonAccept), "cancel-outranks"),
		noAfter(registerJSON("re-register after cancel, newer lastDirtyTimestamp", tail2.with(func(i *inst) { i.dirty++ }))),
		get("GET apps/{app}/{id} JSON", instPath(tail2), jsonAccept),
	}
}

// onScratch returns the step sent to the scratch node.
func (s step) onScratch() step {
	s.scratch = true
	return s
}

// at returns the step with another path.
func (s step) at(path string) step {
	s.path = path
	return s
}

// batchBody is a peer batch with every action, in the shape Eureka peers
// send.
func batchBody() string {
	peer := base("PEER-SERVICE", "10.0.0.20:peer:8080", 20)
	body := peer.json()
	// The batch carries the instance unwrapped.
	unwrapped := strings.TrimSuffix(strings.TrimPrefix(body, `{"instance":`), "}")
	return fmt.Sprintf(`{"replicationList":[`+
		`{"appName":"PEER-SERVICE","id":%[1]q,"lastDirtyTimestamp":%[2]d,"status":"UP","instanceInfo":%[3]s,"action":"Register"},`+
		`{"appName":"PEER-SERVICE","id":%[1]q,"lastDirtyTimestamp":%[2]d,"status":"UP","action":"Heartbeat"},`+
		`{"appName":"PEER-SERVICE","id":%[1]q,"lastDirtyTimestamp":%[4]d,"status":"UP","action":"Heartbeat"},`+
		`{"appName":"PEER-SERVICE","id":"nobody","lastDirtyTimestamp":%[2]d,"status":"UP","action":"Heartbeat"},`+
		`{"appName":"PEER-SERVICE","id":%[1]q,"lastDirtyTimestamp":%[2]d,"status":"OUT_OF_SERVICE","action":"StatusUpdate"},`+
		`{"appName":"PEER-SERVICE","id":%[1]q,"lastDirtyTimestamp":%[2]d,"status":"UP","action":"DeleteStatusOverride"},`+
		`{"appName":"PEER-SERVICE","id":"nobody","action":"Cancel"}`+
		`]}`, peer.id, peer.dirty, unwrapped, peer.dirty-10)
}
