package eureka

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hudl/fargo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// codecJavaBody is the Java client's register body (spec §3.7).
const codecJavaBody = `{"instance":{"instanceId":"10.0.0.11:order-service:8080","hostName":"10.0.0.11","app":"ORDER-SERVICE",
 "ipAddr":"10.0.0.11","status":"UP","overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},
 "securePort":{"$":443,"@enabled":"false"},"countryId":1,
 "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
 "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":0,"lastRenewalTimestamp":0,
  "evictionTimestamp":0,"serviceUpTimestamp":0},
 "metadata":{"management.port":"8081","zone":"zone-a"},"homePageUrl":"http://10.0.0.11:8080/",
 "statusPageUrl":"http://10.0.0.11:8080/actuator/info","healthCheckUrl":"http://10.0.0.11:8080/actuator/health",
 "vipAddress":"order-service","secureVipAddress":"order-service","isCoordinatingDiscoveryServer":"false",
 "lastUpdatedTimestamp":"1754499999870","lastDirtyTimestamp":"1754499999870"}}`

// codecFargoJSONBody is fargo's JSON register body as captured (fargo.md),
// with the elided URLs filled in.
const codecFargoJSONBody = `{"instance":{"instanceId":"fargo-alpha-1-x","hostName":"alpha1-x.fargo.test","app":"FARGO-ALPHA-X",
 "ipAddr":"127.0.0.11","vipAddress":"fargo-alpha-x.vip","secureVipAddress":"fargo-alpha-x.svip",
 "status":"UP","overriddenstatus":"","homePageUrl":"http://alpha1-x.fargo.test:18081/","statusPageUrl":"http://alpha1-x.fargo.test:18081/info",
 "healthCheckUrl":"http://alpha1-x.fargo.test:18081/health","countryId":1,
 "dataCenterInfo":{"name":"MyOwn","@class":"com.netflix.appinfo.MyDataCenterInfo"},
 "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":0,
              "lastRenewalTimestamp":0,"evictionTimestamp":0,"serviceUpTimestamp":0},
 "metadata":{"version":"1.2.3","weight":"10","zone":"zone-a"},
 "port":{"$":"18081","@enabled":"true"},"securePort":{"$":"19081","@enabled":"false"}}}`

// codecJSBody is eureka-js-client's register body as captured, with the
// JSON boolean "@enabled" users commonly write and a numeric metadata value.
const codecJSBody = `{"instance":{"app":"js-alpha-x","hostName":"alpha1-x.js.test","ipAddr":"127.0.0.61",
 "port":{"$":19301,"@enabled":true},"vipAddress":"js-alpha-x.vip",
 "statusPageUrl":"http://alpha1-x.js.test:19301/info","healthCheckUrl":"http://alpha1-x.js.test:19301/health","homePageUrl":"http://alpha1-x.js.test:19301/",
 "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
 "metadata":{"version":"1.0.0","zone":"zone-a","weight":10},"instanceId":"js-alpha-1-x","status":"UP"}}`

// codecJSReadmeBody is the eureka-js-client README's shape: bare port, no
// @class, no instanceId.
const codecJSReadmeBody = `{"instance":{"app":"jqservice","hostName":"localhost","ipAddr":"127.0.0.1","port":8080,
 "vipAddress":"jq.test.something.com","dataCenterInfo":{"name":"MyOwn"},"status":"UP"}}`

// codecJSONSeeds seed FuzzDecodeInstanceJSON and its committed corpus.
var codecJSONSeeds = []codecSeed{
	{"java", codecJavaBody},
	{"fargo", codecFargoJSONBody},
	{"js", codecJSBody},
	{"js-readme", codecJSReadmeBody},
	{"unwrapped", `{"hostName":"h","app":"a","ipAddr":"1.1.1.1","port":{"$":"80"},"securePort":"443","countryId":"1",
		"leaseInfo":{"durationInSecs":"30.0"},"overriddenstatus":"","metadata":{"@class":"java.util.Collections$EmptyMap"},
		"isCoordinatingDiscoveryServer":true,"lastDirtyTimestamp":1754499999870}`},
	{"amazon", `{"instance":{"hostName":"ec2","app":"a","ipAddr":"1.1.1.1","dataCenterInfo":{"@class":"com.netflix.appinfo.AmazonInfo",
		"name":"Amazon","metadata":{"instance-id":"i-1","availability-zone":"eu-west-1a","ami-launch-index":0}}}}`},
	{"escapes", `{"instance":{"hostName":"\u2028<&>\"\\\u0001","app":"\ud83d\ude00","metadata":{"a_b$c":"\t\r\n","":"x","1x":"y"}}}`},
	{"nulls", `{"instance":{"instanceId":null,"port":null,"securePort":{"$":null,"@enabled":null},"metadata":null,"leaseInfo":null,"dataCenterInfo":null}}`},
	{"garbage", `not json`},
	{"array", `[{"instance":{}}]`},
	{"bad-port", `{"instance":{"port":[8080]}}`},
	{"bad-status", `{"instance":{"status":5}}`},
	{"trailing", `{"instance":{}} {}`},
	{"empty", ``},
}

func TestDecodeInstanceJSON(t *testing.T) {
	javaWant := &actors.Instance{
		InstanceID: "10.0.0.11:order-service:8080", HostName: "10.0.0.11", App: "ORDER-SERVICE", IPAddr: "10.0.0.11",
		Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown,
		Port: actors.Port{Number: 8080, Enabled: true}, SecurePort: actors.Port{Number: 443}, CountryID: 1,
		DataCenterInfo: actors.DataCenterInfo{Class: classDefaultDataCenter, Name: "MyOwn"},
		LeaseInfo:      actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90},
		Metadata:       map[string]string{"management.port": "8081", "zone": "zone-a"},
		HomePageURL:    "http://10.0.0.11:8080/", StatusPageURL: "http://10.0.0.11:8080/actuator/info",
		HealthCheckURL: "http://10.0.0.11:8080/actuator/health", VIPAddress: "order-service", SecureVIPAddress: "order-service",
		LastUpdatedTimestamp: 1754499999870, LastDirtyTimestamp: 1754499999870,
	}
	fargoWant := &actors.Instance{
		InstanceID: "fargo-alpha-1-x", HostName: "alpha1-x.fargo.test", App: "FARGO-ALPHA-X", IPAddr: "127.0.0.11",
		Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown,
		Port: actors.Port{Number: 18081, Enabled: true}, SecurePort: actors.Port{Number: 19081}, CountryID: 1,
		DataCenterInfo: actors.DataCenterInfo{Class: "com.netflix.appinfo.MyDataCenterInfo", Name: "MyOwn"},
		LeaseInfo:      actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90},
		Metadata:       map[string]string{"version": "1.2.3", "weight": "10", "zone": "zone-a"},
		HomePageURL:    "http://alpha1-x.fargo.test:18081/", StatusPageURL: "http://alpha1-x.fargo.test:18081/info",
		HealthCheckURL: "http://alpha1-x.fargo.test:18081/health", VIPAddress: "fargo-alpha-x.vip", SecureVIPAddress: "fargo-alpha-x.svip",
	}
	jsWant := &actors.Instance{
		InstanceID: "js-alpha-1-x", HostName: "alpha1-x.js.test", App: "JS-ALPHA-X", IPAddr: "127.0.0.61",
		Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown,
		Port: actors.Port{Number: 19301, Enabled: true}, SecurePort: actors.Port{Number: 7002}, CountryID: 1,
		DataCenterInfo: actors.DataCenterInfo{Class: classDefaultDataCenter, Name: "MyOwn"},
		LeaseInfo:      actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90},
		Metadata:       map[string]string{"version": "1.0.0", "zone": "zone-a", "weight": "10"},
		HomePageURL:    "http://alpha1-x.js.test:19301/", StatusPageURL: "http://alpha1-x.js.test:19301/info",
		HealthCheckURL: "http://alpha1-x.js.test:19301/health", VIPAddress: "js-alpha-x.vip",
	}
	readmeWant := &actors.Instance{
		HostName: "localhost", App: "JQSERVICE", IPAddr: "127.0.0.1",
		Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown,
		Port: actors.Port{Number: 8080, Enabled: true}, SecurePort: actors.Port{Number: 7002}, CountryID: 1,
		DataCenterInfo: actors.DataCenterInfo{Name: "MyOwn"},
		LeaseInfo:      actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90},
		VIPAddress:     "jq.test.something.com",
	}
	// with modifies a normalized copy of base.
	with := func(base *actors.Instance, f func(*actors.Instance)) *actors.Instance {
		c := base.Clone()
		f(c)
		return c
	}
	minimal := &actors.Instance{Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown, CountryID: 1,
		Port: actors.Port{Number: 7001, Enabled: true}, SecurePort: actors.Port{Number: 7002},
		LeaseInfo: actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90}}

	tests := []struct {
		name        string
		contentType string
		body        string
		want        *actors.Instance // normalized
		wantErr     error
	}{
		{name: "java client", contentType: "application/json", body: codecJavaBody, want: javaWant},
		{name: "java client, charset", contentType: "application/json;charset=UTF-8", body: codecJavaBody, want: javaWant},
		{name: "fargo", contentType: "application/json", body: codecFargoJSONBody, want: fargoWant},
		{name: "eureka-js-client", contentType: "application/json", body: codecJSBody, want: jsWant},
		{name: "eureka-js-client readme", contentType: "application/json", body: codecJSReadmeBody, want: readmeWant},
		{name: "unwrapped", contentType: "application/json",
			body: strings.TrimSuffix(strings.TrimPrefix(codecJavaBody, `{"instance":`), "}"), want: javaWant},
		{name: "byte order mark", contentType: "application/json", body: "\uFEFF" + codecJavaBody, want: javaWant},
		{name: "fargo echoes server metadata", contentType: "application/json",
			body: `{"instance":{"instanceId":"","hostName":"h","metadata":{"@class":"java.util.Collections$EmptyMap"},"securePort":{"$":"0","@enabled":"false"}}}`,
			want: with(minimal, func(i *actors.Instance) { i.HostName, i.SecurePort = "h", actors.Port{} })},
		{name: "string numbers and booleans", contentType: "application/json",
			body: `{"port":{"$":"80","@enabled":"false"},"securePort":{"$":"443","@enabled":true},"countryId":"2",
				"leaseInfo":{"renewalIntervalInSecs":"10","durationInSecs":20.0,"registrationTimestamp":"5","lastRenewalTimestamp":"",
				"evictionTimestamp":null,"serviceUpTimestamp":6},"isCoordinatingDiscoveryServer":true,
				"lastUpdatedTimestamp":1754499999870,"lastDirtyTimestamp":"1e3"}`,
			want: with(minimal, func(i *actors.Instance) {
				i.Port, i.SecurePort, i.CountryID = actors.Port{Number: 80}, actors.Port{Number: 443, Enabled: true}, 2
				i.LeaseInfo = actors.LeaseInfo{RenewalIntervalSecs: 10, DurationSecs: 20, RegistrationTimestamp: 5, ServiceUpTimestamp: 6}
				i.IsCoordinatingDiscoveryServer, i.LastUpdatedTimestamp, i.LastDirtyTimestamp = true, 1754499999870, 1000
			})},
		{name: "bare ports", contentType: "application/json", body: `{"port":"8080","securePort":8443}`,
			want: with(minimal, func(i *actors.Instance) {
				i.Port, i.SecurePort = actors.Port{Number: 8080, Enabled: true}, actors.Port{Number: 8443}
			})},
		{name: "enabled defaults", contentType: "application/json",
			body: `{"port":{"$":1,"@enabled":"yes"},"securePort":{"$":2,"@enabled":"yes"}}`,
			want: with(minimal, func(i *actors.Instance) {
				i.Port, i.SecurePort = actors.Port{Number: 1, Enabled: true}, actors.Port{Number: 2}
			})},
		{name: "overriddenStatus wins over legacy key", contentType: "application/json",
			body: `{"overriddenstatus":"UP","overriddenStatus":"out_of_service","status":"down"}`,
			want: with(minimal, func(i *actors.Instance) {
				i.OverriddenStatus, i.Status = actors.StatusOutOfService, actors.StatusDown
			})},
		{name: "legacy overriddenstatus", contentType: "application/json", body: `{"overriddenStatus":null,"overriddenstatus":"DOWN"}`,
			want: with(minimal, func(i *actors.Instance) { i.OverriddenStatus = actors.StatusDown })},
		{name: "unknown status", contentType: "application/json", body: `{"status":"SLEEPING"}`,
			want: with(minimal, func(i *actors.Instance) { i.Status = actors.StatusUnknown })},
		{name: "nulls and unknown keys", contentType: "application/json", body: `{"instance":{"instanceId":null,"port":null,"securePort":{"$":null,"@enabled":null},"metadata":null,"leaseInfo":null,"dataCenterInfo":null}}`,
			want: with(minimal, func(i *actors.Instance) { i.SecurePort = actors.Port{} })},
		{name: "unknown keys", contentType: "application/json", body: `{"foo":[1,{"x":null}],"sid":"na","appGroupName":"grp","actionType":"ADDED","asgName":"asg"}`,
			want: with(minimal, func(i *actors.Instance) {
				i.AppGroupName, i.ActionType, i.ASGName = "GRP", actors.ActionAdded, "asg"
			})},
		{name: "metadata scalars", contentType: "application/json",
			body: `{"metadata":{"s":"x","n":10,"f":1.50,"b":true,"nul":null,"@class":"java.util.HashMap"}}`,
			want: with(minimal, func(i *actors.Instance) {
				i.Metadata = map[string]string{"s": "x", "n": "10", "f": "1.50", "b": "true"}
			})},
		{name: "amazon", contentType: "application/json", body: codecJSONSeeds[5].body,
			want: with(minimal, func(i *actors.Instance) {
				i.HostName, i.App, i.IPAddr = "ec2", "A", "1.1.1.1"
				i.DataCenterInfo = actors.DataCenterInfo{Class: classAmazonInfo, Name: "Amazon", Metadata: map[string]string{
					"instance-id": "i-1", "availability-zone": "eu-west-1a", "ami-launch-index": "0"}}
			})},
		{name: "non-amazon data center metadata dropped", contentType: "application/json",
			body: `{"dataCenterInfo":{"name":"MyOwn","metadata":{"k":"v"}}}`,
			want: with(minimal, func(i *actors.Instance) { i.DataCenterInfo.Name = "MyOwn" })},
		{name: "latin-1", contentType: "application/json; charset=ISO-8859-1", body: "{\"hostName\":\"caf\xe9\"}",
			want: with(minimal, func(i *actors.Instance) { i.HostName = "café" })},
		{name: "utf-8 labelled latin-1", contentType: "application/json; charset=ISO-8859-1", body: `{"hostName":"café"}`,
			want: with(minimal, func(i *actors.Instance) { i.HostName = "café" })},
		{name: "empty object", contentType: "application/json", body: `{}`, want: minimal},

		{name: "garbage", contentType: "application/json", body: `not json`, wantErr: ErrBadBody},
		{name: "empty body", contentType: "application/json", body: ``, wantErr: ErrBadBody},
		{name: "truncated", contentType: "application/json", body: codecJavaBody[:100], wantErr: ErrBadBody},
		{name: "trailing data", contentType: "application/json", body: `{"hostName":"h"} {}`, wantErr: ErrBadBody},
		{name: "array", contentType: "application/json", body: `[{"hostName":"h"}]`, wantErr: ErrBadBody},
		{name: "string", contentType: "application/json", body: `"instance"`, wantErr: ErrBadBody},
		{name: "wrapper not an object", contentType: "application/json", body: `{"instance":"x"}`, wantErr: ErrBadBody},
		{name: "port array", contentType: "application/json", body: `{"instance":{"port":[8080]}}`, wantErr: ErrBadBody},
		{name: "port bool", contentType: "application/json", body: `{"instance":{"port":true}}`, wantErr: ErrBadBody},
		{name: "port word", contentType: "application/json", body: `{"instance":{"port":{"$":"http"}}}`, wantErr: ErrBadBody},
		{name: "port fraction", contentType: "application/json", body: `{"instance":{"port":80.5}}`, wantErr: ErrBadBody},
		{name: "status number", contentType: "application/json", body: `{"instance":{"status":5}}`, wantErr: ErrBadBody},
		{name: "hostName object", contentType: "application/json", body: `{"instance":{"hostName":{}}}`, wantErr: ErrBadBody},
		{name: "countryId word", contentType: "application/json", body: `{"countryId":"one"}`, wantErr: ErrBadBody},
		{name: "timestamp word", contentType: "application/json", body: `{"lastDirtyTimestamp":"yesterday"}`, wantErr: ErrBadBody},
		{name: "timestamp overflow", contentType: "application/json", body: `{"lastDirtyTimestamp":1e300}`, wantErr: ErrBadBody},
		{name: "lease word", contentType: "application/json", body: `{"leaseInfo":{"durationInSecs":"long"}}`, wantErr: ErrBadBody},
		{name: "lease not object", contentType: "application/json", body: `{"leaseInfo":90}`, wantErr: ErrBadBody},
		{name: "metadata array", contentType: "application/json", body: `{"metadata":["a"]}`, wantErr: ErrBadBody},
		{name: "metadata nested", contentType: "application/json", body: `{"metadata":{"a":{"b":"c"}}}`, wantErr: ErrBadBody},
		{name: "data center string", contentType: "application/json", body: `{"dataCenterInfo":"MyOwn"}`, wantErr: ErrBadBody},
		{name: "data center name number", contentType: "application/json", body: `{"dataCenterInfo":{"name":1}}`, wantErr: ErrBadBody},
		{name: "coordinating number", contentType: "application/json", body: `{"isCoordinatingDiscoveryServer":1}`, wantErr: ErrBadBody},
		{name: "text/plain", contentType: "text/plain", body: codecJavaBody, wantErr: ErrUnsupportedMediaType},
		{name: "utf-16", contentType: "application/json; charset=UTF-16", body: codecJavaBody, wantErr: ErrUnsupportedMediaType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeInstance(tt.contentType, []byte(tt.body))
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			got.Normalize()
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestDecodeInstanceRawStatus pins that the decoder upper-cases statuses but
// leaves mapping them to Normalize.
func TestDecodeInstanceRawStatus(t *testing.T) {
	got, err := DecodeInstance("application/json", []byte(`{"status":"sleeping","overriddenstatus":""}`))
	require.NoError(t, err)
	assert.Equal(t, actors.Status("SLEEPING"), got.Status)
	assert.Equal(t, actors.Status(""), got.OverriddenStatus)
	assert.Equal(t, 0, got.CountryID, "not normalized")
}

// TestDecodeInstanceFargoMarshal registers through fargo's own marshaller
// (fargo v1.4.0, JSON and XML, MyOwn and Amazon).
func TestDecodeInstanceFargoMarshal(t *testing.T) {
	ins := fargo.Instance{
		HostName: "alpha1.fargo.test", App: "fargo-alpha", IPAddr: "127.0.0.11", VipAddress: "alpha.vip",
		Status: fargo.UP, Port: 18081, PortEnabled: true, SecurePort: 19081, CountryId: 1,
		DataCenterInfo: fargo.DataCenterInfo{Name: fargo.MyOwn},
		LeaseInfo:      fargo.LeaseInfo{RenewalIntervalInSecs: 1, DurationInSecs: 3},
	}
	ins.SetMetadataString("zone", "zone-a")
	aws := ins
	aws.Metadata = fargo.InstanceMetadata{}
	aws.DataCenterInfo = fargo.DataCenterInfo{Name: fargo.Amazon, Metadata: fargo.AmazonMetadataType{InstanceID: "i-9", PublicIpv4: "3.3.3.3"}}

	jsonBody, err := json.Marshal(&fargo.RegisterInstanceJson{Instance: &ins})
	require.NoError(t, err)
	got, err := DecodeInstance("application/json", jsonBody)
	require.NoError(t, err, "%s", jsonBody)
	got.Normalize()
	assert.Equal(t, "FARGO-ALPHA", got.App)
	assert.Equal(t, actors.Port{Number: 18081, Enabled: true}, got.Port)
	assert.Equal(t, actors.Port{Number: 19081}, got.SecurePort)
	assert.Equal(t, actors.StatusUnknown, got.OverriddenStatus)
	assert.Equal(t, actors.LeaseInfo{RenewalIntervalSecs: 1, DurationSecs: 3}, got.LeaseInfo)
	assert.Equal(t, map[string]string{"zone": "zone-a"}, got.Metadata)
	assert.Equal(t, "MyOwn", got.DataCenterInfo.Name)
	assert.Equal(t, "alpha1.fargo.test", got.ID())

	jsonBody, err = json.Marshal(&fargo.RegisterInstanceJson{Instance: &aws})
	require.NoError(t, err)
	got, err = DecodeInstance("application/json", jsonBody)
	require.NoError(t, err, "%s", jsonBody)
	assert.Equal(t, "i-9", got.ID())
	assert.Equal(t, "3.3.3.3", got.DataCenterInfo.Metadata["public-ipv4"])
	assert.Nil(t, got.Metadata)
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-12", -12, true}, {"+7", 7, true}, {"8080.0", 8080, true}, {"1e3", 1000, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"1.5", 0, false}, {"abc", 0, false}, {"NaN", 0, false}, {"Inf", 0, false}, {"1e19", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseInt(tt.in)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func FuzzDecodeInstanceJSON(f *testing.F) {
	for _, s := range codecJSONSeeds {
		f.Add([]byte(s.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		inst, err := DecodeInstance("application/json", body)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody)
			require.Nil(t, inst)
			return
		}
		require.NotNil(t, inst)
		codecCheckInstance(t, inst)
	})
}
