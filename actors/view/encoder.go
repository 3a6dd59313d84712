package view

import "github.com/heureka/heureka/actors"

// Format names one encoding of the cached read responses.
type Format uint8

// The formats the view caches. Full is Eureka's default codec; compact is what
// clients get with "X-Eureka-Accept: compact".
const (
	FormatJSON Format = iota
	FormatXML
	FormatCompactJSON
	FormatCompactXML
	// NumFormats is the number of formats; it sizes per-format arrays.
	NumFormats
)

// Encoder renders registry parts in one wire format. The view calls it to
// build cached bytes and never parses what it returns; implementations live in
// package eureka. A whole applications document is
//
//	ApplicationsOpen + Application(a1) + ApplicationsSeparator + Application(a2) + … + ApplicationsClose
//
// and one application element is
//
//	ApplicationOpen(name) + Instance(i1) + InstanceSeparator + Instance(i2) + … + ApplicationClose
//
// so the view can cache each instance's bytes once and reassemble the
// registry, the delta and the VIP documents from them without encoding any
// instance that did not change. Implementations must be safe for concurrent
// use and must not keep dst or the instances.
type Encoder interface {
	// ContentType is the Content-Type of documents in this format.
	ContentType() string
	// AppendApplicationsOpen appends the start of an applications document
	// with its versions__delta and apps__hashcode values.
	AppendApplicationsOpen(dst []byte, versionDelta, hashcode string) []byte
	// AppendApplicationsSeparator appends what stands between two application
	// elements inside an applications document.
	AppendApplicationsSeparator(dst []byte) []byte
	// AppendApplicationsClose appends the end of an applications document.
	AppendApplicationsClose(dst []byte) []byte
	// AppendApplication appends one application element (name and
	// instances) as it stands inside an applications document. It must equal
	// the concatenation of the four piece methods below.
	AppendApplication(dst []byte, name string, instances []*actors.Instance) []byte
	// AppendApplicationOpen appends an application element up to its first
	// instance.
	AppendApplicationOpen(dst []byte, name string) []byte
	// AppendInstance appends one instance as it stands in an application
	// element inside an applications document. Its bytes must depend on the
	// instance only, never on its neighbours or its application's name.
	AppendInstance(dst []byte, inst *actors.Instance) []byte
	// AppendInstanceSeparator appends what stands between two instances.
	AppendInstanceSeparator(dst []byte) []byte
	// AppendApplicationClose appends the end of an application element.
	AppendApplicationClose(dst []byte) []byte
	// AppendApplicationDocument appends the document served for one
	// application (GET apps/{app}).
	AppendApplicationDocument(dst []byte, name string, instances []*actors.Instance) []byte
}

// DocumentWrapper is an Encoder whose one-application document
// (AppendApplicationDocument) is its application element between two
// constant texts; the view then assembles that document's gzip form from
// the element's cached chunks.
type DocumentWrapper interface {
	// ApplicationDocumentWrap returns the texts before and after the
	// application element in a one-application document.
	ApplicationDocumentWrap() (open, closing string)
}
