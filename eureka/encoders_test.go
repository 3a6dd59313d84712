package eureka

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hudl/fargo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

// updateGolden rewrites testdata/golden and the seed files of the fuzz
// corpus: go test ./eureka/ -run 'Golden|FuzzSeed' -update
var updateGolden = flag.Bool("update", false, "rewrite eureka golden files and fuzz seed corpus files")

// codecFormats names the formats for test and golden file names.
var codecFormats = []struct {
	f    view.Format
	name string // golden file stem suffix and extension
	ext  string
}{
	{view.FormatJSON, "full", "json"},
	{view.FormatXML, "full", "xml"},
	{view.FormatCompactJSON, "compact", "json"},
	{view.FormatCompactXML, "compact", "xml"},
}

func codecIsJSON(f view.Format) bool { return f == view.FormatJSON || f == view.FormatCompactJSON }

// codecSpecInstances returns the three instances of the spec §3.5 example.
func codecSpecInstances() (i11, i12, i21 *actors.Instance) {
	base := func(ip, app, vip string, port int) *actors.Instance {
		lower := strings.ToLower(app)
		url := fmt.Sprintf("http://%s:%d/", ip, port)
		return &actors.Instance{
			InstanceID:       fmt.Sprintf("%s:%s:%d", ip, lower, port),
			HostName:         ip,
			App:              app,
			IPAddr:           ip,
			Status:           actors.StatusUp,
			OverriddenStatus: actors.StatusUnknown,
			Port:             actors.Port{Number: port, Enabled: true},
			SecurePort:       actors.Port{Number: 443},
			CountryID:        1,
			DataCenterInfo:   actors.DataCenterInfo{Class: classDefaultDataCenter, Name: "MyOwn"},
			HomePageURL:      url,
			StatusPageURL:    url + "actuator/info",
			HealthCheckURL:   url + "actuator/health",
			VIPAddress:       vip,
			SecureVIPAddress: vip,
		}
	}
	i11 = base("10.0.0.11", "ORDER-SERVICE", "order-service", 8080)
	i11.LeaseInfo = actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90, RegistrationTimestamp: 1754500000123,
		LastRenewalTimestamp: 1754500390456, ServiceUpTimestamp: 1754500000120}
	i11.Metadata = map[string]string{"management.port": "8081", "zone": "zone-a"}
	i11.LastUpdatedTimestamp, i11.LastDirtyTimestamp, i11.ActionType = 1754500000123, 1754499999870, actors.ActionAdded

	i12 = base("10.0.0.12", "ORDER-SERVICE", "order-service", 8080)
	i12.Status, i12.OverriddenStatus = actors.StatusOutOfService, actors.StatusOutOfService
	i12.LeaseInfo = actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90, RegistrationTimestamp: 1754500001200,
		LastRenewalTimestamp: 1754500391300, ServiceUpTimestamp: 1754500001190}
	i12.LastUpdatedTimestamp, i12.LastDirtyTimestamp, i12.ActionType = 1754500200777, 1754500000950, actors.ActionModified

	i21 = base("10.0.0.21", "USER-SERVICE", "user-service", 9090)
	i21.LeaseInfo = actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90, RegistrationTimestamp: 1754500002000,
		LastRenewalTimestamp: 1754500392100, ServiceUpTimestamp: 1754500001990}
	i21.LastUpdatedTimestamp, i21.LastDirtyTimestamp, i21.ActionType = 1754500002000, 1754500001500, actors.ActionAdded
	return i11, i12, i21
}

// codecAmazonInstance is an AWS instance whose strings exercise escaping:
// metadata keys with "_" and "$", a key that is no XML name, markup and
// control characters in values.
func codecAmazonInstance() *actors.Instance {
	return &actors.Instance{
		InstanceID:       "i-0abc<&>\"'",
		HostName:         "ec2-1-2-3-4.compute.amazonaws.com",
		App:              "BILLING",
		IPAddr:           "10.1.2.3",
		SID:              "sid-7",
		Status:           actors.StatusStarting,
		OverriddenStatus: actors.StatusUnknown,
		Port:             actors.Port{Number: 7001, Enabled: false},
		SecurePort:       actors.Port{Number: 7002, Enabled: true},
		CountryID:        1,
		DataCenterInfo: actors.DataCenterInfo{Class: classAmazonInfo, Name: "Amazon", Metadata: map[string]string{
			"instance-id": "i-0abc", "ami-id": "ami-1", "availability-zone": "eu-west-1a",
			"local-ipv4": "10.1.2.3", "public-ipv4": "3.4.5.6", "public-hostname": "ec2.example",
			"instance-type": "m5.large",
		}},
		LeaseInfo: actors.LeaseInfo{RenewalIntervalSecs: 10, DurationSecs: 30, RegistrationTimestamp: 1,
			LastRenewalTimestamp: 2, EvictionTimestamp: 3, ServiceUpTimestamp: 4},
		Metadata: map[string]string{
			"a_b": "under_score", "$dollar": "x$y", "mixed_$key": "m", "é-ключ": "ünï\u2028cødé",
			"html": "<b>&amp;</b>", "ctl": "tab\there\nline\r\n\x01end", "1bad key": "json only",
		},
		AppGroupName:                  "BILLING-GROUP",
		HomePageURL:                   "http://10.1.2.3:7001/?a=1&b=2",
		StatusPageURL:                 "http://10.1.2.3:7001/status",
		HealthCheckURL:                "http://10.1.2.3:7001/health",
		SecureHealthCheckURL:          "https://10.1.2.3:7002/health",
		VIPAddress:                    "billing,billing-v2",
		SecureVIPAddress:              "billing-secure",
		IsCoordinatingDiscoveryServer: true,
		LastUpdatedTimestamp:          1754500000000,
		LastDirtyTimestamp:            1754499999999,
		ActionType:                    actors.ActionDeleted,
		ASGName:                       "billing-asg",
	}
}

// codecAppsDocument assembles a whole applications document the way the view
// does.
func codecAppsDocument(e view.Encoder, delta, hash string, apps ...codecApp) []byte {
	dst := e.AppendApplicationsOpen(nil, delta, hash)
	for i, a := range apps {
		if i > 0 {
			dst = e.AppendApplicationsSeparator(dst)
		}
		dst = e.AppendApplication(dst, a.name, a.instances)
	}
	return e.AppendApplicationsClose(dst)
}

type codecApp struct {
	name      string
	instances []*actors.Instance
}

func codecSpecApps() []codecApp {
	i11, i12, i21 := codecSpecInstances()
	return []codecApp{
		{"ORDER-SERVICE", []*actors.Instance{i11, i12}},
		{"USER-SERVICE", []*actors.Instance{i21}},
	}
}

// codecGolden compares got with testdata/golden/name, or rewrites it with
// -update.
func codecGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *updateGolden {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./eureka/ -run Golden -update")
	assert.Equal(t, string(want), string(got), "golden %s differs; rerun with -update if intended", name)
}

// codecReadGolden reads a golden file written by TestCodecGolden.
func codecReadGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	require.NoError(t, err)
	return b
}

// codecWellFormed checks that doc is one well-formed XML element whose
// element names are XML names by the strict rules (encoding/xml alone would
// accept a name starting with a digit).
func codecWellFormed(doc []byte) error {
	d := xml.NewDecoder(bytes.NewReader(doc))
	roots, depth := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
			if t.Name.Space != "" {
				return fmt.Errorf("element %s:%s has a prefix", t.Name.Space, t.Name.Local)
			}
			r, _ := utf8.DecodeRuneInString(t.Name.Local)
			if r != '_' && !unicode.IsLetter(r) {
				return fmt.Errorf("element name %q is not an XML name", t.Name.Local)
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return errors.New("text outside the root")
			}
		case xml.ProcInst:
			return errors.New("unexpected processing instruction (XML declaration)")
		}
	}
	if roots != 1 {
		return fmt.Errorf("%d root elements", roots)
	}
	return nil
}

func TestCodecGolden(t *testing.T) {
	i11, _, _ := codecSpecInstances()
	amazon := codecAmazonInstance()
	enc := Encoders()
	for _, cf := range codecFormats {
		e := enc[cf.f]
		docs := map[string][]byte{
			"apps":            codecAppsDocument(e, "1", "OUT_OF_SERVICE_1_UP_2_", codecSpecApps()...),
			"apps_empty":      codecAppsDocument(e, "1", ""),
			"app":             e.AppendApplicationDocument(nil, "ORDER-SERVICE", codecSpecApps()[0].instances),
			"instance":        AppendInstanceDocument(nil, cf.f, i11),
			"instance_amazon": AppendInstanceDocument(nil, cf.f, amazon),
		}
		for stem, doc := range docs {
			name := fmt.Sprintf("%s_%s.%s", stem, cf.name, cf.ext)
			t.Run(name, func(t *testing.T) {
				if codecIsJSON(cf.f) {
					assert.True(t, json.Valid(doc), "invalid JSON: %s", doc)
				} else {
					assert.NoError(t, codecWellFormed(doc), "%s", doc)
				}
				codecGolden(t, name, doc)
			})
		}
	}
}

// codecSpecJSON is the spec §3.5 document with its added line breaks.
const codecSpecJSON = `{"applications":{"versions__delta":"1","apps__hashcode":"OUT_OF_SERVICE_1_UP_2_","application":[
 {"name":"ORDER-SERVICE","instance":[
  {"instanceId":"10.0.0.11:order-service:8080","hostName":"10.0.0.11","app":"ORDER-SERVICE","ipAddr":"10.0.0.11",
   "status":"UP","overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},
   "countryId":1,"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
   "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":1754500000123,
    "lastRenewalTimestamp":1754500390456,"evictionTimestamp":0,"serviceUpTimestamp":1754500000120},
   "metadata":{"management.port":"8081","zone":"zone-a"},
   "homePageUrl":"http://10.0.0.11:8080/","statusPageUrl":"http://10.0.0.11:8080/actuator/info",
   "healthCheckUrl":"http://10.0.0.11:8080/actuator/health","vipAddress":"order-service","secureVipAddress":"order-service",
   "isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"1754500000123","lastDirtyTimestamp":"1754499999870",
   "actionType":"ADDED"},
  {"instanceId":"10.0.0.12:order-service:8080","hostName":"10.0.0.12","app":"ORDER-SERVICE","ipAddr":"10.0.0.12",
   "status":"OUT_OF_SERVICE","overriddenStatus":"OUT_OF_SERVICE","port":{"$":8080,"@enabled":"true"},
   "securePort":{"$":443,"@enabled":"false"},"countryId":1,
   "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
   "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":1754500001200,
    "lastRenewalTimestamp":1754500391300,"evictionTimestamp":0,"serviceUpTimestamp":1754500001190},
   "metadata":{"@class":"java.util.Collections$EmptyMap"},
   "homePageUrl":"http://10.0.0.12:8080/","statusPageUrl":"http://10.0.0.12:8080/actuator/info",
   "healthCheckUrl":"http://10.0.0.12:8080/actuator/health","vipAddress":"order-service","secureVipAddress":"order-service",
   "isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"1754500200777","lastDirtyTimestamp":"1754500000950",
   "actionType":"MODIFIED"}]},
 {"name":"USER-SERVICE","instance":[
  {"instanceId":"10.0.0.21:user-service:9090","hostName":"10.0.0.21","app":"USER-SERVICE","ipAddr":"10.0.0.21",
   "status":"UP","overriddenStatus":"UNKNOWN","port":{"$":9090,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},
   "countryId":1,"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
   "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":1754500002000,
    "lastRenewalTimestamp":1754500392100,"evictionTimestamp":0,"serviceUpTimestamp":1754500001990},
   "metadata":{"@class":"java.util.Collections$EmptyMap"},
   "homePageUrl":"http://10.0.0.21:9090/","statusPageUrl":"http://10.0.0.21:9090/actuator/info",
   "healthCheckUrl":"http://10.0.0.21:9090/actuator/health","vipAddress":"user-service","secureVipAddress":"user-service",
   "isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"1754500002000","lastDirtyTimestamp":"1754500001500",
   "actionType":"ADDED"}]}]}}`

// codecSpecXMLHead is the spec §3.5 XML up to the second instance, as it
// starts the applications document.
const codecSpecXMLHead = `<applications>
  <versions__delta>1</versions__delta>
  <apps__hashcode>OUT_OF_SERVICE_1_UP_2_</apps__hashcode>
  <application>
    <name>ORDER-SERVICE</name>
    <instance>
      <instanceId>10.0.0.11:order-service:8080</instanceId>
      <hostName>10.0.0.11</hostName>
      <app>ORDER-SERVICE</app>
      <ipAddr>10.0.0.11</ipAddr>
      <status>UP</status>
      <overriddenstatus>UNKNOWN</overriddenstatus>
      <port enabled="true">8080</port>
      <securePort enabled="false">443</securePort>
      <countryId>1</countryId>
      <dataCenterInfo class="com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo">
        <name>MyOwn</name>
      </dataCenterInfo>
      <leaseInfo>
        <renewalIntervalInSecs>30</renewalIntervalInSecs>
        <durationInSecs>90</durationInSecs>
        <registrationTimestamp>1754500000123</registrationTimestamp>
        <lastRenewalTimestamp>1754500390456</lastRenewalTimestamp>
        <evictionTimestamp>0</evictionTimestamp>
        <serviceUpTimestamp>1754500000120</serviceUpTimestamp>
      </leaseInfo>
      <metadata>
        <management.port>8081</management.port>
        <zone>zone-a</zone>
      </metadata>
      <homePageUrl>http://10.0.0.11:8080/</homePageUrl>
      <statusPageUrl>http://10.0.0.11:8080/actuator/info</statusPageUrl>
      <healthCheckUrl>http://10.0.0.11:8080/actuator/health</healthCheckUrl>
      <vipAddress>order-service</vipAddress>
      <secureVipAddress>order-service</secureVipAddress>
      <isCoordinatingDiscoveryServer>false</isCoordinatingDiscoveryServer>
      <lastUpdatedTimestamp>1754500000123</lastUpdatedTimestamp>
      <lastDirtyTimestamp>1754499999870</lastDirtyTimestamp>
      <actionType>ADDED</actionType>
    </instance>
    <instance>
      <instanceId>10.0.0.12:order-service:8080</instanceId>`

func TestCodecGoldenMatchesSpecJSON(t *testing.T) {
	golden := codecReadGolden(t, "apps_full.json")

	var got, want any
	require.NoError(t, json.Unmarshal(golden, &got))
	require.NoError(t, json.Unmarshal([]byte(codecSpecJSON), &want))
	assert.Equal(t, want, got, "same keys and values as spec §3.5")

	// The spec only added line breaks and indentation: key order and
	// spelling must match byte for byte once they are removed.
	compact := regexp.MustCompile(`\n\s*`).ReplaceAllString(codecSpecJSON, "")
	assert.Equal(t, compact, string(golden))

	empty := codecReadGolden(t, "apps_empty_full.json")
	assert.Equal(t, `{"applications":{"versions__delta":"1","apps__hashcode":"","application":[]}}`, string(empty))
}

func TestCodecGoldenMatchesSpecXML(t *testing.T) {
	golden := codecReadGolden(t, "apps_full.xml")
	require.NoError(t, codecWellFormed(golden))
	assert.True(t, bytes.HasPrefix(golden, []byte(codecSpecXMLHead)), "golden XML starts like spec §3.5:\n%s", golden)
	assert.True(t, bytes.HasSuffix(golden, []byte("\n  </application>\n</applications>")))
	for _, want := range []string{
		"\n      <status>OUT_OF_SERVICE</status>\n      <overriddenstatus>OUT_OF_SERVICE</overriddenstatus>\n",
		"\n      <metadata class=\"java.util.Collections$EmptyMap\"/>\n",
		"\n      <actionType>MODIFIED</actionType>\n    </instance>\n  </application>\n  <application>\n    <name>USER-SERVICE</name>\n    <instance>\n",
		"\n      <port enabled=\"true\">9090</port>\n",
	} {
		assert.Contains(t, string(golden), want)
	}
	assert.NotContains(t, string(golden), "<?xml")

	// A generic decode sees the whole tree.
	var doc struct {
		Delta string `xml:"versions__delta"`
		Hash  string `xml:"apps__hashcode"`
		Apps  []struct {
			Name      string `xml:"name"`
			Instances []struct {
				ID       string `xml:"instanceId"`
				Status   string `xml:"status"`
				Override string `xml:"overriddenstatus"`
				Port     struct {
					Enabled string `xml:"enabled,attr"`
					N       int    `xml:",chardata"`
				} `xml:"port"`
				Metadata struct {
					Inner string `xml:",innerxml"`
				} `xml:"metadata"`
			} `xml:"instance"`
		} `xml:"application"`
	}
	require.NoError(t, xml.Unmarshal(golden, &doc))
	assert.Equal(t, "1", doc.Delta)
	assert.Equal(t, "OUT_OF_SERVICE_1_UP_2_", doc.Hash)
	require.Len(t, doc.Apps, 2)
	require.Len(t, doc.Apps[0].Instances, 2)
	require.Len(t, doc.Apps[1].Instances, 1)
	assert.Equal(t, "10.0.0.21:user-service:9090", doc.Apps[1].Instances[0].ID)
	assert.Equal(t, "OUT_OF_SERVICE", doc.Apps[0].Instances[1].Override)
	assert.Equal(t, "true", doc.Apps[0].Instances[0].Port.Enabled)
	assert.Equal(t, 8080, doc.Apps[0].Instances[0].Port.N)
	assert.Empty(t, doc.Apps[0].Instances[1].Metadata.Inner, "empty metadata has no whitespace content")

	empty := codecReadGolden(t, "apps_empty_full.xml")
	assert.Equal(t, "<applications>\n  <versions__delta>1</versions__delta>\n  <apps__hashcode></apps__hashcode>\n</applications>", string(empty))
}

// TestCodecComposition assembles documents of 0, 1 and many applications in
// every format, as the view does, and parses them back.
func TestCodecComposition(t *testing.T) {
	i11, i12, i21 := codecSpecInstances()
	amazon := codecAmazonInstance()
	sets := map[string][]codecApp{
		"none": nil,
		"one":  {{"ORDER-SERVICE", []*actors.Instance{i11}}},
		"many": {
			{"ORDER-SERVICE", []*actors.Instance{i11, i12}},
			{"USER-SERVICE", []*actors.Instance{i21}},
			{"BILLING", []*actors.Instance{amazon}},
			{"EMPTY", nil},
		},
	}
	for _, cf := range codecFormats {
		e := Encoders()[cf.f]
		for name, apps := range sets {
			t.Run(fmt.Sprintf("%s_%s_%s", cf.name, cf.ext, name), func(t *testing.T) {
				doc := codecAppsDocument(e, "7", "UP_1_", apps...)
				single := e.AppendApplicationDocument(nil, "X<&>", []*actors.Instance{i11, nil, i12})
				if codecIsJSON(cf.f) {
					var got struct {
						Applications struct {
							Delta string `json:"versions__delta"`
							Hash  string `json:"apps__hashcode"`
							Apps  []struct {
								Name      string            `json:"name"`
								Instances []json.RawMessage `json:"instance"`
							} `json:"application"`
						} `json:"applications"`
					}
					require.NoError(t, json.Unmarshal(doc, &got), "%s", doc)
					assert.Equal(t, "7", got.Applications.Delta)
					assert.Equal(t, "UP_1_", got.Applications.Hash)
					require.Len(t, got.Applications.Apps, len(apps))
					for i, a := range apps {
						assert.Equal(t, a.name, got.Applications.Apps[i].Name)
						assert.Len(t, got.Applications.Apps[i].Instances, len(a.instances))
					}
					assert.Contains(t, string(doc), `"application":[`)

					var one struct {
						Application struct {
							Name      string            `json:"name"`
							Instances []json.RawMessage `json:"instance"`
						} `json:"application"`
					}
					require.NoError(t, json.Unmarshal(single, &one), "%s", single)
					assert.Equal(t, "X<&>", one.Application.Name)
					assert.Len(t, one.Application.Instances, 2)
					return
				}
				require.NoError(t, codecWellFormed(doc), "%s", doc)
				var got struct {
					XMLName xml.Name `xml:"applications"`
					Delta   string   `xml:"versions__delta"`
					Hash    string   `xml:"apps__hashcode"`
					Apps    []struct {
						Name      string     `xml:"name"`
						Instances []struct{} `xml:"instance"`
					} `xml:"application"`
				}
				require.NoError(t, xml.Unmarshal(doc, &got))
				assert.Equal(t, "7", got.Delta)
				assert.Equal(t, "UP_1_", got.Hash)
				require.Len(t, got.Apps, len(apps))
				for i, a := range apps {
					assert.Equal(t, a.name, got.Apps[i].Name)
					assert.Len(t, got.Apps[i].Instances, len(a.instances))
				}

				require.NoError(t, codecWellFormed(single), "%s", single)
				var one struct {
					XMLName   xml.Name   `xml:"application"`
					Name      string     `xml:"name"`
					Instances []struct{} `xml:"instance"`
				}
				require.NoError(t, xml.Unmarshal(single, &one))
				assert.Equal(t, "X<&>", one.Name)
				assert.Len(t, one.Instances, 2)
			})
		}
	}
}

func TestCodecEncoders(t *testing.T) {
	enc := Encoders()
	for _, cf := range codecFormats {
		require.NotNil(t, enc[cf.f])
		want := "application/xml"
		if codecIsJSON(cf.f) {
			want = "application/json"
		}
		assert.Equal(t, want, enc[cf.f].ContentType())
	}
	assert.Panics(t, func() { AppendInstanceDocument(nil, view.NumFormats, &actors.Instance{}) })

	// Appending keeps what dst held.
	i11, _, _ := codecSpecInstances()
	for _, cf := range codecFormats {
		got := AppendInstanceDocument([]byte("prefix"), cf.f, i11)
		assert.Equal(t, AppendInstanceDocument(nil, cf.f, i11), got[len("prefix"):])
	}
}

// TestCodecFargoReadsOutput feeds the documents to fargo v1.4.0's own
// decoders: fargo is strict about "@enabled" strings, number types and empty
// metadata elements.
func TestCodecFargoReadsOutput(t *testing.T) {
	amazon := codecAmazonInstance()
	i11, i12, i21 := codecSpecInstances()
	apps := append(codecSpecApps(), codecApp{"BILLING", []*actors.Instance{amazon}})
	for _, cf := range codecFormats {
		t.Run(cf.name+"_"+cf.ext, func(t *testing.T) {
			doc := codecAppsDocument(Encoders()[cf.f], "1", "UP_2_", apps...)
			var r *fargo.GetAppsResponse
			if codecIsJSON(cf.f) {
				var rj fargo.GetAppsResponseJson
				require.NoError(t, json.Unmarshal(doc, &rj))
				r = rj.Response
			} else {
				r = new(fargo.GetAppsResponse)
				require.NoError(t, xml.Unmarshal(doc, r))
			}
			require.NotNil(t, r)
			assert.Equal(t, 1, r.VersionsDelta)
			require.Len(t, r.Applications, 3)
			for _, a := range r.Applications {
				require.NotPanics(t, func() { assert.NoError(t, a.ParseAllMetadata()) })
			}
			got := r.Applications[0].Instances
			require.Len(t, got, 2)
			assert.Equal(t, i11.InstanceID, got[0].InstanceId)
			assert.Equal(t, 8080, got[0].Port)
			assert.True(t, got[0].PortEnabled)
			assert.Equal(t, 443, got[0].SecurePort)
			assert.False(t, got[0].SecurePortEnabled)
			assert.Equal(t, fargo.StatusType(i12.Status), got[1].Status)
			assert.Equal(t, "order-service", got[0].VipAddress)
			assert.Equal(t, i21.HostName, r.Applications[1].Instances[0].HostName)

			aws := r.Applications[2].Instances[0]
			assert.Equal(t, "Amazon", aws.DataCenterInfo.Name)
			assert.Equal(t, "i-0abc", aws.DataCenterInfo.Metadata.InstanceID)
			assert.Equal(t, "eu-west-1a", aws.DataCenterInfo.Metadata.AvailabilityZone)
			assert.False(t, aws.PortEnabled)
			assert.True(t, aws.SecurePortEnabled)

			if cf.name == "full" {
				if codecIsJSON(cf.f) {
					v, err := got[0].Metadata.GetString("management.port")
					require.NoError(t, err)
					assert.Equal(t, "8081", v)
					v, err = aws.Metadata.GetString("$dollar")
					require.NoError(t, err)
					assert.Equal(t, "x$y", v)
				} else {
					// fargo's XML metadata reader recasts numbers; the
					// string value is readable as a float.
					n, err := got[0].Metadata.GetFloat64("management.port")
					require.NoError(t, err)
					assert.Equal(t, 8081.0, n)
					v, err := got[0].Metadata.GetString("zone")
					require.NoError(t, err)
					assert.Equal(t, "zone-a", v)
				}
			}
		})
	}

	// Single-application and single-instance documents.
	var app fargo.GetAppResponseJson
	require.NoError(t, json.Unmarshal(Encoders()[view.FormatJSON].AppendApplicationDocument(nil, "ORDER-SERVICE", []*actors.Instance{i11, i12}), &app))
	assert.Equal(t, "ORDER-SERVICE", app.Application.Name)
	assert.Len(t, app.Application.Instances, 2)
	var xapp fargo.Application
	require.NoError(t, xml.Unmarshal(Encoders()[view.FormatXML].AppendApplicationDocument(nil, "ORDER-SERVICE", []*actors.Instance{i11, i12}), &xapp))
	assert.Len(t, xapp.Instances, 2)
	require.NoError(t, xapp.ParseAllMetadata())

	var inst struct {
		Instance fargo.Instance `json:"instance"`
	}
	require.NoError(t, json.Unmarshal(AppendInstanceDocument(nil, view.FormatJSON, i11), &inst))
	assert.Equal(t, 8080, inst.Instance.Port)
	var xinst fargo.Instance
	require.NoError(t, xml.Unmarshal(AppendInstanceDocument(nil, view.FormatXML, amazon), &xinst))
	assert.Equal(t, 7002, xinst.SecurePort)
	assert.True(t, xinst.SecurePortEnabled)
}

// codecBenchInstances returns n instances of one application.
func codecBenchInstances(n int) []*actors.Instance {
	i11, _, _ := codecSpecInstances()
	out := make([]*actors.Instance, n)
	for i := range out {
		c := i11.Clone()
		c.InstanceID = fmt.Sprintf("10.0.%d.%d:order-service:8080", i/256, i%256)
		c.HostName = fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		c.IPAddr = c.HostName
		c.Metadata["version"] = "1.2.3"
		c.Metadata["weight"] = "10"
		out[i] = c
	}
	return out
}

func benchmarkAppendApplication(b *testing.B, f view.Format) {
	insts := codecBenchInstances(100)
	e := Encoders()[f]
	buf := e.AppendApplication(nil, "ORDER-SERVICE", insts)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		buf = e.AppendApplication(buf[:0], "ORDER-SERVICE", insts)
	}
}

// BenchmarkAppendApplicationJSON encodes one application of 100 instances in
// full JSON into a reused buffer.
func BenchmarkAppendApplicationJSON(b *testing.B) { benchmarkAppendApplication(b, view.FormatJSON) }

// BenchmarkAppendApplicationXML encodes one application of 100 instances in
// full XML into a reused buffer.
func BenchmarkAppendApplicationXML(b *testing.B) { benchmarkAppendApplication(b, view.FormatXML) }

// BenchmarkAppendApplicationCompactJSON is the compact JSON variant.
func BenchmarkAppendApplicationCompactJSON(b *testing.B) {
	benchmarkAppendApplication(b, view.FormatCompactJSON)
}
