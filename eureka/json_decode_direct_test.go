package eureka

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The clients' usual bodies take the direct way, and read there exactly as
// encoding/json reads them (whatever the direct way gives up on goes to the
// fast decoder, which TestDecodeInstanceJSONFastMatches and
// FuzzDecodeInstanceJSONFast hold equal, through decodeInstanceJSONFast, to
// encoding/json as well).
func TestDecodeDirectTakesTheUsualBodies(t *testing.T) {
	usual := map[string]string{
		"java": codecJavaBody, "fargo": codecFargoJSONBody, "js": codecJSBody, "js-readme": codecJSReadmeBody,
		"bench": `{"instance":{"instanceId":"10.128.0.1:service-00001:8080","hostName":"10.128.0.1","app":"SERVICE-00001",` +
			`"ipAddr":"10.128.0.1","status":"UP","overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},` +
			`"securePort":{"$":443,"@enabled":"false"},"countryId":1,"dataCenterInfo":{"@class":` +
			`"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},"leaseInfo":{"renewalIntervalInSecs":30,` +
			`"durationInSecs":90,"registrationTimestamp":0,"lastRenewalTimestamp":0,"evictionTimestamp":0,"serviceUpTimestamp":0},` +
			`"metadata":{"management.port":"8081","zone":"zone-a"},"homePageUrl":"http://10.128.0.1:8080/",` +
			`"statusPageUrl":"http://10.128.0.1:8080/actuator/info","healthCheckUrl":"http://10.128.0.1:8080/actuator/health",` +
			`"vipAddress":"service-00001","secureVipAddress":"service-00001","isCoordinatingDiscoveryServer":"false",` +
			`"lastUpdatedTimestamp":"1754499999870","lastDirtyTimestamp":"1754499999870"}}`,
		"empty metadata marker": `{"instance":{"instanceId":"i","hostName":"h","app":"A","ipAddr":"1.2.3.4",
			"metadata":{"@class":"java.util.Collections$EmptyMap"},"port":{"$":8080,"@enabled":true},
			"securePort":{"@enabled":" FALSE ","$":-0},"isCoordinatingDiscoveryServer":false,"overriddenstatus":"down",
			"lastDirtyTimestamp":1754500000000,"dataCenterInfo":{"name":"MyOwn"},"leaseInfo":{}}}`,
		"metadata scalars": `{"instance":{"app":"A","metadata":{"n":1.50,"m":-0,"e":2E+3,"f":0.5e-2,"b":true,"c":false},
			"port":"8080","securePort":{"$":"8443"},"lastUpdatedTimestamp":"-12"}}`,
	}
	for name, body := range usual {
		t.Run(name, func(t *testing.T) {
			want, err := decodeInstanceJSON([]byte(body))
			require.NoError(t, err)
			sc := fjScratches.New().(*fjScratch)
			got, ok := sc.decodeDirect([]byte(body))
			require.True(t, ok, "the direct way reads %s", name)
			assert.Equal(t, want, got)
		})
	}
}

// The direct way gives up on what it does not read as encoding/json would
// (so the other decoders judge it): bodies JSON forbids, and shapes it does
// not take.
func TestDecodeDirectGivesUp(t *testing.T) {
	for _, body := range append([]string{
		`{"instance":{"app":"A","app":"B"}}`,          // a repeated key
		`{"instance":{"app":null}}`,                   // a null
		`{"instance":{"app":"A","unknown":1}}`,        // an unknown key
		`{"instance":{"countryId":1.0}}`,              // a fraction
		`{"instance":{"countryId":1e3}}`,              // an exponent
		`{"instance":{"countryId":01}}`,               // a leading zero
		`{"instance":{"countryId":"1"}}`,              // a string for a number
		`{"instance":{"port":"8080x"}}`,               // not a port number
		`{"instance":{"port":{"$":"0x1F"}}}`,          // nor this
		`{"instance":{"port":{"@enabled":"true"}}}`,   // a port without its number
		`{"instance":{"metadata":{"k":"v","k":"w"}}}`, // a repeated metadata key
		`{"instance":{"metadata":{"k":null}}}`,        // a null member
		`{"instance":{"metadata":{"k":[1]}}}`,         // not a scalar
		`{"instance":{"metadata":{"k":1.}}}`, `{"instance":{"metadata":{"k":-}}}`, `{"instance":{"metadata":{"k":1e}}}`,
		`{"instance":{"metadata":{"k":01}}}`, `{"instance":{"metadata":{"k":NaN}}}`, `{"instance":{"metadata":{"k":.5}}}`,
		`{"instance":{"dataCenterInfo":{"name":"Amazon","metadata":{}}}}`, // data center metadata
		`{"instance":{"overriddenStatus":"UP","overriddenstatus":"DOWN"}}`,
		`{"instance":{"lastDirtyTimestamp":" 17 "}}`,
		`{"instance":{"isCoordinatingDiscoveryServer":tru}}`,
		`{"instance":{"isCoordinatingDiscoveryServer":truex}}`,
		`{"instance":{"app":"A"}} x`, `{"instance":{"app":"A",}}`, `{"instance":{"app":"A"}`, `{"instance":`,
		`{"instance":{"app":"A"},"instance":{"app":"A"}}`, `{"app":"A"}`, `{"instance":{}, "x":1}`,
		"{\"instance\":{\"app\":\"A\x01\"}}", "{\"instance\":{\"app\":\"A\"}}\x00",
		`{"instance":{"countryId":12345678901234567890}}`,
	}, fastJSONLenientBodies...) {
		sc := fjScratches.New().(*fjScratch)
		_, ok := sc.decodeDirect([]byte(body))
		assert.False(t, ok, "%s", body)
		sameDecoding(t, []byte(body))
	}
	// What it does take, whitespace included, reads as encoding/json reads it.
	sameDecoding(t, []byte(" {\n\t\"instance\" : { \"app\" : \"A\" , \"countryId\" : -0 } }\r\n"))
	sameDecoding(t, []byte(strings.ReplaceAll(codecJavaBody, ",", " ,\n ")))
}

// hasControl agrees with a byte-by-byte look at every length and position.
func TestHasControl(t *testing.T) {
	for n := 0; n <= 24; n++ {
		for pos := -1; pos < n; pos++ {
			for _, c := range []byte{0x00, 0x01, '\t', '\n', 0x1f} {
				b := []byte(strings.Repeat("aé\x7f ", n)[:n]) // ASCII, UTF-8 and DEL: none below 0x20
				want := false
				if pos >= 0 {
					b[pos], want = c, true
				}
				assert.Equal(t, want, hasControl(b), "%q", b)
			}
		}
	}
}
