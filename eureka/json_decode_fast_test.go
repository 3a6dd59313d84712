package eureka

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameDecoding checks that the fast decoder reads body exactly as
// decodeInstanceJSON does: the same instance, or the same error.
func sameDecoding(t *testing.T, body []byte) {
	t.Helper()
	want, wantErr := decodeInstanceJSON(body)
	got, gotErr := decodeInstanceJSONFast(body)
	if wantErr != nil {
		require.Error(t, gotErr, "%s", body)
		assert.Equal(t, wantErr.Error(), gotErr.Error(), "%s", body)
		return
	}
	require.NoError(t, gotErr, "%s", body)
	assert.Equal(t, want, got, "%s", body)
}

// fuzzCorpus returns the bodies of the checked-in FuzzDecodeInstanceJSON
// corpus.
func fuzzCorpus(t *testing.T) [][]byte {
	files, err := filepath.Glob("testdata/fuzz/FuzzDecodeInstanceJSON/*")
	require.NoError(t, err)
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n") {
			if s, ok := strings.CutPrefix(line, "[]byte("); ok {
				if body, err := strconv.Unquote(strings.TrimSuffix(s, ")")); err == nil {
					out = append(out, []byte(body))
				}
			}
		}
	}
	return out
}

// The fast decoder agrees with decodeInstanceJSON on every seed, every
// corpus body, and the shapes where only careful reading agrees: duplicate
// keys, nulls, coercions, type errors in order, escapes and bad syntax.
func TestDecodeInstanceJSONFastMatches(t *testing.T) {
	var bodies [][]byte
	for _, s := range codecJSONSeeds {
		bodies = append(bodies, []byte(s.body))
	}
	bodies = append(bodies, fuzzCorpus(t)...)
	for _, s := range []string{
		`{"instance":{"app":"A","app":"B","metadata":{"k":{"x":1},"k":"v"}}}`,
		`{"instance":{"app":"A","metadata":{"k":"v","k":{"x":1}}}}`,
		`{"instance":null,"app":"ROOT"}`, `{"instance":[],"app":"X"}`, `[]`, `"x"`, `{}`, `{"instance":{}}`,
		`{"instance":{"port":{"$":"8080","@enabled":" FALSE "},"securePort":{"$":443.0,"@enabled":"TRUE"}}}`,
		`{"instance":{"port":"80","securePort":{"@enabled":true}}}`, `{"instance":{"port":[1]}}`,
		`{"instance":{"port":{"$":"x"},"status":1,"app":2}}`, `{"instance":{"countryId":1e3,"status":"up"}}`,
		`{"instance":{"countryId":1.5}}`,
		`{"instance":{"lastDirtyTimestamp":"-0012","lastUpdatedTimestamp":"+5","countryId":"-"}}`,
		`{"instance":{"lastDirtyTimestamp":"1234567890123456789","lastUpdatedTimestamp":"99999999999999999999"}}`,
		`{"instance":{"lastDirtyTimestamp":12345678901234567890,"lastUpdatedTimestamp":-0,"countryId":"1e2"}}`,
		`{"instance":{"lastDirtyTimestamp":"1","metadata":{"n":1.50,"m":-0}}}`, `{"instance":{"lastDirtyTimestamp":" 17 ","overriddenstatus":"down"}}`,
		`{"instance":{"overriddenStatus":null,"overriddenstatus":"DOWN"}}`,
		`{"instance":{"isCoordinatingDiscoveryServer":"True","metadata":{"a":1,"b":true,"c":null,"@class":"x"}}}`,
		`{"instance":{"dataCenterInfo":{"name":"Amazon","metadata":{"instance-id":"i-1","n":2}}}}`,
		`{"instance":{"dataCenterInfo":{"name":"MyOwn","metadata":{"x":[1]}}}}`,
		`{"instance":{"leaseInfo":{"durationInSecs":"90","renewalIntervalInSecs":[]}}}`,
		`{"instance":{"app":"a\u00e9\"b","hostName":"\ud800"}}`, `{"instance":{"app":"A"}} x`, `{"instance":`,
		`{"instance":{"app":"A",}}`, "{\"instance\":{\"app\":\"A\x01\"}}", `{"instance":{"app":"ÄÖ"}}`,
		strings.Repeat("[", 400) + strings.Repeat("]", 400),
		`{"a":` + strings.Repeat(`{"a":`, 350) + `1` + strings.Repeat("}", 351),
	} {
		bodies = append(bodies, []byte(s))
	}
	for _, b := range bodies {
		sameDecoding(t, b)
	}
}

// FuzzDecodeInstanceJSONFast holds the two JSON decoders equal.
func FuzzDecodeInstanceJSONFast(f *testing.F) {
	for _, s := range codecJSONSeeds {
		f.Add([]byte(s.body))
	}
	f.Fuzz(sameDecoding)
}

// The metadata that instances repeat is decoded into one shared map per
// scratch, keyed by its members' text: equal members share it, and members
// that differ (however their bytes line up) do not.
func TestFastDecoderSharesRepeatedMetadata(t *testing.T) {
	sc := fjScratches.New().(*fjScratch)
	decode := func(md string) map[string]string {
		t.Helper()
		inst, err := sc.decode([]byte(`{"instance":{"app":"A","hostName":"h","metadata":` + md + `}}`))
		require.NoError(t, err)
		return inst.Metadata
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	a := decode(`{"management.port":"8081","zone":"z"}`)
	b := decode(`{"management.port":"8081","zone":"z"}`)
	assert.Equal(t, map[string]string{"management.port": "8081", "zone": "z"}, a)
	assert.True(t, same(a, b), "equal metadata, one map")
	assert.True(t, same(a, decode(`{"management.port":8081,"zone":"z","n":null,"@class":"x"}`)), "the same strings kept")

	ab, a2 := decode(`{"ab":"c"}`), decode(`{"a":"bc"}`)
	assert.Equal(t, map[string]string{"ab": "c"}, ab)
	assert.Equal(t, map[string]string{"a": "bc"}, a2)
	assert.False(t, same(ab, a2))
	assert.Nil(t, decode(`{}`))

	// The data center's metadata is the caller's to write (Amazon's
	// instance-id is filled in): never shared.
	dc := func() map[string]string {
		inst, err := sc.decode([]byte(`{"instance":{"app":"A","dataCenterInfo":{"name":"Amazon","metadata":{"k":"v"}}}}`))
		require.NoError(t, err)
		return inst.DataCenterInfo.Metadata
	}
	assert.False(t, same(dc(), dc()))
}
