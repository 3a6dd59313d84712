package eureka

import (
	"encoding/xml"
	"testing"

	"github.com/hudl/fargo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors/view"
)

func TestXMLNames(t *testing.T) {
	tests := []struct {
		key, escaped string
		ok           bool
	}{
		{"zone", "zone", true},
		{"management.port", "management.port", true},
		{"a_b", "a__b", true},
		{"_-", "__-", true},
		{"$x", "_-x", true},
		{"x$_y", "x_-__y", true},
		{"é-ключ", "é-ключ", true},
		{"a1-b.c", "a1-b.c", true},
		{"", "", false},
		{"1abc", "1abc", false},
		{"-a", "-a", false},
		{".a", ".a", false},
		{"a b", "a b", false},
		{"a:b", "a:b", false},
		{"a/b", "a/b", false},
		{"@class", "@class", false},
		{"a\xffb", "a\xffb", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.ok, xmlNameOK(tt.key), "%q", tt.key)
		if !tt.ok {
			continue
		}
		escaped := string(appendXMLName(nil, tt.key))
		assert.Equal(t, tt.escaped, escaped)
		assert.Equal(t, tt.key, unescapeXMLName(escaped))
		assert.NoError(t, codecWellFormed([]byte("<"+escaped+"/>")))
	}
	assert.Equal(t, "a_", unescapeXMLName("a_"))
	assert.Equal(t, "a_b", unescapeXMLName("a_b"))
}

func TestAppendXMLText(t *testing.T) {
	tests := []struct {
		in         string
		text, attr string
	}{
		{"plain", "plain", "plain"},
		{`<&>"'`, "&lt;&amp;&gt;&quot;&apos;", "&lt;&amp;&gt;&quot;&apos;"},
		{"a\tb\nc\rd", "a\tb\nc&#xD;d", "a&#x9;b&#xA;c&#xD;d"},
		{"\x00\x01\x1f", "\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD\uFFFD"},
		{"ok\xffbad", "ok\uFFFDbad", "ok\uFFFDbad"},
		{"\uFFFE\uFFFF✓😀", "\uFFFD\uFFFD✓😀", "\uFFFD\uFFFD✓😀"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.text, string(AppendXMLText(nil, tt.in, false)), "%q", tt.in)
		assert.Equal(t, tt.attr, string(AppendXMLText(nil, tt.in, true)), "%q", tt.in)
		doc := "<a b=\"" + string(AppendXMLText(nil, tt.in, true)) + "\">" + string(AppendXMLText(nil, tt.in, false)) + "</a>"
		assert.NoError(t, codecWellFormed([]byte(doc)), "%q", doc)
	}
}

// TestEncodeXMLMetadataNeverBlank pins the fargo crash guard: a metadata
// element is either self-closing or has element children.
func TestEncodeXMLMetadataNeverBlank(t *testing.T) {
	i11, _, _ := codecSpecInstances()
	for _, md := range []map[string]string{nil, {}, {"1bad": "x", "": "y", "a b": "z"}} {
		inst := i11.Clone()
		inst.Metadata = md
		for _, f := range []view.Format{view.FormatXML} {
			doc := string(AppendInstanceDocument(nil, f, inst))
			assert.Contains(t, doc, "\n  <metadata class=\"java.util.Collections$EmptyMap\"/>\n")
			var x fargo.Instance
			require.NoError(t, xml.Unmarshal([]byte(doc), &x))
			app := fargo.Application{Instances: []*fargo.Instance{&x}}
			require.NotPanics(t, func() { assert.NoError(t, app.ParseAllMetadata()) })
		}
	}
	aws := codecAmazonInstance()
	aws.DataCenterInfo.Metadata = nil
	for _, f := range []view.Format{view.FormatXML, view.FormatCompactXML} {
		doc := string(AppendInstanceDocument(nil, f, aws))
		assert.Contains(t, doc, "<name>Amazon</name>\n    <metadata/>\n  </dataCenterInfo>")
	}
}
