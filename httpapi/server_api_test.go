package httpapi_test

// End-to-end tests of the Eureka REST API: real HTTP on loopback against a
// real node (actors, view and HTTP server wired by node.Start), one subtest
// per single-node item of the conformance checklist in
// /work/shared/spec/eureka-protocol.md §9, plus the non-Eureka endpoints.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// Generous deadlines for polling: the tests run with -race on small machines.
const (
	waitFor = 15 * time.Second
	tick    = 10 * time.Millisecond
)

// Content types and headers used throughout.
const (
	ctJSON        = "application/json"
	ctXML         = "application/xml"
	replicaHeader = "x-netflix-discovery-replication"
)

// logBuffer collects a node's log lines; it is shown when a test fails.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is one running node and a client for it.
type harness struct {
	t      *testing.T
	node   *node.Node
	base   string // http://127.0.0.1:port
	client *http.Client
	logs   *logBuffer
}

// startNode starts a node on a free loopback port with Eureka's defaults,
// changed by mutate, and stops it when the test ends.
func startNode(t *testing.T, mutate ...func(*node.Config)) *harness {
	t.Helper()
	cfg := node.DefaultConfig("test-node")
	cfg.HTTPAddr = "127.0.0.1:0"
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, m := range mutate {
		m(&cfg)
	}
	n, err := node.Start(cfg)
	require.NoError(t, err)
	// No transparent gzip: the tests look at Content-Encoding themselves.
	tr := &http.Transport{DisableCompression: true}
	h := &harness{t: t, node: n, base: "http://" + n.Addr(), client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, logs: logs}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
		if t.Failed() {
			t.Logf("node log:\n%s", logs.String())
		}
	})
	return h
}

// response is a fully read HTTP response.
type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r response) String() string {
	return fmt.Sprintf("%d %q", r.code, r.body)
}

// do sends one request; hdr holds header name/value pairs.
func (h *harness) do(method, path string, body []byte, hdr ...string) response {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	require.NoError(h.t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := h.client.Do(req)
	require.NoError(h.t, err, "%s %s", method, path)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(h.t, err)
	return response{code: res.StatusCode, header: res.Header, body: b}
}

// get is a GET with an Accept header ("" for none).
func (h *harness) get(path, accept string) response {
	h.t.Helper()
	if accept == "" {
		return h.do(http.MethodGet, path, nil)
	}
	return h.do(http.MethodGet, path, nil, "Accept", accept)
}

// instance is a registration body being built: the instance object of the
// Java client's JSON (spec §3.7).
type instance map[string]any

// javaInstance returns the Java client's registration of instance n of app
// (spec §3.7): id "10.0.0.n:app:8080", host and IP 10.0.0.n, status UP.
func javaInstance(app string, n int) instance {
	ip := fmt.Sprintf("10.0.0.%d", n)
	lower := strings.ToLower(app)
	return instance{
		"instanceId":       fmt.Sprintf("%s:%s:8080", ip, lower),
		"hostName":         ip,
		"app":              strings.ToUpper(app),
		"ipAddr":           ip,
		"status":           "UP",
		"overriddenStatus": "UNKNOWN",
		"port":             map[string]any{"$": 8080, "@enabled": "true"},
		"securePort":       map[string]any{"$": 443, "@enabled": "false"},
		"countryId":        1,
		"dataCenterInfo": map[string]any{
			"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo",
			"name":   "MyOwn",
		},
		"leaseInfo": map[string]any{
			"renewalIntervalInSecs": 30, "durationInSecs": 90, "registrationTimestamp": 0,
			"lastRenewalTimestamp": 0, "evictionTimestamp": 0, "serviceUpTimestamp": 0,
		},
		"metadata":                      map[string]any{"management.port": "8081", "zone": "zone-a"},
		"homePageUrl":                   "http://" + ip + ":8080/",
		"statusPageUrl":                 "http://" + ip + ":8080/actuator/info",
		"healthCheckUrl":                "http://" + ip + ":8080/actuator/health",
		"vipAddress":                    lower,
		"secureVipAddress":              lower,
		"isCoordinatingDiscoveryServer": "false",
		"lastUpdatedTimestamp":          "1754499999870",
		"lastDirtyTimestamp":            "1754499999870",
	}
}

// with returns a copy of i with key set to v (nil deletes key).
func (i instance) with(key string, v any) instance {
	c := instance{}
	for k, val := range i {
		c[k] = val
	}
	if v == nil {
		delete(c, key)
	} else {
		c[key] = v
	}
	return c
}

func (i instance) id() string  { return i["instanceId"].(string) }
func (i instance) app() string { return i["app"].(string) }

// json returns the wrapped body {"instance":{…}}.
func (i instance) json() []byte {
	b, err := json.Marshal(map[string]any{"instance": map[string]any(i)})
	if err != nil {
		panic(err)
	}
	return b
}

// register POSTs i as the Java client does and requires 204 with no body.
func (h *harness) register(i instance) {
	h.t.Helper()
	res := h.do(http.MethodPost, "/eureka/v2/apps/"+i.app(), i.json(),
		"Content-Type", ctJSON, "Accept", ctJSON, "DiscoveryIdentity-Name", "DefaultClient")
	require.Equal(h.t, http.StatusNoContent, res.code, "register %s: %s", i.id(), res)
	require.Empty(h.t, res.body)
}

// wirePort is a JSON port: "$" a number, "@enabled" a string.
type wirePort struct {
	Number  int    `json:"$"`
	Enabled string `json:"@enabled"`
}

// wireInstance is the full JSON instance as a Java client reads it. The
// string-typed fields fail to decode if the server writes another JSON type.
type wireInstance struct {
	InstanceID       string   `json:"instanceId"`
	HostName         string   `json:"hostName"`
	App              string   `json:"app"`
	IPAddr           string   `json:"ipAddr"`
	Status           string   `json:"status"`
	OverriddenStatus string   `json:"overriddenStatus"`
	Port             wirePort `json:"port"`
	SecurePort       wirePort `json:"securePort"`
	CountryID        int      `json:"countryId"`
	DataCenterInfo   struct {
		Class    string            `json:"@class"`
		Name     string            `json:"name"`
		Metadata map[string]string `json:"metadata"`
	} `json:"dataCenterInfo"`
	LeaseInfo struct {
		RenewalIntervalInSecs int   `json:"renewalIntervalInSecs"`
		DurationInSecs        int   `json:"durationInSecs"`
		RegistrationTimestamp int64 `json:"registrationTimestamp"`
		LastRenewalTimestamp  int64 `json:"lastRenewalTimestamp"`
		EvictionTimestamp     int64 `json:"evictionTimestamp"`
		ServiceUpTimestamp    int64 `json:"serviceUpTimestamp"`
	} `json:"leaseInfo"`
	Metadata                      map[string]string `json:"metadata"`
	HomePageURL                   string            `json:"homePageUrl"`
	VIPAddress                    string            `json:"vipAddress"`
	SecureVIPAddress              string            `json:"secureVipAddress"`
	IsCoordinatingDiscoveryServer string            `json:"isCoordinatingDiscoveryServer"`
	LastUpdatedTimestamp          string            `json:"lastUpdatedTimestamp"`
	LastDirtyTimestamp            string            `json:"lastDirtyTimestamp"`
	ActionType                    string            `json:"actionType"`
}

// wireApp is one application element; instance must be an array.
type wireApp struct {
	Name     string         `json:"name"`
	Instance []wireInstance `json:"instance"`
}

// wireApps is an applications document; application must be an array.
type wireApps struct {
	Applications struct {
		VersionsDelta string    `json:"versions__delta"`
		AppsHashcode  string    `json:"apps__hashcode"`
		Application   []wireApp `json:"application"`
	} `json:"applications"`
}

// find returns the instance id of app, or nil.
func (d *wireApps) find(app, id string) *wireInstance {
	for _, a := range d.Applications.Application {
		if a.Name != app {
			continue
		}
		for i := range a.Instance {
			if a.Instance[i].InstanceID == id {
				return &a.Instance[i]
			}
		}
	}
	return nil
}

// ids lists "APP/id" of every instance in document order.
func (d *wireApps) ids() []string {
	var out []string
	for _, a := range d.Applications.Application {
		for _, in := range a.Instance {
			out = append(out, a.Name+"/"+in.InstanceID)
		}
	}
	return out
}

// decodeApps decodes an applications document strictly.
func decodeApps(t *testing.T, body []byte) *wireApps {
	t.Helper()
	var d wireApps
	require.NoError(t, json.Unmarshal(body, &d), "applications document: %s", body)
	return &d
}

// apps fetches GET path (an applications document) as JSON and decodes it.
func (h *harness) apps(path string) *wireApps {
	h.t.Helper()
	res := h.get(path, ctJSON)
	require.Equal(h.t, http.StatusOK, res.code, "GET %s: %s", path, res)
	require.Equal(h.t, ctJSON, res.header.Get("Content-Type"))
	return decodeApps(h.t, res.body)
}

// instance fetches GET apps/{app}/{id} as JSON: the status code and the
// decoded instance (nil unless 200).
func (h *harness) instance(app, id string) (int, *wireInstance) {
	h.t.Helper()
	res := h.get("/eureka/v2/apps/"+app+"/"+id, ctJSON)
	if res.code != http.StatusOK {
		return res.code, nil
	}
	var doc struct {
		Instance *wireInstance `json:"instance"`
	}
	require.NoError(h.t, json.Unmarshal(res.body, &doc), "instance document: %s", res.body)
	require.NotNil(h.t, doc.Instance, "instance document: %s", res.body)
	return res.code, doc.Instance
}

// mustInstance is instance, requiring 200.
func (h *harness) mustInstance(app, id string) *wireInstance {
	h.t.Helper()
	code, inst := h.instance(app, id)
	require.Equal(h.t, http.StatusOK, code, "GET instance %s/%s", app, id)
	return inst
}

// renew sends PUT apps/{app}/{id}?query with optional header pairs.
func (h *harness) renew(app, id, query string, hdr ...string) response {
	h.t.Helper()
	path := "/eureka/v2/apps/" + app + "/" + id
	if query != "" {
		path += "?" + query
	}
	return h.do(http.MethodPut, path, nil, hdr...)
}

// overrides fetches GET /eureka/serverinfo/statusoverrides.
func (h *harness) overrides() map[string]string {
	h.t.Helper()
	res := h.get("/eureka/serverinfo/statusoverrides", "")
	require.Equal(h.t, http.StatusOK, res.code)
	require.Equal(h.t, ctJSON, res.header.Get("Content-Type"))
	m := map[string]string{}
	require.NoError(h.t, json.Unmarshal(res.body, &m), "statusoverrides: %s", res.body)
	return m
}

// gunzip inflates a gzip body.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NoError(t, zr.Close())
	return out
}

// versionOf parses a versions__delta.
func versionOf(t *testing.T, d *wireApps) int64 {
	t.Helper()
	v, err := strconv.ParseInt(d.Applications.VersionsDelta, 10, 64)
	require.NoError(t, err, "versions__delta %q", d.Applications.VersionsDelta)
	return v
}

// xmlApps is the XML applications document, enough to check its shape.
type xmlApps struct {
	XMLName       xml.Name `xml:"applications"`
	VersionsDelta string   `xml:"versions__delta"`
	AppsHashcode  string   `xml:"apps__hashcode"`
	Application   []struct {
		Name     string        `xml:"name"`
		Instance []xmlInstance `xml:"instance"`
	} `xml:"application"`
}

type xmlPort struct {
	Enabled string `xml:"enabled,attr"`
	Number  string `xml:",chardata"`
}

type xmlInstance struct {
	InstanceID       string  `xml:"instanceId"`
	Status           string  `xml:"status"`
	OverriddenStatus string  `xml:"overriddenstatus"`
	Port             xmlPort `xml:"port"`
	SecurePort       xmlPort `xml:"securePort"`
	DataCenterInfo   struct {
		Class string `xml:"class,attr"`
		Name  string `xml:"name"`
	} `xml:"dataCenterInfo"`
	Metadata struct {
		Class string `xml:"class,attr"`
		Inner string `xml:",innerxml"`
	} `xml:"metadata"`
}

// fargoXML is fargo's XML registration (spec clients/fargo.md): no XML
// declaration, no class on dataCenterInfo, empty strings as empty elements,
// ports last.
const fargoXML = `<instance><instanceId>fargo-xml-1</instanceId><hostName>xml1.fargo.test</hostName><app>FARGO-XML</app>` +
	`<ipAddr>127.0.0.31</ipAddr><vipAddress>fargo-xml.vip</vipAddress><secureVipAddress></secureVipAddress>` +
	`<status>UP</status><overriddenstatus></overriddenstatus><homePageUrl>http://xml1.fargo.test:18101/</homePageUrl>` +
	`<countryId>1</countryId><dataCenterInfo><name>MyOwn</name><metadata></metadata></dataCenterInfo>` +
	`<leaseInfo><renewalIntervalInSecs>30</renewalIntervalInSecs><durationInSecs>90</durationInSecs></leaseInfo>` +
	`<metadata><owner>xml</owner><version>2.0.0</version></metadata>` +
	`<port enabled="true">18101</port><securePort enabled="false">19101</securePort></instance>`

// TestConformance runs the single-node items of the conformance checklist
// (spec §9), each on a fresh node.
func TestConformance(t *testing.T) {
	t.Run("01_register", func(t *testing.T) {
		h := startNode(t)

		// Java client JSON body, wrapped, @class, string auto-fields.
		java := javaInstance("ORDER-SERVICE", 11)
		h.register(java)
		got := h.mustInstance("ORDER-SERVICE", java.id())
		assert.Equal(t, "10.0.0.11", got.HostName)
		assert.Equal(t, "ORDER-SERVICE", got.App)
		assert.Equal(t, "UP", got.Status)
		assert.Equal(t, wirePort{8080, "true"}, got.Port)
		assert.Equal(t, wirePort{443, "false"}, got.SecurePort)
		assert.Equal(t, map[string]string{"management.port": "8081", "zone": "zone-a"}, got.Metadata)
		assert.Equal(t, "1754499999870", got.LastDirtyTimestamp)
		assert.Equal(t, "order-service", got.VIPAddress)

		// fargo's XML body.
		res := h.do(http.MethodPost, "/eureka/apps/FARGO-XML", []byte(fargoXML), "Content-Type", ctXML, "Accept", ctXML)
		require.Equal(t, http.StatusNoContent, res.code, "fargo XML: %s", res)
		assert.Empty(t, res.body)
		got = h.mustInstance("FARGO-XML", "fargo-xml-1")
		assert.Equal(t, wirePort{18101, "true"}, got.Port)
		assert.Equal(t, wirePort{19101, "false"}, got.SecurePort)
		assert.Equal(t, "UNKNOWN", got.OverriddenStatus)
		assert.Equal(t, map[string]string{"owner": "xml", "version": "2.0.0"}, got.Metadata)
		assert.Equal(t, "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", got.DataCenterInfo.Class)

		// Case-insensitive app: lower case in the path and the body
		// (eureka-js-client, fargo) lands in the upper-cased application.
		lower := javaInstance("js-alpha", 21).with("app", "js-alpha")
		res = h.do(http.MethodPost, "/eureka/apps/js-alpha", lower.json(), "Content-Type", ctJSON)
		require.Equal(t, http.StatusNoContent, res.code, "lower-case app: %s", res)
		got = h.mustInstance("Js-Alpha", lower.id())
		assert.Equal(t, "JS-ALPHA", got.App)
		assert.NotNil(t, h.apps("/eureka/apps").find("JS-ALPHA", lower.id()))
		// Mixed case on each side also matches.
		res = h.do(http.MethodPost, "/eureka/apps/Js-Alpha", javaInstance("js-alpha", 22).with("app", "JS-alpha").json(), "Content-Type", ctJSON)
		require.Equal(t, http.StatusNoContent, res.code, "mixed-case app: %s", res)

		// id falls back to hostName when instanceId is absent or "".
		noID := javaInstance("ORDER-SERVICE", 12).with("instanceId", nil)
		res = h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", noID.json(), "Content-Type", ctJSON)
		require.Equal(t, http.StatusNoContent, res.code, "%s", res)
		got = h.mustInstance("ORDER-SERVICE", "10.0.0.12")
		assert.Empty(t, got.InstanceID)
		assert.Equal(t, "10.0.0.12", got.HostName)
		emptyID := javaInstance("ORDER-SERVICE", 13).with("instanceId", "")
		res = h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", emptyID.json(), "Content-Type", ctJSON)
		require.Equal(t, http.StatusNoContent, res.code, "%s", res)
		h.mustInstance("ORDER-SERVICE", "10.0.0.13")

		// Amazon: without instanceId the id is the AWS instance-id; with
		// one and no instance-id, the server fills instance-id in.
		amazon := func(md map[string]any) map[string]any {
			return map[string]any{"@class": "com.netflix.appinfo.AmazonInfo", "name": "Amazon", "metadata": md}
		}
		aws := javaInstance("AWS", 14).with("instanceId", nil).with("dataCenterInfo", amazon(map[string]any{"instance-id": "i-0abc", "availability-zone": "eu-west-1a"}))
		res = h.do(http.MethodPost, "/eureka/apps/AWS", aws.json(), "Content-Type", ctJSON)
		require.Equal(t, http.StatusNoContent, res.code, "%s", res)
		got = h.mustInstance("AWS", "i-0abc")
		assert.Equal(t, "com.netflix.appinfo.AmazonInfo", got.DataCenterInfo.Class)
		assert.Equal(t, "eu-west-1a", got.DataCenterInfo.Metadata["availability-zone"])
		aws = javaInstance("AWS", 15).with("dataCenterInfo", amazon(map[string]any{}))
		res = h.do(http.MethodPost, "/eureka/apps/AWS", aws.json(), "Content-Type", ctJSON)
		require.Equal(t, http.StatusNoContent, res.code, "%s", res)
		assert.Equal(t, aws.id(), h.mustInstance("AWS", aws.id()).DataCenterInfo.Metadata["instance-id"])

		before := h.get("/eureka/apps", ctJSON).body

		// The 400 texts, in Eureka's order: each body fixes the previous
		// check's problem and trips the next one.
		dc := map[string]any{"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", "name": "MyOwn"}
		steps := []struct {
			body instance
			want string
		}{
			{instance{"dataCenterInfo": dc}, "Missing instanceId"},
			{instance{"instanceId": "x1", "dataCenterInfo": dc}, "Missing hostname"},
			{instance{"instanceId": "x1", "hostName": "h1", "dataCenterInfo": dc}, "Missing ip address"},
			{instance{"instanceId": "x1", "hostName": "h1", "ipAddr": "10.1.1.1", "dataCenterInfo": dc}, "Missing appName"},
			{instance{"instanceId": "x1", "hostName": "h1", "ipAddr": "10.1.1.1", "app": "other", "dataCenterInfo": dc},
				"Mismatched appName, expecting ORDER-SERVICE but was OTHER"},
			{instance{"instanceId": "x1", "hostName": "h1", "ipAddr": "10.1.1.1", "app": "order-service"}, "Missing dataCenterInfo"},
			{instance{"instanceId": "x1", "hostName": "h1", "ipAddr": "10.1.1.1", "app": "order-service",
				"dataCenterInfo": map[string]any{"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"}}, "Missing dataCenterInfo Name"},
		}
		for _, s := range steps {
			res := h.do(http.MethodPost, "/eureka/v2/apps/order-service", s.body.json(), "Content-Type", ctJSON, "Accept", ctJSON)
			assert.Equal(t, http.StatusBadRequest, res.code, "want %q: %s", s.want, res)
			// Plain text even though the request is JSON [quirk].
			assert.Equal(t, s.want, string(res.body))
			assert.True(t, strings.HasPrefix(res.header.Get("Content-Type"), "text/plain"), res.header.Get("Content-Type"))
		}
		assert.Equal(t, string(before), string(h.get("/eureka/apps", ctJSON).body), "rejected registrations changed the registry")
	})

	t.Run("02_lenient_input", func(t *testing.T) {
		h := startNode(t)
		// Decision pinned here: unlike Netflix's codec, heureka accepts a
		// bare instance object (no {"instance":…} wrapper), dataCenterInfo
		// without @class, "$" as a string, a bare port number or numeric
		// string, and "@enabled" as a JSON boolean; it always answers in
		// Eureka's canonical shapes.
		cases := []struct {
			name string
			body []byte
			id   string
			port wirePort
		}{
			{"unwrapped", mustJSON(javaInstance("LENIENT", 1)), "10.0.0.1:lenient:8080", wirePort{8080, "true"}},
			{"no @class", javaInstance("LENIENT", 2).with("dataCenterInfo", map[string]any{"name": "MyOwn"}).json(),
				"10.0.0.2:lenient:8080", wirePort{8080, "true"}},
			{"string port", javaInstance("LENIENT", 3).with("port", map[string]any{"$": "9003", "@enabled": "true"}).json(),
				"10.0.0.3:lenient:8080", wirePort{9003, "true"}},
			{"bare port", javaInstance("LENIENT", 4).with("port", 9004).json(), "10.0.0.4:lenient:8080", wirePort{9004, "true"}},
			{"bare string port", javaInstance("LENIENT", 5).with("port", "9005").json(), "10.0.0.5:lenient:8080", wirePort{9005, "true"}},
			{"boolean @enabled", javaInstance("LENIENT", 6).with("port", map[string]any{"$": 9006, "@enabled": true}).json(),
				"10.0.0.6:lenient:8080", wirePort{9006, "true"}},
			{"eureka-js-client README", []byte(`{"instance":{"app":"lenient","hostName":"js7","ipAddr":"10.0.0.7","port":8080,` +
				`"vipAddress":"js.vip","dataCenterInfo":{"name":"MyOwn"},"metadata":{"weight":10}}}`), "js7", wirePort{8080, "true"}},
		}
		for _, c := range cases {
			res := h.do(http.MethodPost, "/eureka/apps/lenient", c.body, "Content-Type", ctJSON)
			require.Equal(t, http.StatusNoContent, res.code, "%s: %s", c.name, res)
			got := h.mustInstance("LENIENT", c.id)
			assert.Equal(t, c.port, got.Port, c.name)
			assert.Equal(t, "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", got.DataCenterInfo.Class, c.name)
		}
		// Numeric metadata comes back as text (fargo needs strings).
		assert.Equal(t, "10", h.mustInstance("LENIENT", "js7").Metadata["weight"])
		// Unknown status strings become UNKNOWN, as Eureka's decoder does.
		res := h.do(http.MethodPost, "/eureka/apps/lenient", javaInstance("LENIENT", 8).with("status", "BOGUS").json(), "Content-Type", ctJSON)
		require.Equal(t, http.StatusNoContent, res.code, "%s", res)
		assert.Equal(t, "UNKNOWN", h.mustInstance("LENIENT", "10.0.0.8:lenient:8080").Status)
	})

	t.Run("03_apps_shape", func(t *testing.T) {
		h := startNode(t)
		h.register(javaInstance("ORDER-SERVICE", 11).with("metadata", map[string]any{}))

		res := h.get("/eureka/v2/apps", ctJSON)
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctJSON, res.header.Get("Content-Type"))
		raw := string(res.body)
		assert.True(t, strings.HasPrefix(raw, `{"applications":{"versions__delta":"1","apps__hashcode":"UP_1_","application":[{"name":"ORDER-SERVICE","instance":[{`), raw)
		for _, want := range []string{
			`"port":{"$":8080,"@enabled":"true"}`,
			`"securePort":{"$":443,"@enabled":"false"}`,
			`"countryId":1,`,
			`"overriddenStatus":"UNKNOWN"`,
			`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}`,
			`"metadata":{"@class":"java.util.Collections$EmptyMap"}`,
			`"isCoordinatingDiscoveryServer":"false"`,
			`"lastDirtyTimestamp":"1754499999870"`,
			`"actionType":"ADDED"`,
		} {
			assert.Contains(t, raw, want)
		}
		d := decodeApps(t, res.body) // strict types: string auto-fields, arrays
		require.Len(t, d.Applications.Application, 1)
		require.Len(t, d.Applications.Application[0].Instance, 1)
		in := d.Applications.Application[0].Instance[0]
		_, err := strconv.ParseInt(in.LastUpdatedTimestamp, 10, 64)
		assert.NoError(t, err, "lastUpdatedTimestamp must be a numeric string")
		assert.Positive(t, in.LeaseInfo.RegistrationTimestamp)

		// XML without Accept, with metadata keys that need XStream's escaping.
		h.register(javaInstance("ORDER-SERVICE", 12).with("metadata", map[string]any{"my_key": "v1", "cost$": "v2"}))
		res = h.get("/eureka/apps", "")
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctXML, res.header.Get("Content-Type"))
		raw = string(res.body)
		assert.True(t, strings.HasPrefix(raw, "<applications>"), "no XML declaration: %.60s", raw)
		for _, want := range []string{
			"<versions__delta>1</versions__delta>",
			"<apps__hashcode>UP_2_</apps__hashcode>",
			"<overriddenstatus>UNKNOWN</overriddenstatus>",
			`<port enabled="true">8080</port>`,
			`<securePort enabled="false">443</securePort>`,
			`<dataCenterInfo class="com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo">`,
			`<metadata class="java.util.Collections$EmptyMap"/>`,
			"<my__key>v1</my__key>",
			"<cost_->v2</cost_->",
		} {
			assert.Contains(t, raw, want)
		}
		assert.NotContains(t, raw, "overriddenStatus")
		var x xmlApps
		require.NoError(t, xml.Unmarshal(res.body, &x), "well-formed XML")
		require.Len(t, x.Application, 1)
		require.Len(t, x.Application[0].Instance, 2)
		assert.Equal(t, "1", x.VersionsDelta)
		assert.Equal(t, xmlPort{"true", "8080"}, x.Application[0].Instance[0].Port)
		assert.Equal(t, xmlPort{"false", "443"}, x.Application[0].Instance[0].SecurePort)

		// Metadata keys that cannot be XML names keep the XML well-formed
		// (they are left out there) and are all in JSON.
		odd := map[string]any{"a b": "1", "1st": "2", "x:y": "3", "<tag>": "4", "ok": "5"}
		h.register(javaInstance("ODD", 13).with("metadata", odd))
		res = h.get("/eureka/apps/ODD", "")
		require.Equal(t, http.StatusOK, res.code)
		var oddApp struct {
			Instance []xmlInstance `xml:"instance"`
		}
		require.NoError(t, xml.Unmarshal(res.body, &oddApp), "well-formed: %s", res.body)
		require.Len(t, oddApp.Instance, 1)
		assert.Equal(t, "ok", firstXMLChild(oddApp.Instance[0].Metadata.Inner))
		assert.NoError(t, xml.Unmarshal(h.get("/eureka/apps", "").body, new(xmlApps)))
		assert.Len(t, h.mustInstance("ODD", "10.0.0.13:odd:8080").Metadata, 5)

		// An empty registry.
		empty := startNode(t)
		res = empty.get("/eureka/apps", ctJSON)
		assert.Equal(t, `{"applications":{"versions__delta":"1","apps__hashcode":"","application":[]}}`, string(res.body))
		res = empty.get("/eureka/apps", "")
		assert.Contains(t, string(res.body), "<apps__hashcode></apps__hashcode>")
	})

	t.Run("04_gzip", func(t *testing.T) {
		h := startNode(t)
		// Enough instances for an application element of several gzip
		// chunks.
		for i := range 150 {
			h.register(javaInstance("ORDER-SERVICE", 100+i))
		}
		h.register(javaInstance("USER-SERVICE", 21))
		for _, path := range []string{"/eureka/apps", "/eureka/v2/apps/", "/eureka/apps/delta", "/eureka/v2/apps/delta",
			"/eureka/apps/ORDER-SERVICE", "/eureka/v2/apps/USER-SERVICE"} {
			for _, accept := range []string{ctJSON, ""} {
				plain := h.get(path, accept)
				require.Equal(t, http.StatusOK, plain.code)
				assert.Empty(t, plain.header.Get("Content-Encoding"), "%s: no gzip unless asked", path)
				hdr := []string{"Accept-Encoding", "gzip, deflate"}
				if accept != "" {
					hdr = append(hdr, "Accept", accept)
				}
				zipped := h.do(http.MethodGet, path, nil, hdr...)
				require.Equal(t, http.StatusOK, zipped.code)
				assert.Equal(t, "gzip", zipped.header.Get("Content-Encoding"), path)
				want := ctXML
				if accept != "" {
					want = ctJSON
				}
				assert.Equal(t, want, zipped.header.Get("Content-Type"), "%s: explicit Content-Type", path)
				assert.Equal(t, string(plain.body), string(gunzip(t, zipped.body)), "%s %q", path, accept)
			}
		}
	})

	t.Run("05_hashcode", func(t *testing.T) {
		h := startNode(t)
		hash := func() string { return h.apps("/eureka/apps").Applications.AppsHashcode }
		assert.Equal(t, "", hash())
		h.register(javaInstance("A", 1))
		h.register(javaInstance("A", 2))
		h.register(javaInstance("B", 3))
		assert.Equal(t, "UP_3_", hash())
		h.register(javaInstance("B", 4).with("status", "DOWN"))
		assert.Equal(t, "DOWN_1_UP_3_", hash(), "alphabetical, not UP_3_DOWN_1_")
		res := h.do(http.MethodPut, "/eureka/apps/A/10.0.0.1:a:8080/status?value=OUT_OF_SERVICE", nil)
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, "DOWN_1_OUT_OF_SERVICE_1_UP_2_", hash())
		require.Equal(t, http.StatusOK, h.do(http.MethodDelete, "/eureka/apps/B/10.0.0.4:b:8080", nil).code)
		assert.Equal(t, "OUT_OF_SERVICE_1_UP_2_", hash())
		h.register(javaInstance("C", 5).with("status", "STARTING"))
		assert.Equal(t, "OUT_OF_SERVICE_1_STARTING_1_UP_2_", hash())
	})

	t.Run("06_visible_at_once", func(t *testing.T) {
		h := startNode(t)
		for n := 1; n <= 5; n++ {
			i := javaInstance("FAST", n)
			h.register(i)
			// No response-cache lag by default: the very next reads see it.
			assert.NotNil(t, h.apps("/eureka/apps").find("FAST", i.id()), "GET apps right after register %d", n)
			assert.Equal(t, http.StatusOK, h.get("/eureka/apps/FAST/"+i.id(), ctJSON).code)
			assert.Len(t, h.apps("/eureka/apps").Applications.Application[0].Instance, n)
		}
	})

	t.Run("06_response_cache", func(t *testing.T) {
		// With Eureka's read-only response cache emulated, GET apps may lag
		// by up to the update interval, but instance GETs read the live
		// registry.
		h := startNode(t, func(c *node.Config) { c.View.CacheUpdateInterval = 300 * time.Millisecond })
		i := javaInstance("CACHED", 1)
		h.register(i)
		assert.Equal(t, http.StatusOK, h.get("/eureka/apps/CACHED/"+i.id(), ctJSON).code, "instance GET is immediate")
		require.Eventually(t, func() bool {
			return h.apps("/eureka/apps").find("CACHED", i.id()) != nil
		}, waitFor, tick, "visible in GET apps within the cache interval")
		require.Equal(t, http.StatusOK, h.do(http.MethodDelete, "/eureka/apps/CACHED/"+i.id(), nil).code)
		assert.Equal(t, http.StatusNotFound, h.get("/eureka/apps/CACHED/"+i.id(), ctJSON).code, "a cancel is immediate too")
		assert.Equal(t, http.StatusNotFound, h.get("/eureka/instances/"+i.id(), ctJSON).code)
	})

	t.Run("06_instances_by_id_is_live", func(t *testing.T) {
		h := startNode(t, func(c *node.Config) { c.View.CacheUpdateInterval = time.Hour })
		i := javaInstance("CACHED", 1)
		h.register(i)
		assert.Equal(t, http.StatusOK, h.get("/eureka/instances/"+i.id(), ctJSON).code)
	})

	t.Run("07_renew", func(t *testing.T) {
		h := startNode(t)
		res := h.renew("ORDER-SERVICE", "nobody", "")
		assert.Equal(t, http.StatusNotFound, res.code)

		i := javaInstance("ORDER-SERVICE", 11) // lastDirtyTimestamp 1754499999870
		h.register(i)
		id := i.id()
		const stored = 1754499999870

		res = h.renew("ORDER-SERVICE", id, "")
		assert.Equal(t, http.StatusOK, res.code)
		assert.Empty(t, res.body, "200 has no entity: Jersey would parse it")
		assert.Equal(t, "0", res.header.Get("Content-Length"))

		q := func(ts int64) string { return fmt.Sprintf("status=UP&lastDirtyTimestamp=%d", ts) }
		assert.Equal(t, http.StatusNotFound, h.renew("ORDER-SERVICE", id, q(stored+1)).code, "client holds newer data")
		assert.Equal(t, http.StatusOK, h.renew("ORDER-SERVICE", id, q(stored-1)).code, "older, from a client")
		assert.Equal(t, http.StatusOK, h.renew("ORDER-SERVICE", id, q(stored)).code, "equal")
		assert.Equal(t, http.StatusOK, h.renew("order-service", id, q(stored)).code, "app is case-insensitive")

		// Older, from a replica: 409 with the stored instance.
		res = h.renew("ORDER-SERVICE", id, q(stored-1), replicaHeader, "true", "Accept", ctJSON)
		require.Equal(t, http.StatusConflict, res.code, "%s", res)
		assert.Equal(t, ctJSON, res.header.Get("Content-Type"))
		var doc struct {
			Instance wireInstance `json:"instance"`
		}
		require.NoError(t, json.Unmarshal(res.body, &doc), "%s", res.body)
		assert.Equal(t, id, doc.Instance.InstanceID)
		assert.Equal(t, strconv.FormatInt(stored, 10), doc.Instance.LastDirtyTimestamp)
		// Only the exact header value "true" marks a replica.
		assert.Equal(t, http.StatusOK, h.renew("ORDER-SERVICE", id, q(stored-1), replicaHeader, "TRUE").code)
		// A replica with equal or newer data.
		assert.Equal(t, http.StatusOK, h.renew("ORDER-SERVICE", id, q(stored), replicaHeader, "true").code)
		assert.Equal(t, http.StatusNotFound, h.renew("ORDER-SERVICE", id, q(stored+1), replicaHeader, "true").code)

		// A replica with newer data and an override: the override is
		// stored before the 404.
		res = h.renew("ORDER-SERVICE", id, q(stored+5)+"&overriddenstatus=OUT_OF_SERVICE", replicaHeader, "true")
		assert.Equal(t, http.StatusNotFound, res.code)
		got := h.mustInstance("ORDER-SERVICE", id)
		assert.Equal(t, "OUT_OF_SERVICE", got.OverriddenStatus)
		assert.Equal(t, "OUT_OF_SERVICE", got.Status)

		// Non-numeric timestamp: 400 here, where Eureka throws (500) — a
		// documented, deliberate difference.
		res = h.renew("ORDER-SERVICE", id, "lastDirtyTimestamp=yesterday")
		assert.Equal(t, http.StatusBadRequest, res.code)
		assert.Contains(t, string(res.body), "lastDirtyTimestamp")

		// The lease is renewed even when the answer is 404 (newer client
		// data): lastRenewalTimestamp moves past the registration.
		reg := h.mustInstance("ORDER-SERVICE", id).LeaseInfo.RegistrationTimestamp
		require.Eventually(t, func() bool {
			require.Equal(t, http.StatusNotFound, h.renew("ORDER-SERVICE", id, q(stored+1)).code)
			return h.mustInstance("ORDER-SERVICE", id).LeaseInfo.LastRenewalTimestamp > reg
		}, waitFor, tick, "a 404 renewal must still renew the lease")
	})

	t.Run("08_renew_register_renew", func(t *testing.T) {
		h := startNode(t)
		i := javaInstance("FLOW", 1)
		assert.Equal(t, http.StatusNotFound, h.renew("FLOW", i.id(), "status=UP&lastDirtyTimestamp=1754499999870").code)
		h.register(i)
		assert.Equal(t, http.StatusOK, h.renew("FLOW", i.id(), "status=UP&lastDirtyTimestamp=1754499999870").code)
		assert.Equal(t, http.StatusOK, h.renew("flow", i.id(), "").code)
	})

	t.Run("09_cancel", func(t *testing.T) {
		h := startNode(t)
		i := javaInstance("ORDER-SERVICE", 11)
		keep := javaInstance("ORDER-SERVICE", 12)
		h.register(i)
		h.register(keep)
		require.Equal(t, http.StatusOK, h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+i.id()+"/status?value=OUT_OF_SERVICE", nil).code)
		require.Equal(t, map[string]string{i.id(): "OUT_OF_SERVICE"}, h.overrides())

		res := h.do(http.MethodDelete, "/eureka/v2/apps/order-service/"+i.id(), nil)
		assert.Equal(t, http.StatusOK, res.code)
		assert.Empty(t, res.body)
		assert.Equal(t, http.StatusNotFound, h.do(http.MethodDelete, "/eureka/v2/apps/ORDER-SERVICE/"+i.id(), nil).code)
		code, _ := h.instance("ORDER-SERVICE", i.id())
		assert.Equal(t, http.StatusNotFound, code)
		assert.Nil(t, h.apps("/eureka/apps").find("ORDER-SERVICE", i.id()))
		assert.NotNil(t, h.apps("/eureka/apps").find("ORDER-SERVICE", keep.id()))
		assert.Empty(t, h.overrides(), "cancel removes the override")

		delta := h.apps("/eureka/apps/delta")
		got := delta.find("ORDER-SERVICE", i.id())
		require.NotNil(t, got, "delta: %v", delta.ids())
		assert.Equal(t, "DELETED", got.ActionType)
		assert.Positive(t, got.LeaseInfo.EvictionTimestamp)

		// The override is gone: registering again as UP gives UP.
		h.register(i.with("lastDirtyTimestamp", "1754499999999"))
		assert.Equal(t, "UP", h.mustInstance("ORDER-SERVICE", i.id()).Status)
		assert.Equal(t, "ADDED", h.apps("/eureka/apps/delta").find("ORDER-SERVICE", i.id()).ActionType,
			"a cancel followed by a register ends as ADDED")
	})

	t.Run("10_override", func(t *testing.T) {
		h := startNode(t)
		i := javaInstance("ORDER-SERVICE", 12)
		h.register(i)
		id := i.id()
		status := func() (string, string) {
			in := h.mustInstance("ORDER-SERVICE", id)
			return in.Status, in.OverriddenStatus
		}

		// Setting the current status records nothing [quirk].
		require.Equal(t, http.StatusOK, h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+id+"/status?value=UP", nil).code)
		assert.Empty(t, h.overrides())

		res := h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+id+"/status?value=OUT_OF_SERVICE", nil)
		require.Equal(t, http.StatusOK, res.code, "%s", res)
		assert.Empty(t, res.body)
		st, ov := status()
		assert.Equal(t, "OUT_OF_SERVICE", st)
		assert.Equal(t, "OUT_OF_SERVICE", ov)
		assert.Equal(t, map[string]string{id: "OUT_OF_SERVICE"}, h.overrides())
		assert.Equal(t, "MODIFIED", h.apps("/eureka/apps/delta").find("ORDER-SERVICE", id).ActionType)

		// The client re-registers as UP with newer data: the override sticks.
		h.register(i.with("lastDirtyTimestamp", "1754500000000"))
		st, ov = status()
		assert.Equal(t, "OUT_OF_SERVICE", st, "override must survive a re-register")
		assert.Equal(t, "OUT_OF_SERVICE", ov)
		// Plain renewals (fargo, eureka-js-client) and Java ones keep it too.
		assert.Equal(t, http.StatusOK, h.renew("ORDER-SERVICE", id, "").code)
		assert.Equal(t, http.StatusOK, h.renew("ORDER-SERVICE", id, "status=UP&lastDirtyTimestamp=1754500000000").code)
		st, _ = status()
		assert.Equal(t, "OUT_OF_SERVICE", st, "override must survive a renew")
		assert.Equal(t, "OUT_OF_SERVICE", h.apps("/eureka/apps").find("ORDER-SERVICE", id).Status)
		assert.Equal(t, map[string]string{id: "OUT_OF_SERVICE"}, h.overrides())

		before := h.get("/eureka/apps", ctJSON).body
		// value must be an exact upper-case name: 400 here (Eureka 500).
		res = h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+id+"/status?value=up", nil)
		assert.Equal(t, http.StatusBadRequest, res.code, "%s", res)
		assert.Contains(t, string(res.body), `"up"`)
		res = h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+id+"/status", nil)
		assert.Equal(t, http.StatusBadRequest, res.code, "missing value: %s", res)
		assert.Contains(t, string(res.body), "missing status value")
		assert.Equal(t, string(before), string(h.get("/eureka/apps", ctJSON).body))

		res = h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/nobody/status?value=OUT_OF_SERVICE", nil)
		assert.Equal(t, http.StatusNotFound, res.code)
		res = h.do(http.MethodPut, "/eureka/apps/NO-APP/"+id+"/status?value=OUT_OF_SERVICE", nil)
		assert.Equal(t, http.StatusNotFound, res.code)
	})

	t.Run("11_delete_override", func(t *testing.T) {
		h := startNode(t)
		i := javaInstance("ORDER-SERVICE", 12)
		h.register(i)
		id := i.id()
		base := "/eureka/apps/ORDER-SERVICE/" + id + "/status"

		// Without value: status UNKNOWN, the next renew is 404 and the
		// client's re-registration brings it back UP.
		require.Equal(t, http.StatusOK, h.do(http.MethodPut, base+"?value=OUT_OF_SERVICE", nil).code)
		res := h.do(http.MethodDelete, base+"?lastDirtyTimestamp=1754499999870", nil)
		require.Equal(t, http.StatusOK, res.code, "%s", res)
		got := h.mustInstance("ORDER-SERVICE", id)
		assert.Equal(t, "UNKNOWN", got.Status)
		assert.Equal(t, "UNKNOWN", got.OverriddenStatus)
		assert.Empty(t, h.overrides())
		assert.Equal(t, http.StatusNotFound, h.renew("ORDER-SERVICE", id, "status=UP&lastDirtyTimestamp=1754499999870").code)
		h.register(i)
		assert.Equal(t, "UP", h.mustInstance("ORDER-SERVICE", id).Status)
		assert.Equal(t, http.StatusOK, h.renew("ORDER-SERVICE", id, "").code)

		// With value=UP: UP at once, renewals fine.
		require.Equal(t, http.StatusOK, h.do(http.MethodPut, base+"?value=OUT_OF_SERVICE", nil).code)
		require.Equal(t, http.StatusOK, h.do(http.MethodDelete, base+"?value=UP", nil).code)
		got = h.mustInstance("ORDER-SERVICE", id)
		assert.Equal(t, "UP", got.Status)
		assert.Equal(t, "UNKNOWN", got.OverriddenStatus)
		assert.Equal(t, http.StatusOK, h.renew("ORDER-SERVICE", id, "").code)
		assert.Equal(t, "UP", h.apps("/eureka/apps").find("ORDER-SERVICE", id).Status)

		// 200 even when there was no override; 404 for an unknown instance;
		// 400 for an invalid value (Eureka 500).
		assert.Equal(t, http.StatusOK, h.do(http.MethodDelete, base, nil).code)
		assert.Equal(t, "UP", h.mustInstance("ORDER-SERVICE", id).Status, "no override: nothing changes")
		assert.Equal(t, http.StatusNotFound, h.do(http.MethodDelete, "/eureka/apps/ORDER-SERVICE/nobody/status", nil).code)
		assert.Equal(t, http.StatusBadRequest, h.do(http.MethodDelete, base+"?value=Up", nil).code)
	})

	t.Run("12_client_down_beats_override", func(t *testing.T) {
		h := startNode(t)
		i := javaInstance("ORDER-SERVICE", 12)
		h.register(i)
		id := i.id()
		require.Equal(t, http.StatusOK, h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+id+"/status?value=OUT_OF_SERVICE", nil).code)
		h.register(i.with("status", "DOWN").with("lastDirtyTimestamp", "1754500000001"))
		assert.Equal(t, "DOWN", h.mustInstance("ORDER-SERVICE", id).Status)
		h.register(i.with("status", "STARTING").with("lastDirtyTimestamp", "1754500000002"))
		assert.Equal(t, "STARTING", h.mustInstance("ORDER-SERVICE", id).Status)
		// Back UP: the override, still held, applies again.
		h.register(i.with("status", "UP").with("lastDirtyTimestamp", "1754500000003"))
		assert.Equal(t, "OUT_OF_SERVICE", h.mustInstance("ORDER-SERVICE", id).Status)
	})

	t.Run("13_older_register_keeps_data", func(t *testing.T) {
		h := startNode(t)
		i := javaInstance("ORDER-SERVICE", 11).with("lastDirtyTimestamp", "2000").with("vipAddress", "vip-new")
		h.register(i)
		first := h.mustInstance("ORDER-SERVICE", i.id())
		older := i.with("lastDirtyTimestamp", "1000").with("vipAddress", "vip-old").
			with("metadata", map[string]any{"stale": "yes"})
		// Each older registration keeps the stored data but starts a new
		// lease: poll until the registration timestamp moves.
		require.Eventually(t, func() bool {
			h.register(older)
			got := h.mustInstance("ORDER-SERVICE", i.id())
			require.Equal(t, "vip-new", got.VIPAddress, "stored data must win")
			require.Equal(t, "2000", got.LastDirtyTimestamp)
			require.NotContains(t, got.Metadata, "stale")
			return got.LeaseInfo.RegistrationTimestamp > first.LeaseInfo.RegistrationTimestamp
		}, waitFor, tick, "an older registration must still reset the lease")
		// A newer one replaces the data.
		h.register(i.with("lastDirtyTimestamp", "3000").with("vipAddress", "vip-newest"))
		assert.Equal(t, "vip-newest", h.mustInstance("ORDER-SERVICE", i.id()).VIPAddress)
	})

	t.Run("14_metadata", func(t *testing.T) {
		h := startNode(t)
		i := javaInstance("ORDER-SERVICE", 11) // management.port, zone
		h.register(i)
		v1 := versionOf(t, h.apps("/eureka/apps/delta"))
		res := h.do(http.MethodPut, "/eureka/apps/order-service/"+i.id()+"/metadata?zone=zone-b&weight=10", nil)
		require.Equal(t, http.StatusOK, res.code, "%s", res)
		assert.Empty(t, res.body)
		want := map[string]string{"management.port": "8081", "zone": "zone-b", "weight": "10"}
		got := h.mustInstance("ORDER-SERVICE", i.id())
		assert.Equal(t, want, got.Metadata)
		assert.Equal(t, "1754499999870", got.LastDirtyTimestamp, "lastDirtyTimestamp unchanged")
		delta := h.apps("/eureka/apps/delta")
		assert.Greater(t, versionOf(t, delta), v1)
		d := delta.find("ORDER-SERVICE", i.id())
		require.NotNil(t, d)
		assert.Equal(t, "ADDED", d.ActionType)
		assert.Equal(t, want, d.Metadata)
		assert.Equal(t, want, h.apps("/eureka/apps").find("ORDER-SERVICE", i.id()).Metadata)
		assert.Equal(t, http.StatusNotFound, h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/nobody/metadata?a=b", nil).code)
	})

	t.Run("15_delta", func(t *testing.T) {
		h := startNode(t)
		res := h.get("/eureka/apps/delta", ctJSON)
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, `{"applications":{"versions__delta":"1","apps__hashcode":"","application":[]}}`, string(res.body))

		a1, a2, b1 := javaInstance("A", 1), javaInstance("A", 2), javaInstance("B", 3)
		h.register(a1)
		v1 := versionOf(t, h.apps("/eureka/apps/delta"))
		h.register(a2)
		h.register(b1)
		require.Equal(t, http.StatusOK, h.do(http.MethodPut, "/eureka/apps/A/"+a1.id()+"/status?value=OUT_OF_SERVICE", nil).code)
		require.Equal(t, http.StatusOK, h.do(http.MethodPut, "/eureka/apps/A/"+a1.id()+"/metadata?k=v", nil).code)
		require.Equal(t, http.StatusOK, h.do(http.MethodDelete, "/eureka/apps/A/"+a2.id(), nil).code)
		h.register(b1.with("lastDirtyTimestamp", "1754500000000"))
		// Renewals never enter the delta.
		require.Equal(t, http.StatusOK, h.renew("B", b1.id(), "").code)

		delta := h.apps("/eureka/apps/delta")
		full := h.apps("/eureka/apps")
		assert.Greater(t, versionOf(t, delta), v1, "versions__delta increases")
		assert.Equal(t, full.Applications.AppsHashcode, delta.Applications.AppsHashcode)
		assert.Equal(t, "OUT_OF_SERVICE_1_UP_1_", delta.Applications.AppsHashcode)
		ids := delta.ids()
		sorted := append([]string(nil), ids...)
		sort.Strings(sorted)
		assert.Equal(t, []string{"A/" + a1.id(), "A/" + a2.id(), "B/" + b1.id()}, sorted, "each changed instance once")
		got := delta.find("A", a1.id())
		assert.Equal(t, "OUT_OF_SERVICE", got.Status, "current state")
		assert.Equal(t, "v", got.Metadata["k"])
		assert.Equal(t, "DELETED", delta.find("A", a2.id()).ActionType)
		assert.Equal(t, "ADDED", delta.find("B", b1.id()).ActionType)
		assert.Equal(t, "1754500000000", delta.find("B", b1.id()).LastDirtyTimestamp)

		// A change bumps the version again; an idle registry does not.
		before := versionOf(t, h.apps("/eureka/apps/delta"))
		require.Equal(t, http.StatusOK, h.renew("A", a1.id(), "").code)
		assert.Equal(t, before, versionOf(t, h.apps("/eureka/apps/delta")), "a renewal is no change")
		h.register(javaInstance("C", 9))
		assert.Greater(t, versionOf(t, h.apps("/eureka/apps/delta")), before)

		// After the retention the delta is empty but still carries the
		// full registry's hashcode and "application":[].
		short := startNode(t, func(c *node.Config) {
			c.View.DeltaRetention = 300 * time.Millisecond
			c.View.DeltaRetentionInterval = 50 * time.Millisecond
		})
		short.register(javaInstance("A", 1))
		short.register(javaInstance("B", 2).with("status", "DOWN"))
		require.NotEmpty(t, short.apps("/eureka/apps/delta").ids())
		require.Eventually(t, func() bool {
			return len(short.apps("/eureka/apps/delta").Applications.Application) == 0
		}, waitFor, tick)
		raw := string(short.get("/eureka/apps/delta", ctJSON).body)
		assert.Regexp(t, `^\{"applications":\{"versions__delta":"\d+","apps__hashcode":"DOWN_1_UP_1_","application":\[\]\}\}$`, raw)
		assert.Len(t, short.apps("/eureka/apps").ids(), 2, "retention only trims the delta")
	})

	t.Run("16_eviction", func(t *testing.T) {
		h := startNode(t, func(c *node.Config) {
			c.Registry.EvictionInterval = 100 * time.Millisecond
			c.Registry.RenewalWindow = 100 * time.Millisecond
			c.Registry.SelfPreservation = false
		})
		silent := javaInstance("EVICT", 1).with("leaseInfo", map[string]any{"renewalIntervalInSecs": 1, "durationInSecs": 1})
		// The sibling's lease is longer only so that a stalled test machine
		// cannot fail it; it is renewed every poll.
		renewed := javaInstance("EVICT", 2).with("leaseInfo", map[string]any{"renewalIntervalInSecs": 1, "durationInSecs": 3})
		h.register(silent)
		h.register(renewed)
		got := h.mustInstance("EVICT", silent.id())
		assert.Equal(t, 1, got.LeaseInfo.DurationInSecs)
		require.Eventually(t, func() bool {
			require.Equal(t, http.StatusOK, h.renew("EVICT", renewed.id(), "").code, "the renewed sibling must survive")
			return h.apps("/eureka/apps").find("EVICT", silent.id()) == nil
		}, waitFor, 50*time.Millisecond, "an unrenewed instance must be evicted")
		code, _ := h.instance("EVICT", silent.id())
		assert.Equal(t, http.StatusNotFound, code)
		assert.NotNil(t, h.apps("/eureka/apps").find("EVICT", renewed.id()))
		d := h.apps("/eureka/apps/delta").find("EVICT", silent.id())
		require.NotNil(t, d)
		assert.Equal(t, "DELETED", d.ActionType)
		assert.Positive(t, d.LeaseInfo.EvictionTimestamp)
		assert.Equal(t, http.StatusNotFound, h.renew("EVICT", silent.id(), "").code)
	})

	t.Run("17_self_preservation", func(t *testing.T) {
		// Not on the brief's list, checked through /metrics: the threshold
		// follows registrations and cancels (int(expected × window/interval
		// × 0.85), expected starting at 1), lease expiration stays off while
		// renewals are at or below it, and eviction starts once they are
		// above it.
		h := startNode(t, func(c *node.Config) {
			c.Registry.EvictionInterval = 50 * time.Millisecond
			c.Registry.RenewalWindow = 200 * time.Millisecond
			c.Registry.ExpectedClientRenewalInterval = 100 * time.Millisecond
		})
		metric := func(name string) string {
			body := string(h.get("/metrics", "").body)
			for _, line := range strings.Split(body, "\n") {
				if v, ok := strings.CutPrefix(line, name+" "); ok {
					return v
				}
			}
			return "absent"
		}
		eventuallyMetric := func(name, want string) {
			t.Helper()
			require.Eventually(t, func() bool { return metric(name) == want }, waitFor, tick, "%s never became %s (is %s)", name, want, metric(name))
		}
		eventuallyMetric("heureka_renews_threshold", "1") // int(1 × 2 × 0.85)
		lease := map[string]any{"durationInSecs": 1}
		silent := javaInstance("SP", 1).with("leaseInfo", lease)
		renewed := javaInstance("SP", 2).with("leaseInfo", lease)
		gone := javaInstance("SP", 3)
		h.register(silent)
		h.register(renewed)
		h.register(gone)
		eventuallyMetric("heureka_renews_threshold", "6") // int(4 × 2 × 0.85)
		require.Equal(t, http.StatusOK, h.do(http.MethodDelete, "/eureka/apps/SP/"+gone.id(), nil).code)
		eventuallyMetric("heureka_renews_threshold", "5") // int(3 × 2 × 0.85)
		assert.Equal(t, "0", metric("heureka_lease_expiration_enabled"), "no renewals yet: self-preservation engaged")

		require.Eventually(t, func() bool {
			for i := 0; i < 5; i++ {
				require.Equal(t, http.StatusOK, h.renew("SP", renewed.id(), "").code)
			}
			return h.apps("/eureka/apps").find("SP", silent.id()) == nil
		}, waitFor, tick, "renewals above the threshold must enable eviction")
		assert.NotNil(t, h.apps("/eureka/apps").find("SP", renewed.id()))
		eventuallyMetric("heureka_renews_threshold", "3") // the eviction lowered expected to 2
	})

	t.Run("19_vip", func(t *testing.T) {
		h := startNode(t)
		h.register(javaInstance("A", 1).with("vipAddress", "alpha,beta").with("secureVipAddress", "sec-a,sec-b"))
		h.register(javaInstance("A", 2).with("vipAddress", "alphabet").with("secureVipAddress", "sec-a"))
		h.register(javaInstance("B", 3).with("vipAddress", "Alpha").with("secureVipAddress", "SEC-A"))
		h.register(javaInstance("B", 4).with("vipAddress", "beta").with("status", "DOWN").with("secureVipAddress", nil))
		cases := []struct {
			path string
			want []string
			hash string
		}{
			{"/eureka/vips/alpha", []string{"A/10.0.0.1:a:8080"}, "UP_1_"},
			{"/eureka/v2/vips/beta", []string{"A/10.0.0.1:a:8080", "B/10.0.0.4:b:8080"}, "DOWN_1_UP_1_"},
			{"/eureka/vips/Alpha", []string{"B/10.0.0.3:b:8080"}, "UP_1_"},
			{"/eureka/vips/alphabet", []string{"A/10.0.0.2:a:8080"}, "UP_1_"},
			{"/eureka/vips/alph", nil, ""},
			{"/eureka/vips/ALPHA", nil, ""},
			{"/eureka/svips/sec-a", []string{"A/10.0.0.1:a:8080", "A/10.0.0.2:a:8080"}, "UP_2_"},
			{"/eureka/v2/svips/sec-b", []string{"A/10.0.0.1:a:8080"}, "UP_1_"},
			{"/eureka/svips/SEC-A", []string{"B/10.0.0.3:b:8080"}, "UP_1_"},
			{"/eureka/svips/beta", nil, ""},
		}
		for _, c := range cases {
			d := h.apps(c.path)
			got := d.ids()
			sort.Strings(got)
			assert.Equal(t, c.want, got, c.path)
			assert.Equal(t, "-1", d.Applications.VersionsDelta, c.path)
			assert.Equal(t, c.hash, d.Applications.AppsHashcode, c.path)
		}
		raw := string(h.get("/eureka/vips/unknown", ctJSON).body)
		assert.Equal(t, `{"applications":{"versions__delta":"-1","apps__hashcode":"","application":[]}}`, raw)
		res := h.get("/eureka/vips/unknown", "")
		assert.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctXML, res.header.Get("Content-Type"))
		assert.Contains(t, string(res.body), "<versions__delta>-1</versions__delta>")
	})

	t.Run("20_batch", func(t *testing.T) {
		h := startNode(t)
		e := javaInstance("ORDER-SERVICE", 11).with("lastDirtyTimestamp", "5000")
		h.register(e)
		f := javaInstance("USER-SERVICE", 22)
		batch := map[string]any{"replicationList": []any{
			map[string]any{"appName": "USER-SERVICE", "id": f.id(), "lastDirtyTimestamp": 1754499999870, "status": "UP",
				"instanceInfo": map[string]any(f), "action": "Register"},
			map[string]any{"appName": "USER-SERVICE", "id": "bad", "status": "UP",
				"instanceInfo": map[string]any{"instanceId": "bad", "app": "USER-SERVICE"}, "action": "Register"},
			map[string]any{"appName": "ORDER-SERVICE", "id": e.id(), "lastDirtyTimestamp": 4000, "status": "UP", "action": "Heartbeat"},
			map[string]any{"appName": "ORDER-SERVICE", "id": e.id(), "lastDirtyTimestamp": 5000, "status": "UP", "action": "Heartbeat"},
			map[string]any{"appName": "ORDER-SERVICE", "id": "nobody", "lastDirtyTimestamp": 5000, "status": "UP", "action": "Heartbeat"},
			map[string]any{"appName": "ORDER-SERVICE", "id": e.id(), "lastDirtyTimestamp": 5000, "status": "OUT_OF_SERVICE", "action": "StatusUpdate"},
			map[string]any{"appName": "USER-SERVICE", "id": f.id(), "action": "Cancel"},
			map[string]any{"appName": "USER-SERVICE", "id": f.id(), "action": "Cancel"},
			// A registration after the cancel must be newer than the
			// cancelled record (the Java client stamps a new
			// lastDirtyTimestamp when it registers again); one no newer
			// was sent before the cancel and loses to it (actors
			// cancelOutranks).
			map[string]any{"appName": "user-service", "id": f.id(), "lastDirtyTimestamp": 1754499999871, "status": "UP",
				"instanceInfo": map[string]any(f.with("lastDirtyTimestamp", "1754499999871")), "action": "Register"},
		}}
		body := mustJSON(batch)
		res := h.do(http.MethodPost, "/eureka/v2/peerreplication/batch/", body, "Content-Type", ctJSON, "Accept", ctJSON)
		require.Equal(t, http.StatusOK, res.code, "%s", res)
		assert.Equal(t, ctJSON, res.header.Get("Content-Type"))
		var out struct {
			ResponseList []struct {
				StatusCode     int           `json:"statusCode"`
				ResponseEntity *wireInstance `json:"responseEntity"`
			} `json:"responseList"`
		}
		require.NoError(t, json.Unmarshal(res.body, &out), "%s", res.body)
		var codes []int
		for _, r := range out.ResponseList {
			codes = append(codes, r.StatusCode)
		}
		// One response per item, in order: the cancels see the register
		// before them, the second cancel sees the first.
		assert.Equal(t, []int{200, 200, 409, 200, 404, 200, 200, 404, 200}, codes)
		require.Len(t, out.ResponseList, 9)
		ent := out.ResponseList[2].ResponseEntity
		require.NotNil(t, ent, "409 carries the receiver's copy")
		assert.Equal(t, e.id(), ent.InstanceID)
		assert.Equal(t, "5000", ent.LastDirtyTimestamp)
		for i, r := range out.ResponseList {
			if i != 2 {
				assert.Nil(t, r.ResponseEntity, "item %d", i)
			}
		}
		assert.NotContains(t, string(res.body), `"instance":`, "responseEntity is unwrapped")

		assert.Equal(t, "OUT_OF_SERVICE", h.mustInstance("ORDER-SERVICE", e.id()).Status)
		assert.Equal(t, "UP", h.mustInstance("USER-SERVICE", f.id()).Status, "re-registered by the last item")
		code, _ := h.instance("USER-SERVICE", "bad")
		assert.Equal(t, http.StatusNotFound, code, "an invalid Register reports 200 but registers nothing")

		// A newer heartbeat with the sender's override stores the override
		// before answering 404 (spec §2 Renew, step 2).
		second := map[string]any{"replicationList": []any{
			map[string]any{"appName": "ORDER-SERVICE", "id": e.id(), "lastDirtyTimestamp": 5000, "status": "UP", "action": "DeleteStatusOverride"},
			map[string]any{"appName": "ORDER-SERVICE", "id": e.id(), "lastDirtyTimestamp": 9000, "status": "OUT_OF_SERVICE",
				"overriddenStatus": "OUT_OF_SERVICE", "action": "Heartbeat"},
			map[string]any{"appName": "ORDER-SERVICE", "id": e.id(), "action": "Explode"},
		}}
		res = h.do(http.MethodPost, "/eureka/peerreplication/batch", mustJSON(second), "Content-Type", ctJSON)
		require.Equal(t, http.StatusOK, res.code, "%s", res)
		assert.Equal(t, `{"responseList":[{"statusCode":200},{"statusCode":404},{"statusCode":400}]}`, string(res.body))
		got := h.mustInstance("ORDER-SERVICE", e.id())
		assert.Equal(t, "OUT_OF_SERVICE", got.Status)
		assert.Equal(t, "OUT_OF_SERVICE", got.OverriddenStatus)

		// The path without the trailing slash, and an empty batch.
		res = h.do(http.MethodPost, "/eureka/peerreplication/batch", []byte(`{"replicationList":[]}`), "Content-Type", ctJSON)
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, `{"responseList":[]}`, string(res.body))
	})

	t.Run("22_paths", func(t *testing.T) {
		h := startNode(t)
		h.register(javaInstance("ORDER-SERVICE", 11))
		// An application literally named DELTA.
		h.register(javaInstance("DELTA", 12))
		want := string(h.get("/eureka/v2/apps", ctJSON).body)
		for _, p := range []string{"/eureka/apps", "/eureka/apps/", "/eureka/v2/apps/"} {
			res := h.get(p, ctJSON)
			assert.Equal(t, http.StatusOK, res.code, p)
			assert.Equal(t, want, string(res.body), p)
		}
		wantDelta := string(h.get("/eureka/v2/apps/delta", ctJSON).body)
		assert.True(t, strings.HasPrefix(wantDelta, `{"applications":`), "GET apps/delta is the delta, never the app DELTA: %.80s", wantDelta)
		for _, p := range []string{"/eureka/apps/delta", "/eureka/apps/delta/", "/eureka/v2/apps/delta/"} {
			res := h.get(p, ctJSON)
			assert.Equal(t, http.StatusOK, res.code, p)
			assert.Equal(t, wantDelta, string(res.body), p)
		}
		// The DELTA app's instances stay reachable one by one, and the app
		// itself under any spelling but the literal "delta" (Jersey's
		// literal path segment is case-sensitive too).
		assert.Equal(t, http.StatusOK, h.get("/eureka/apps/DELTA/10.0.0.12:delta:8080", ctJSON).code)
		assert.Equal(t, http.StatusOK, h.renew("DELTA", "10.0.0.12:delta:8080", "").code)
		res := h.get("/eureka/apps/Delta", ctJSON)
		require.Equal(t, http.StatusOK, res.code)
		assert.True(t, strings.HasPrefix(string(res.body), `{"application":{"name":"DELTA"`), "%.60s", res.body)
		res = h.get("/eureka/apps/ORDER-SERVICE", ctJSON)
		assert.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, res.body, h.get("/eureka/v2/apps/order-service", ctJSON).body)
		// Remote regions are not federated, but the parameter is accepted.
		assert.Equal(t, want, string(h.get("/eureka/apps?regions=us-east-1,eu-west-1", ctJSON).body))
	})

	t.Run("23_unknown_or_emptied_app", func(t *testing.T) {
		h := startNode(t)
		for _, accept := range []string{ctJSON, ""} {
			res := h.get("/eureka/apps/NO-SUCH-APP", accept)
			assert.Equal(t, http.StatusNotFound, res.code)
			assert.Empty(t, res.body)
		}
		i := javaInstance("SHORT-LIVED", 1)
		h.register(i)
		res := h.get("/eureka/apps/short-lived", ctJSON)
		require.Equal(t, http.StatusOK, res.code)
		var doc struct {
			Application wireApp `json:"application"`
		}
		require.NoError(t, json.Unmarshal(res.body, &doc), "%s", res.body)
		assert.Equal(t, "SHORT-LIVED", doc.Application.Name)
		require.Len(t, doc.Application.Instance, 1)
		res = h.get("/eureka/apps/SHORT-LIVED", "")
		require.Equal(t, http.StatusOK, res.code)
		assert.True(t, strings.HasPrefix(string(res.body), "<application>"), "%.40s", res.body)

		require.Equal(t, http.StatusOK, h.do(http.MethodDelete, "/eureka/apps/SHORT-LIVED/"+i.id(), nil).code)
		for _, accept := range []string{ctJSON, ""} {
			res := h.get("/eureka/apps/SHORT-LIVED", accept)
			assert.Equal(t, http.StatusNotFound, res.code, "emptied app")
			assert.Empty(t, res.body)
		}
		assert.Empty(t, h.apps("/eureka/apps").Applications.Application, "apps with no instances are omitted")
	})

	t.Run("24_put_with_empty_json_body", func(t *testing.T) {
		h := startNode(t)
		i := javaInstance("ORDER-SERVICE", 11)
		h.register(i)
		// Jersey 3 sends PUTs with a {} JSON body: it is ignored.
		hdr := []string{"Content-Type", ctJSON, "Accept", ctJSON}
		res := h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+i.id()+"?status=UP&lastDirtyTimestamp=1754499999870", []byte("{}"), hdr...)
		assert.Equal(t, http.StatusOK, res.code, "%s", res)
		assert.Empty(t, res.body)
		res = h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+i.id()+"/status?value=OUT_OF_SERVICE", []byte("{}"), hdr...)
		assert.Equal(t, http.StatusOK, res.code, "%s", res)
		assert.Equal(t, "OUT_OF_SERVICE", h.mustInstance("ORDER-SERVICE", i.id()).Status)
		res = h.do(http.MethodDelete, "/eureka/apps/ORDER-SERVICE/"+i.id()+"/status?value=UP", []byte("{}"), hdr...)
		assert.Equal(t, http.StatusOK, res.code, "%s", res)
		res = h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+i.id()+"/metadata?x=y", []byte("{}"), hdr...)
		assert.Equal(t, http.StatusOK, res.code, "%s", res)
		assert.Equal(t, "y", h.mustInstance("ORDER-SERVICE", i.id()).Metadata["x"])
	})

	t.Run("25_parse_error_shapes", func(t *testing.T) {
		h := startNode(t)
		// Plain text, like every other 400 (Eureka answers JSON or XML here,
		// which no client reads), saying what is wrong.
		for _, ct := range []string{ctJSON, ctJSON + "; charset=UTF-8"} {
			res := h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", []byte(`{"instance":{"hostName":`), "Content-Type", ct)
			assert.Equal(t, http.StatusBadRequest, res.code)
			assert.Equal(t, "text/plain; charset=utf-8", res.header.Get("Content-Type"))
			assert.Equal(t, "cannot parse request body: json: unexpected EOF", string(res.body), "Content-Type %q", ct)
		}
		for _, ct := range []string{ctXML, "text/xml", ""} {
			hdr := []string{}
			if ct != "" {
				hdr = append(hdr, "Content-Type", ct)
			}
			res := h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", []byte(`<instance><hostName>h</instance>`), hdr...)
			assert.Equal(t, http.StatusBadRequest, res.code, "Content-Type %q", ct)
			assert.Equal(t, "text/plain; charset=utf-8", res.header.Get("Content-Type"))
			assert.Equal(t, "cannot parse request body: xml: XML syntax error on line 1: element <hostName> closed by </instance>",
				string(res.body), "Content-Type %q", ct)
		}
		// A 415 names the media type and what to send, not our package.
		res := h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", []byte(`{}`), "Content-Type", "text/plain")
		assert.Equal(t, http.StatusUnsupportedMediaType, res.code)
		assert.Equal(t, `unsupported media type: "text/plain"; send application/json or application/xml`, string(res.body))
	})
}

// mustJSON marshals v.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestEndpoints covers the reads outside the checklist (instance GETs, the
// compact format, status) and heureka's own endpoints.
func TestEndpoints(t *testing.T) {
	h := startNode(t)
	i := javaInstance("ORDER-SERVICE", 11)
	h.register(i)
	id := i.id()

	t.Run("instance_by_id", func(t *testing.T) {
		res := h.get("/eureka/v2/instances/"+id, ctJSON)
		require.Equal(t, http.StatusOK, res.code, "%s", res)
		assert.Equal(t, ctJSON, res.header.Get("Content-Type"))
		var doc struct {
			Instance wireInstance `json:"instance"`
		}
		require.NoError(t, json.Unmarshal(res.body, &doc))
		assert.Equal(t, id, doc.Instance.InstanceID)
		assert.Equal(t, "ORDER-SERVICE", doc.Instance.App)

		res = h.get("/eureka/instances/"+id, "")
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctXML, res.header.Get("Content-Type"))
		var x xmlInstance
		require.NoError(t, xml.Unmarshal(res.body, &x), "%s", res.body)
		assert.Equal(t, id, x.InstanceID)

		res = h.get("/eureka/instances/nobody", ctJSON)
		assert.Equal(t, http.StatusNotFound, res.code)
		assert.Empty(t, res.body)
	})

	t.Run("instance", func(t *testing.T) {
		res := h.get("/eureka/apps/order-service/"+id, ctJSON)
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctJSON, res.header.Get("Content-Type"))
		assert.True(t, strings.HasPrefix(string(res.body), `{"instance":{"instanceId":"`+id+`","hostName":"10.0.0.11","app":"ORDER-SERVICE"`), "%s", res.body)

		res = h.get("/eureka/v2/apps/ORDER-SERVICE/"+id, "")
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctXML, res.header.Get("Content-Type"))
		assert.True(t, strings.HasPrefix(string(res.body), "<instance>"), "%.40s", res.body)
		var x xmlInstance
		require.NoError(t, xml.Unmarshal(res.body, &x), "%s", res.body)
		assert.Equal(t, id, x.InstanceID)
		assert.Equal(t, "UP", x.Status)
		assert.Equal(t, xmlPort{"true", "8080"}, x.Port)
		assert.Equal(t, "management.port", firstXMLChild(x.Metadata.Inner))

		for _, p := range []string{"/eureka/apps/ORDER-SERVICE/nobody", "/eureka/apps/NO-APP/" + id} {
			for _, accept := range []string{ctJSON, ""} {
				res := h.get(p, accept)
				assert.Equal(t, http.StatusNotFound, res.code, p)
				assert.Empty(t, res.body, p)
			}
		}
		// Instance ids are case-sensitive.
		assert.Equal(t, http.StatusNotFound, h.get("/eureka/apps/ORDER-SERVICE/"+strings.ToUpper(id), ctJSON).code)
	})

	t.Run("compact", func(t *testing.T) {
		for _, path := range []string{"/eureka/apps", "/eureka/apps/delta", "/eureka/apps/ORDER-SERVICE"} {
			res := h.do(http.MethodGet, path, nil, "Accept", ctJSON, "X-Eureka-Accept", "Compact")
			require.Equal(t, http.StatusOK, res.code, path)
			raw := string(res.body)
			assert.Contains(t, raw, `"instanceId":"`+id+`"`, path)
			assert.Contains(t, raw, `"port":{"$":8080,"@enabled":"true"}`, path)
			for _, dropped := range []string{"leaseInfo", "metadata", "overriddenStatus", "homePageUrl", "countryId", "lastDirtyTimestamp"} {
				assert.NotContains(t, raw, `"`+dropped+`"`, "%s: compact drops %s", path, dropped)
			}
			var v any
			assert.NoError(t, json.Unmarshal(res.body, &v), "%s: %s", path, raw)

			res = h.do(http.MethodGet, path, nil, "X-Eureka-Accept", "compact")
			require.Equal(t, http.StatusOK, res.code)
			assert.Equal(t, ctXML, res.header.Get("Content-Type"))
			assert.NotContains(t, string(res.body), "<leaseInfo>", path)
			assert.NotContains(t, string(res.body), "<metadata", path)
			assert.NoError(t, xml.Unmarshal(res.body, new(struct{})), path)
		}
		// Unknown values mean full.
		res := h.do(http.MethodGet, "/eureka/apps", nil, "Accept", ctJSON, "X-Eureka-Accept", "tiny")
		assert.Contains(t, string(res.body), `"leaseInfo"`)
	})

	t.Run("status", func(t *testing.T) {
		res := h.get("/eureka/status", "")
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctXML, res.header.Get("Content-Type"))
		var x struct {
			XMLName      xml.Name `xml:"com.netflix.eureka.util.StatusInfo"`
			GeneralStats struct {
				Uptime string `xml:"server-uptime"`
				CPUs   string `xml:"num-of-cpus"`
			} `xml:"generalStats"`
			Instance xmlInstance `xml:"instanceInfo"`
			Healthy  string      `xml:"isHeathly"`
		}
		require.NoError(t, xml.Unmarshal(res.body, &x), "%s", res.body)
		assert.Regexp(t, `^(\d+ days )?\d\d:\d\d$`, x.GeneralStats.Uptime)
		assert.NotEmpty(t, x.GeneralStats.CPUs)
		assert.Equal(t, "test-node", x.Instance.InstanceID)
		assert.Equal(t, "true", x.Healthy)

		res = h.get("/eureka/v2/status", ctJSON)
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctJSON, res.header.Get("Content-Type"))
		var j struct {
			GeneralStats     map[string]string `json:"generalStats"`
			ApplicationStats map[string]string `json:"applicationStats"`
			InstanceInfo     wireInstance      `json:"instanceInfo"`
			IsHeathly        bool              `json:"isHeathly"`
		}
		require.NoError(t, json.Unmarshal(res.body, &j), "%s", res.body)
		assert.Contains(t, j.GeneralStats, "server-uptime")
		assert.Contains(t, j.ApplicationStats, "registered-replicas")
		assert.Equal(t, "test-node", j.InstanceInfo.InstanceID)
		assert.True(t, j.IsHeathly)
	})

	t.Run("status_with_odd_characters", func(t *testing.T) {
		// The environment name is operator input; control characters and
		// invalid UTF-8 in it must not break either document.
		t.Setenv("HEUREKA_ENVIRONMENT", "lab\x01<&>\"\xff")
		res := h.get("/eureka/status", ctJSON)
		require.Equal(t, http.StatusOK, res.code)
		var j struct {
			GeneralStats map[string]string `json:"generalStats"`
		}
		require.NoError(t, json.Unmarshal(res.body, &j), "valid JSON: %q", res.body)
		assert.True(t, strings.HasPrefix(j.GeneralStats["environment"], "lab\x01<&>\""), "%q", j.GeneralStats["environment"])
		res = h.get("/eureka/status", "")
		require.Equal(t, http.StatusOK, res.code)
		var x struct {
			GeneralStats struct {
				Environment string `xml:"environment"`
			} `xml:"generalStats"`
		}
		require.NoError(t, xml.Unmarshal(res.body, &x), "well-formed XML: %q", res.body)
		assert.True(t, strings.HasPrefix(x.GeneralStats.Environment, "lab"), "%q", x.GeneralStats.Environment)
		assert.Contains(t, x.GeneralStats.Environment, `<&>"`)
	})

	t.Run("health", func(t *testing.T) {
		res := h.get("/healthz", "")
		assert.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, "ok", string(res.body))
		res = h.get("/readyz", "")
		assert.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, "ready", string(res.body))
	})

	t.Run("cluster_members", func(t *testing.T) {
		res := h.get("/cluster/members", "")
		require.Equal(t, http.StatusOK, res.code)
		assert.Equal(t, ctJSON, res.header.Get("Content-Type"))
		var members []map[string]any
		require.NoError(t, json.Unmarshal(res.body, &members), "a JSON array: %s", res.body)
		require.Len(t, members, 1)
		assert.Equal(t, "test-node", members[0]["name"])
		assert.Equal(t, "alive", members[0]["state"])
	})

	t.Run("metrics", func(t *testing.T) {
		h.register(javaInstance("USER-SERVICE", 21))
		res := h.get("/metrics", "")
		require.Equal(t, http.StatusOK, res.code)
		assert.Contains(t, string(res.body), "\nheureka_instances 2\n")
		assert.Regexp(t, `heureka_http_requests_total\{route="register"\} \d+`, string(res.body))
	})

	t.Run("wrong_method", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{http.MethodDelete, "/eureka/apps"},
			{http.MethodPost, "/eureka/v2/apps/ORDER-SERVICE/" + id},
			{http.MethodGet, "/eureka/apps/ORDER-SERVICE/" + id + "/status"},
			{http.MethodGet, "/eureka/peerreplication/batch"},
			{http.MethodPost, "/healthz"},
		} {
			res := h.do(c.method, c.path, nil)
			assert.Equal(t, http.StatusMethodNotAllowed, res.code, "%s %s", c.method, c.path)
			assert.NotEmpty(t, res.header.Get("Allow"), "%s %s", c.method, c.path)
		}
		assert.Equal(t, http.StatusNotFound, h.get("/eureka/nothing-here", "").code)
	})
}

// firstXMLChild returns the name of the first element in an XML fragment.
func firstXMLChild(fragment string) string {
	d := xml.NewDecoder(strings.NewReader(fragment))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if s, ok := tok.(xml.StartElement); ok {
			return s.Name.Local
		}
	}
}
