package httpapi

// Wire codecs: the Eureka JSON and XML documents (full and compact) that the
// view caches, the single-instance document, and the lenient decoding of
// registration bodies.
//
// Encoding is the hot path: every registry change re-encodes the changed
// application in four formats. The encoders are therefore hand-written
// appenders that write straight into the caller's buffer, with no reflection
// and, for maps of up to 16 keys, no allocation. They reproduce Eureka's
// exact shapes (key order, JSON strings where Jackson writes strings, XStream
// element names) because real clients insist on them: fargo, for example,
// rejects a JSON boolean "@enabled" and panics on a whitespace-only
// <metadata> element.
//
// Decoding runs once per registration and favours leniency over speed: it
// goes through encoding/json (numbers kept as text) and the encoding/xml
// token stream, and accepts every shape real clients are known to send (see
// DecodeInstance). JSON bodies, the common case, are read by fastjson's
// pooled parser under the same rules (codec_json_fast.go), falling back to
// encoding/json wherever the two could differ.

import (
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

// Errors returned by the request decoders. Wrapped errors carry the detail;
// compare with errors.Is.
var (
	// ErrUnsupportedMediaType means the request's Content-Type (or its
	// charset) names no codec; Eureka answers 415.
	ErrUnsupportedMediaType = errors.New("httpapi: unsupported media type")
	// ErrBadBody means the request body could not be decoded; Eureka
	// answers 400 "cannot parse request body".
	ErrBadBody = errors.New("httpapi: cannot parse request body")
	// ErrInvalidUTF8 means a request body that is read as UTF-8 (JSON, or
	// XML that declares no other encoding) holds a byte sequence that is not
	// UTF-8. It wraps ErrBadBody, so errors.Is(err, ErrBadBody) holds too;
	// the HTTP layer answers it with a plain-text 400 naming the byte and
	// its offset instead of Eureka's generic "cannot parse request body",
	// because encoding/json would otherwise store U+FFFD in its place and
	// the client would never learn that its data was changed.
	ErrInvalidUTF8 = fmt.Errorf("%w: not valid UTF-8", ErrBadBody)
)

// Content types of the documents the encoders produce. Eureka sends them
// without a charset.
const (
	contentTypeJSON = "application/json"
	contentTypeXML  = "application/xml"
)

// defaultPort is what Eureka's InstanceInfo holds when a client sends no
// port (7001, enabled) or no securePort (7002, disabled).
func defaultPort(plain bool) actors.Port {
	if plain {
		return actors.Port{Number: 7001, Enabled: true}
	}
	return actors.Port{Number: 7002}
}

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
	panic(fmt.Sprintf("httpapi: unknown view.Format %d", f))
}

// DecodeInstance decodes a register request body (POST apps/{app}).
// contentType is the request Content-Type header.
//
// The body is JSON if the media subtype is json (or ends in +json); XML if
// the subtype is xml (or ends in +xml), *, or the header is empty or */*;
// otherwise it returns an error wrapping ErrUnsupportedMediaType, as it does
// for a charset other than utf-8 or iso-8859-1 (and their aliases utf8,
// us-ascii, latin1). A body labelled iso-8859-1 that is not valid UTF-8 is
// transcoded from Latin-1; a valid UTF-8 body is taken as is, since that is
// what mislabelled clients send. Any other body that is not valid UTF-8 (an
// XML document counts as Latin-1 when its declaration says so) gives an
// error wrapping ErrInvalidUTF8. An undecodable body gives an error wrapping
// ErrBadBody.
//
// Decoding is lenient in the ways real clients need (Java, fargo,
// eureka-js-client). JSON: the {"instance":…} wrapper is optional; ports may
// be {"$":8080,"@enabled":"true"} with "$" a number or numeric string and
// "@enabled" a string or boolean, or a bare number or numeric string (port
// enabled unless "@enabled" is false, securePort disabled unless it is true,
// the same defaults when absent); countryId, leaseInfo and the timestamps may
// be numbers or numeric strings; overriddenStatus and the legacy
// overriddenstatus are both read; metadata values of any scalar type are
// kept as text (10 → "10") and its "@class" marker dropped; dataCenterInfo
// may lack @class; nulls and unknown keys are ignored. A JSON body that is
// not an object, or a known field whose type cannot be coerced (a port array,
// a numeric status, an object as metadata value), is ErrBadBody. XML: an
// <instance> root with XStream's children, <port enabled="…">, either
// spelling of overriddenstatus, metadata element names unescaped ("__" → "_",
// "_-" → "$"), unparsable leaseInfo numbers skipped; any other root is
// ErrBadBody.
//
// Missing fields are left empty; validation is the caller's job. Status
// strings are upper-cased but otherwise kept raw. Data center metadata is
// kept for Amazon only. The instance is NOT normalized: the caller calls
// inst.Normalize().
func DecodeInstance(contentType string, body []byte) (*actors.Instance, error) {
	isJSON, latin1, err := requestCodec(contentType)
	if err != nil {
		return nil, err
	}
	body = trimBOM(body)
	if latin1 && !utf8.Valid(body) {
		body = latin1ToUTF8(body)
	}
	if isJSON {
		return decodeInstanceJSONFast(body)
	}
	return decodeInstanceXML(body)
}

// requestCodec picks the request codec from a Content-Type header the way
// Jersey's DiscoveryJerseyProvider does: by media subtype only. latin1 reports
// an iso-8859-1 charset.
func requestCodec(contentType string) (isJSON, latin1 bool, err error) {
	switch contentType = strings.TrimSpace(contentType); contentType {
	case "":
		return false, false, nil
	case "application/json": // what the clients send: no parameters to parse
		return true, false, nil
	case "application/xml":
		return false, false, nil
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return false, false, fmt.Errorf("%w: %q: %v", ErrUnsupportedMediaType, contentType, err)
	}
	// A malformed parameter list is ignored: the media type decides.
	sub := mt
	if i := strings.IndexByte(mt, '/'); i >= 0 {
		sub = mt[i+1:]
	}
	switch {
	case sub == "json" || strings.HasSuffix(sub, "+json"):
		isJSON = true
	case sub == "xml" || strings.HasSuffix(sub, "+xml") || sub == "*":
	default:
		return false, false, fmt.Errorf("%w: %q", ErrUnsupportedMediaType, mt)
	}
	switch cs := strings.ToLower(strings.TrimSpace(params["charset"])); cs {
	case "", "utf-8", "utf8", "us-ascii":
	case "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1":
		latin1 = true
	default:
		return false, false, fmt.Errorf("%w: charset %q", ErrUnsupportedMediaType, cs)
	}
	return isJSON, latin1, nil
}

// trimBOM drops a leading UTF-8 byte order mark, which Jackson skips and
// encoding/json rejects.
func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// latin1ToUTF8 returns b, read as ISO-8859-1, in UTF-8.
func latin1ToUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/4)
	for _, c := range b {
		out = utf8.AppendRune(out, rune(c))
	}
	return out
}

// checkUTF8 returns an error wrapping ErrInvalidUTF8 that names the first
// byte of b that does not start a valid UTF-8 sequence, or nil.
func checkUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("%w: byte 0x%02x at offset %d", ErrInvalidUTF8, b[i], i)
		}
		i += size
	}
	return ErrInvalidUTF8 // not reached: utf8.Valid said there is one
}

// badBody wraps a decoding failure in ErrBadBody.
func badBody(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadBody, fmt.Sprintf(format, args...))
}

// Data center classes Eureka writes. Non-Amazon data centers are always
// written as DefaultDataCenterInfo (Eureka's own choice): MyDataCenterInfo,
// which fargo sends, is accepted on input but not echoed, and an arbitrary
// class a client made up is not echoed either, because Java clients fail to
// deserialize the whole document on a class they do not know.
const (
	classDefaultDataCenter = "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"
	classAmazonInfo        = "com.netflix.appinfo.AmazonInfo"
	classEmptyMap          = "java.util.Collections$EmptyMap"
	dataCenterAmazon       = "Amazon"
)

// isAmazon reports whether d is an AWS data center, by name or by class.
func isAmazon(d *actors.DataCenterInfo) bool {
	return d.Name == dataCenterAmazon || d.Class == classAmazonInfo
}

// dataCenterClass is the class marker written for d.
func dataCenterClass(d *actors.DataCenterInfo) string {
	if isAmazon(d) {
		return classAmazonInfo
	}
	return classDefaultDataCenter
}

// compactAmazonKeys are the Amazon metadata keys the compact formats keep,
// in the sorted order they are written.
var compactAmazonKeys = [...]string{
	"availability-zone",
	"instance-id",
	"local-ipv4",
	"public-hostname",
	"public-ipv4",
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
