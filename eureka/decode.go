package eureka

// Request decoding: which codec a Content-Type names, the charsets a body
// may come in, and the errors an undecodable body gives. The decoders
// themselves are in json_decode*.go and xml_decode.go.

import (
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/heureka/heureka/actors"
)

// Errors returned by the request decoders. Wrapped errors carry the detail;
// compare with errors.Is.
var (
	// ErrUnsupportedMediaType means the request's Content-Type (or its
	// charset) names no codec; Eureka answers 415.
	ErrUnsupportedMediaType = errors.New("eureka: unsupported media type")
	// ErrBadBody means the request body could not be decoded; Eureka
	// answers 400 "cannot parse request body".
	ErrBadBody = errors.New("eureka: cannot parse request body")
	// ErrInvalidUTF8 means a request body that is read as UTF-8 (JSON, or
	// XML that declares no other encoding) holds a byte sequence that is not
	// UTF-8. It wraps ErrBadBody, so errors.Is(err, ErrBadBody) holds too;
	// the HTTP layer answers it with a plain-text 400 naming the byte and
	// its offset instead of Eureka's generic "cannot parse request body",
	// because encoding/json would otherwise store U+FFFD in its place and
	// the client would never learn that its data was changed.
	ErrInvalidUTF8 = fmt.Errorf("%w: not valid UTF-8", ErrBadBody)
)

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
