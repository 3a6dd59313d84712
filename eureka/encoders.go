package eureka

// The encoders handed to the view (Encoders) and the single-instance
// document. The formats themselves are in json_encode.go, xml_encode.go and
// compact.go.

import (
	"fmt"
	"slices"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

// Content types of the documents the encoders produce. Eureka sends them
// without a charset.
const (
	contentTypeJSON = "application/json"
	contentTypeXML  = "application/xml"
)

// Encoders returns the view encoders indexed by view.Format (FormatJSON,
// FormatXML, FormatCompactJSON, FormatCompactXML). The encoders are
// stateless and safe for concurrent use.
func Encoders() [view.NumFormats]view.Encoder {
	var e [view.NumFormats]view.Encoder
	e[view.FormatJSON] = jsonEncoder{}
	e[view.FormatXML] = xmlEncoder{}
	e[view.FormatCompactJSON] = jsonEncoder{compact: true}
	e[view.FormatCompactXML] = xmlEncoder{compact: true}
	return e
}

// AppendInstanceDocument appends the single-instance document
// ({"instance":{…}} or <instance>…</instance>) for GET apps/{app}/{id} and
// GET instances/{id}. The compact formats give the compact instance shape. It
// panics on a Format outside the four known ones, which is a programming
// error.
func AppendInstanceDocument(dst []byte, f view.Format, inst *actors.Instance) []byte {
	switch f {
	case view.FormatJSON:
		dst = append(dst, `{"instance":`...)
		dst = appendInstanceJSON(dst, inst)
		return append(dst, '}')
	case view.FormatCompactJSON:
		dst = append(dst, `{"instance":`...)
		dst = appendCompactInstanceJSON(dst, inst)
		return append(dst, '}')
	case view.FormatXML:
		return appendInstanceXML(dst, inst, 0)
	case view.FormatCompactXML:
		return appendCompactInstanceXML(dst, inst, 0)
	}
	panic(fmt.Sprintf("eureka: unknown view.Format %d", f))
}

// sortedKeys appends the keys of m to buf and sorts them. Callers pass a
// stack array's slice so that small maps cost no allocation.
func sortedKeys(buf []string, m map[string]string) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}
