package eureka

import (
	"encoding/xml"
	"testing"

	"github.com/hudl/fargo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// codecFargoXMLBody is fargo's XML register body as captured (fargo.md),
// with the elided parts filled in: no declaration, no class attribute on
// dataCenterInfo, empty elements for unset strings, ports last.
const codecFargoXMLBody = `<instance><instanceId>fargo-xml-1-x</instanceId><hostName>xml1-x.fargo.test</hostName><app>FARGO-XML-X</app>` +
	`<ipAddr>127.0.0.31</ipAddr><vipAddress>fargo-xml-x.vip</vipAddress><secureVipAddress></secureVipAddress>` +
	`<status>UP</status><overriddenstatus></overriddenstatus><homePageUrl>http://xml1-x.fargo.test:18101/</homePageUrl>` +
	`<statusPageUrl>http://xml1-x.fargo.test:18101/info</statusPageUrl><healthCheckUrl>http://xml1-x.fargo.test:18101/health</healthCheckUrl>` +
	`<countryId>1</countryId><dataCenterInfo><name>MyOwn</name><metadata></metadata></dataCenterInfo>` +
	`<leaseInfo><renewalIntervalInSecs>30</renewalIntervalInSecs><durationInSecs>90</durationInSecs>` +
	`<registrationTimestamp>0</registrationTimestamp><lastRenewalTimestamp>0</lastRenewalTimestamp>` +
	`<evictionTimestamp>0</evictionTimestamp><serviceUpTimestamp>0</serviceUpTimestamp></leaseInfo>` +
	`<metadata><owner>xml</owner><version>2.0.0</version></metadata>` +
	`<port enabled="true">18101</port><securePort enabled="false">19101</securePort></instance>`

// codecXMLSeeds seed FuzzDecodeInstanceXML and its committed corpus.
var codecXMLSeeds = []codecSeed{
	{"fargo", codecFargoXMLBody},
	{"eureka", `<?xml version="1.0" encoding="UTF-8"?>
<instance>
  <instanceId>10.0.0.11:order-service:8080</instanceId>
  <hostName>10.0.0.11</hostName>
  <app>ORDER-SERVICE</app>
  <ipAddr>10.0.0.11</ipAddr>
  <status>UP</status>
  <overriddenStatus>UNKNOWN</overriddenStatus>
  <port enabled="true"> 8080 </port>
  <securePort enabled="true">443</securePort>
  <countryId>1</countryId>
  <dataCenterInfo class="com.netflix.appinfo.AmazonInfo">
    <name>Amazon</name>
    <metadata><instance-id>i-1</instance-id><local-ipv4>10.0.0.11</local-ipv4></metadata>
  </dataCenterInfo>
  <leaseInfo><renewalIntervalInSecs>x</renewalIntervalInSecs><durationInSecs>30</durationInSecs></leaseInfo>
  <metadata class="java.util.HashMap"><a__b>1</a__b><_-x>2</_-x><!-- c --><nested><n>3</n>4</nested></metadata>
  <isCoordinatingDiscoveryServer>true</isCoordinatingDiscoveryServer>
  <lastUpdatedTimestamp>1754499999870</lastUpdatedTimestamp>
  <lastDirtyTimestamp>1754499999871</lastDirtyTimestamp>
  <unknown><deep/></unknown>
</instance>
`},
	{"escapes", `<instance><hostName>&lt;&amp;&gt;&quot;&apos;&#xD;&#x1F600;</hostName><metadata><k>a<![CDATA[<b>]]>c</k></metadata></instance>`},
	{"latin1", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><instance><hostName>caf\xe9</hostName></instance>"},
	{"wrong-root", `<application><name>X</name></application>`},
	{"bad-port", `<instance><port>http</port></instance>`},
	{"unclosed", `<instance><hostName>h</instance>`},
	{"two-roots", `<instance/><instance/>`},
	{"empty", ``},
}

func TestDecodeInstanceXML(t *testing.T) {
	minimal := &actors.Instance{Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown, CountryID: 1,
		Port: actors.Port{Number: 7001, Enabled: true}, SecurePort: actors.Port{Number: 7002},
		LeaseInfo: actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90}}
	with := func(f func(*actors.Instance)) *actors.Instance {
		c := minimal.Clone()
		f(c)
		return c
	}
	fargoWant := &actors.Instance{
		InstanceID: "fargo-xml-1-x", HostName: "xml1-x.fargo.test", App: "FARGO-XML-X", IPAddr: "127.0.0.31",
		Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown,
		Port: actors.Port{Number: 18101, Enabled: true}, SecurePort: actors.Port{Number: 19101}, CountryID: 1,
		DataCenterInfo: actors.DataCenterInfo{Name: "MyOwn"},
		LeaseInfo:      actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90},
		Metadata:       map[string]string{"owner": "xml", "version": "2.0.0"},
		HomePageURL:    "http://xml1-x.fargo.test:18101/", StatusPageURL: "http://xml1-x.fargo.test:18101/info",
		HealthCheckURL: "http://xml1-x.fargo.test:18101/health", VIPAddress: "fargo-xml-x.vip",
	}
	eurekaWant := &actors.Instance{
		InstanceID: "10.0.0.11:order-service:8080", HostName: "10.0.0.11", App: "ORDER-SERVICE", IPAddr: "10.0.0.11",
		Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown,
		Port: actors.Port{Number: 8080, Enabled: true}, SecurePort: actors.Port{Number: 443, Enabled: true}, CountryID: 1,
		DataCenterInfo: actors.DataCenterInfo{Class: classAmazonInfo, Name: "Amazon",
			Metadata: map[string]string{"instance-id": "i-1", "local-ipv4": "10.0.0.11"}},
		LeaseInfo:                     actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 30},
		Metadata:                      map[string]string{"a_b": "1", "$x": "2", "nested": "4"},
		IsCoordinatingDiscoveryServer: true,
		LastUpdatedTimestamp:          1754499999870,
		LastDirtyTimestamp:            1754499999871,
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		want        *actors.Instance // normalized
		wantErr     error
	}{
		{name: "fargo", contentType: "application/xml", body: codecFargoXMLBody, want: fargoWant},
		{name: "fargo, no content type", contentType: "", body: codecFargoXMLBody, want: fargoWant},
		{name: "any content type", contentType: "*/*", body: codecFargoXMLBody, want: fargoWant},
		{name: "text/xml", contentType: "text/xml; charset=utf-8", body: codecFargoXMLBody, want: fargoWant},
		{name: "eureka shape, lenient", contentType: "application/xml", body: codecXMLSeeds[1].body, want: eurekaWant},
		{name: "escapes", contentType: "application/xml", body: codecXMLSeeds[2].body,
			want: with(func(i *actors.Instance) {
				i.HostName = "<&>\"'\r😀"
				i.Metadata = map[string]string{"k": "a<b>c"}
			})},
		{name: "declared latin-1", contentType: "application/xml", body: codecXMLSeeds[3].body,
			want: with(func(i *actors.Instance) { i.HostName = "café" })},
		{name: "header latin-1", contentType: "application/xml; charset=iso-8859-1", body: "<instance><hostName>caf\xe9</hostName></instance>",
			want: with(func(i *actors.Instance) { i.HostName = "café" })},
		{name: "enabled attributes", contentType: "application/xml",
			body: `<instance><port enabled="false">1</port><securePort>2</securePort></instance>`,
			want: with(func(i *actors.Instance) { i.Port, i.SecurePort = actors.Port{Number: 1}, actors.Port{Number: 2} })},
		{name: "empty port", contentType: "application/xml", body: `<instance><port enabled="true"></port></instance>`,
			want: with(func(i *actors.Instance) { i.Port = actors.Port{Enabled: true} })},
		{name: "legacy and current override", contentType: "application/xml",
			body: `<instance><overriddenstatus>out_of_service</overriddenstatus><status>starting</status></instance>`,
			want: with(func(i *actors.Instance) {
				i.OverriddenStatus, i.Status = actors.StatusOutOfService, actors.StatusStarting
			})},
		{name: "non-amazon data center metadata dropped", contentType: "application/xml",
			body: `<instance><dataCenterInfo class="com.netflix.appinfo.MyDataCenterInfo"><name>MyOwn</name><metadata><k>v</k></metadata></dataCenterInfo></instance>`,
			want: with(func(i *actors.Instance) {
				i.DataCenterInfo = actors.DataCenterInfo{Class: "com.netflix.appinfo.MyDataCenterInfo", Name: "MyOwn"}
			})},
		{name: "self-closing", contentType: "application/xml", body: `<instance/>`, want: minimal},
		{name: "namespaced", contentType: "application/xml", body: `<e:instance xmlns:e="urn:x"><e:hostName>h</e:hostName></e:instance>`,
			want: with(func(i *actors.Instance) { i.HostName = "h" })},
		{name: "trailing comment", contentType: "application/xml", body: "<instance/>\n<!-- bye -->\n", want: minimal},

		{name: "wrong root", contentType: "application/xml", body: codecXMLSeeds[4].body, wantErr: ErrBadBody},
		{name: "bad port", contentType: "application/xml", body: codecXMLSeeds[5].body, wantErr: ErrBadBody},
		{name: "bad countryId", contentType: "application/xml", body: `<instance><countryId>x</countryId></instance>`, wantErr: ErrBadBody},
		{name: "bad timestamp", contentType: "application/xml", body: `<instance><lastDirtyTimestamp>x</lastDirtyTimestamp></instance>`, wantErr: ErrBadBody},
		{name: "unclosed", contentType: "application/xml", body: codecXMLSeeds[6].body, wantErr: ErrBadBody},
		{name: "two roots", contentType: "application/xml", body: codecXMLSeeds[7].body, wantErr: ErrBadBody},
		{name: "text after root", contentType: "application/xml", body: `<instance/>junk`, wantErr: ErrBadBody},
		{name: "text before root", contentType: "application/xml", body: `junk<instance/>`, wantErr: ErrBadBody},
		{name: "empty", contentType: "application/xml", body: ``, wantErr: ErrBadBody},
		{name: "json as xml", contentType: "application/xml", body: codecJavaBody, wantErr: ErrBadBody},
		{name: "unknown entity", contentType: "application/xml", body: `<instance><hostName>&nbsp;</hostName></instance>`, wantErr: ErrBadBody},
		{name: "unsupported encoding", contentType: "application/xml", body: `<?xml version="1.0" encoding="UTF-16"?><instance/>`, wantErr: ErrBadBody},
		{name: "text/plain", contentType: "text/plain", body: codecFargoXMLBody, wantErr: ErrUnsupportedMediaType},
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

// TestDecodeInstanceFargoXMLMarshal registers through fargo's own XML
// marshaller, fargo's default wire format.
func TestDecodeInstanceFargoXMLMarshal(t *testing.T) {
	ins := fargo.Instance{
		InstanceId: "fx-1", HostName: "fx.test", App: "fargo-xml", IPAddr: "127.0.0.31",
		Status: fargo.UP, Port: 18101, PortEnabled: true, SecurePort: 19101, CountryId: 1,
		DataCenterInfo: fargo.DataCenterInfo{Name: fargo.Amazon, Metadata: fargo.AmazonMetadataType{InstanceID: "i-7", AvailabilityZone: "az-1"}},
	}
	ins.SetMetadataString("owner", "xml")
	body, err := xml.Marshal(&ins)
	require.NoError(t, err)
	got, err := DecodeInstance("application/xml", body)
	require.NoError(t, err, "%s", body)
	got.Normalize()
	assert.Equal(t, "FARGO-XML", got.App)
	assert.Equal(t, actors.Port{Number: 18101, Enabled: true}, got.Port)
	assert.Equal(t, actors.Port{Number: 19101}, got.SecurePort)
	assert.Equal(t, map[string]string{"owner": "xml"}, got.Metadata)
	assert.Equal(t, "Amazon", got.DataCenterInfo.Name)
	assert.Equal(t, "i-7", got.DataCenterInfo.Metadata["instance-id"])
	assert.Equal(t, "az-1", got.DataCenterInfo.Metadata["availability-zone"])
	assert.Equal(t, "fx-1", got.ID())
}

func FuzzDecodeInstanceXML(f *testing.F) {
	for _, s := range codecXMLSeeds {
		f.Add([]byte(s.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		inst, err := DecodeInstance("application/xml", body)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody)
			require.Nil(t, inst)
			return
		}
		require.NotNil(t, inst)
		codecCheckInstance(t, inst)
	})
}
