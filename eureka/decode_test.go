package eureka

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

func TestCodecRequestCodec(t *testing.T) {
	tests := []struct {
		contentType     string
		json, latin1    bool
		wantUnsupported bool
	}{
		{contentType: ""},
		{contentType: "*/*"},
		{contentType: "application/*"},
		{contentType: "application/xml"},
		{contentType: "text/xml; charset=UTF-8"},
		{contentType: "application/atom+xml"},
		{contentType: "application/xml; charset=ISO-8859-1", latin1: true},
		{contentType: "application/json", json: true},
		{contentType: "Application/JSON; charset=utf-8", json: true},
		{contentType: "application/vnd.eureka+json", json: true},
		{contentType: "application/json; charset=latin1", json: true, latin1: true},
		{contentType: "application/json; charset", json: true}, // malformed parameter ignored
		{contentType: "text/plain", wantUnsupported: true},
		{contentType: "application/x-www-form-urlencoded", wantUnsupported: true},
		{contentType: "application/json; charset=utf-16", wantUnsupported: true},
		{contentType: "application/xml; charset=windows-1252", wantUnsupported: true},
		{contentType: "/", wantUnsupported: true},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			isJSON, latin1, err := requestCodec(tt.contentType)
			if tt.wantUnsupported {
				assert.ErrorIs(t, err, ErrUnsupportedMediaType)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.json, isJSON)
			assert.Equal(t, tt.latin1, latin1)
		})
	}
}

func TestCodecErrors(t *testing.T) {
	assert.True(t, strings.HasPrefix(ErrBadBody.Error(), "eureka: "))
	assert.True(t, strings.HasPrefix(ErrUnsupportedMediaType.Error(), "eureka: "))

	_, err := DecodeInstance("text/plain", []byte(`{"instance":{}}`))
	assert.ErrorIs(t, err, ErrUnsupportedMediaType)
	assert.NotErrorIs(t, err, ErrBadBody)
	_, err = DecodeInstance("application/json", []byte(`<instance/>`))
	assert.ErrorIs(t, err, ErrBadBody)
	assert.NotErrorIs(t, err, ErrUnsupportedMediaType)
}

func TestCodecRoundTrip(t *testing.T) {
	i11, i12, i21 := codecSpecInstances()
	amazon := codecAmazonInstance() // its XML round trip loses a control character and a key
	minimal := &actors.Instance{HostName: "h", App: "A", IPAddr: "1.2.3.4", Status: actors.StatusDown,
		OverriddenStatus: actors.StatusUnknown, CountryID: 1, Port: actors.Port{Number: 1, Enabled: true},
		DataCenterInfo: actors.DataCenterInfo{Class: classDefaultDataCenter, Name: "MyOwn"},
		LeaseInfo:      actors.LeaseInfo{RenewalIntervalSecs: 30, DurationSecs: 90}}
	require.Equal(t, i11, codecCanonical(i11, true), "the spec instances survive XML unchanged")
	for _, inst := range []*actors.Instance{i11, i12, i21, amazon, minimal} {
		for _, ct := range []struct {
			f           view.Format
			contentType string
		}{{view.FormatJSON, "application/json"}, {view.FormatXML, "application/xml"}} {
			t.Run(inst.ID()+"/"+ct.contentType, func(t *testing.T) {
				doc := AppendInstanceDocument(nil, ct.f, inst)
				got, err := DecodeInstance(ct.contentType, doc)
				require.NoError(t, err, "%s", doc)
				got.Normalize()
				assert.Equal(t, codecCanonical(inst, ct.f == view.FormatXML), got)
			})
		}
	}
}

// codecXMLChar reports whether XML 1.0 can hold r.
func codecXMLChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// codecCanonical is what an encode/decode round trip of inst must give:
// the data center class as the encoders write it, and for XML the strings
// with characters XML cannot hold replaced and the metadata keys XML cannot
// name dropped.
func codecCanonical(inst *actors.Instance, forXML bool) *actors.Instance {
	c := inst.Clone()
	c.DataCenterInfo.Class = dataCenterClass(&c.DataCenterInfo)
	if !forXML {
		return c
	}
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if !codecXMLChar(r) {
				return utf8.RuneError
			}
			return r
		}, s)
	}
	cleanMap := func(m map[string]string) map[string]string {
		var out map[string]string
		for k, v := range m {
			if !xmlNameOK(k) {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = clean(v)
		}
		return out
	}
	for _, p := range []*string{&c.InstanceID, &c.HostName, &c.App, &c.IPAddr, &c.SID, &c.AppGroupName,
		&c.HomePageURL, &c.StatusPageURL, &c.HealthCheckURL, &c.SecureHealthCheckURL, &c.VIPAddress,
		&c.SecureVIPAddress, &c.ASGName, &c.DataCenterInfo.Name} {
		*p = clean(*p)
	}
	c.ActionType = actors.ActionType(clean(string(c.ActionType)))
	c.Metadata = cleanMap(c.Metadata)
	c.DataCenterInfo.Metadata = cleanMap(c.DataCenterInfo.Metadata)
	c.Normalize()
	return c
}

// codecCheckInstance is the property the fuzz targets check on every
// decoded instance: normalized, it encodes in every format to well-formed
// documents, and full JSON and XML decode back to the same instance.
func codecCheckInstance(t *testing.T, inst *actors.Instance) {
	t.Helper()
	inst.Normalize()
	for _, cf := range codecFormats {
		doc := AppendInstanceDocument(nil, cf.f, inst)
		app := Encoders()[cf.f].AppendApplicationDocument(nil, inst.App, []*actors.Instance{inst})
		if codecIsJSON(cf.f) {
			require.True(t, json.Valid(doc), "%s", doc)
			require.True(t, json.Valid(app), "%s", app)
		} else {
			require.NoError(t, codecWellFormed(doc), "%s", doc)
			require.NoError(t, codecWellFormed(app), "%s", app)
		}
	}
	for _, ct := range []struct {
		f      view.Format
		header string
		xml    bool
	}{{view.FormatJSON, "application/json", false}, {view.FormatXML, "application/xml", true}} {
		doc := AppendInstanceDocument(nil, ct.f, inst)
		got, err := DecodeInstance(ct.header, doc)
		require.NoError(t, err, "%s", doc)
		got.Normalize()
		require.Equal(t, codecCanonical(inst, ct.xml), got, "%s", doc)
	}
}

// codecWriteSeeds writes seeds as files of the fuzz corpus of target (with
// -update) or checks that they are there.
func codecWriteSeeds(t *testing.T, target string, seeds []codecSeed) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	for _, s := range seeds {
		path := filepath.Join(dir, "seed-"+s.name)
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s.body)
		if *updateGolden {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "missing seed corpus file; run go test ./eureka/ -run FuzzSeed -update")
		assert.Equal(t, content, string(got))
	}
}

type codecSeed struct {
	name string
	body string
}

func TestCodecFuzzSeedCorpus(t *testing.T) {
	codecWriteSeeds(t, "FuzzDecodeInstanceJSON", codecJSONSeeds)
	codecWriteSeeds(t, "FuzzDecodeInstanceXML", codecXMLSeeds)
	codecWriteSeeds(t, "FuzzDecodeReplicationList", codecReplicationSeeds)
}

func BenchmarkDecodeInstanceJSON(b *testing.B) {
	body := []byte(codecJavaBody)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeInstance("application/json", body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeInstanceXML(b *testing.B) {
	i11, _, _ := codecSpecInstances()
	body := AppendInstanceDocument(nil, view.FormatXML, i11)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeInstance("application/xml", body); err != nil {
			b.Fatal(err)
		}
	}
}
