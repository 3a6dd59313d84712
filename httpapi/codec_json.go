package httpapi

// Full JSON: Eureka's LegacyJacksonJson shapes, written by hand, and the
// lenient JSON instance decoder shared by registration and peer replication.

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/heureka/heureka/actors"
)

// jsonEncoder is the view.Encoder for full (compact=false) and compact JSON.
type jsonEncoder struct{ compact bool }

// ContentType implements view.Encoder.
func (jsonEncoder) ContentType() string { return contentTypeJSON }

// AppendApplicationsOpen implements view.Encoder. application is always an
// array, so the open ends with "[".
func (jsonEncoder) AppendApplicationsOpen(dst []byte, versionDelta, hashcode string) []byte {
	dst = append(dst, `{"applications":{"versions__delta":`...)
	dst = appendJSONString(dst, versionDelta)
	dst = append(dst, `,"apps__hashcode":`...)
	dst = appendJSONString(dst, hashcode)
	return append(dst, `,"application":[`...)
}

// AppendApplicationsSeparator implements view.Encoder.
func (jsonEncoder) AppendApplicationsSeparator(dst []byte) []byte { return append(dst, ',') }

// AppendApplicationsClose implements view.Encoder.
func (jsonEncoder) AppendApplicationsClose(dst []byte) []byte { return append(dst, "]}}"...) }

// AppendApplication implements view.Encoder: {"name":…,"instance":[…]},
// instance always an array. Nil instances are skipped.
func (e jsonEncoder) AppendApplication(dst []byte, name string, instances []*actors.Instance) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendJSONString(dst, name)
	dst = append(dst, `,"instance":[`...)
	first := true
	for _, inst := range instances {
		if inst == nil {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if e.compact {
			dst = appendCompactInstanceJSON(dst, inst)
		} else {
			dst = appendInstanceJSON(dst, inst)
		}
	}
	return append(dst, "]}"...)
}

// AppendApplicationOpen implements view.Encoder: AppendApplication up to its
// first instance.
func (jsonEncoder) AppendApplicationOpen(dst []byte, name string) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendJSONString(dst, name)
	return append(dst, `,"instance":[`...)
}

// AppendInstance implements view.Encoder: one instance object.
func (e jsonEncoder) AppendInstance(dst []byte, inst *actors.Instance) []byte {
	if e.compact {
		return appendCompactInstanceJSON(dst, inst)
	}
	return appendInstanceJSON(dst, inst)
}

// AppendInstanceSeparator implements view.Encoder.
func (jsonEncoder) AppendInstanceSeparator(dst []byte) []byte { return append(dst, ',') }

// AppendApplicationClose implements view.Encoder.
func (jsonEncoder) AppendApplicationClose(dst []byte) []byte { return append(dst, "]}"...) }

// AppendApplicationDocument implements view.Encoder: {"application":{…}}.
func (e jsonEncoder) AppendApplicationDocument(dst []byte, name string, instances []*actors.Instance) []byte {
	open, closing := e.ApplicationDocumentWrap()
	dst = append(dst, open...)
	dst = e.AppendApplication(dst, name, instances)
	return append(dst, closing...)
}

// ApplicationDocumentWrap implements view.DocumentWrapper: the document is
// the application element inside {"application": …}.
func (jsonEncoder) ApplicationDocumentWrap() (open, closing string) { return `{"application":`, "}" }

// appendInstanceJSON appends one full instance object in Eureka's key order
// (spec §3.2): identity, status, ports, countryId, dataCenterInfo, leaseInfo,
// metadata, then the "auto" fields as JSON strings.
func appendInstanceJSON(dst []byte, inst *actors.Instance) []byte {
	if inst.InstanceID != "" {
		dst = append(dst, `{"instanceId":`...)
		dst = appendJSONString(dst, inst.InstanceID)
		dst = append(dst, `,"hostName":`...)
	} else {
		dst = append(dst, `{"hostName":`...)
	}
	dst = appendJSONString(dst, inst.HostName)
	dst = append(dst, `,"app":`...)
	dst = appendJSONString(dst, inst.App)
	dst = append(dst, `,"ipAddr":`...)
	dst = appendJSONString(dst, inst.IPAddr)
	if inst.SID != "" {
		dst = append(dst, `,"sid":`...)
		dst = appendJSONString(dst, inst.SID)
	}
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, string(inst.Status))
	dst = append(dst, `,"overriddenStatus":`...)
	dst = appendJSONString(dst, string(inst.OverriddenStatus))
	dst = appendJSONPort(dst, `,"port":`, inst.Port)
	dst = appendJSONPort(dst, `,"securePort":`, inst.SecurePort)
	dst = append(dst, `,"countryId":`...)
	dst = strconv.AppendInt(dst, int64(inst.CountryID), 10)
	dst = appendJSONDataCenter(dst, &inst.DataCenterInfo, false)

	l := &inst.LeaseInfo
	dst = append(dst, `,"leaseInfo":{"renewalIntervalInSecs":`...)
	dst = strconv.AppendInt(dst, int64(l.RenewalIntervalSecs), 10)
	dst = append(dst, `,"durationInSecs":`...)
	dst = strconv.AppendInt(dst, int64(l.DurationSecs), 10)
	dst = append(dst, `,"registrationTimestamp":`...)
	dst = strconv.AppendInt(dst, l.RegistrationTimestamp, 10)
	dst = append(dst, `,"lastRenewalTimestamp":`...)
	dst = strconv.AppendInt(dst, l.LastRenewalTimestamp, 10)
	dst = append(dst, `,"evictionTimestamp":`...)
	dst = strconv.AppendInt(dst, l.EvictionTimestamp, 10)
	dst = append(dst, `,"serviceUpTimestamp":`...)
	dst = strconv.AppendInt(dst, l.ServiceUpTimestamp, 10)
	dst = append(dst, '}')

	dst = append(dst, `,"metadata":`...)
	if len(inst.Metadata) == 0 {
		// Jackson serializes Java's Collections.emptyMap() with its class
		// marker; clients are used to it.
		dst = append(dst, `{"@class":"`+classEmptyMap+`"}`...)
	} else {
		dst = appendJSONStringMap(dst, inst.Metadata)
	}

	dst = appendJSONOptional(dst, `,"appGroupName":`, inst.AppGroupName)
	dst = appendJSONOptional(dst, `,"homePageUrl":`, inst.HomePageURL)
	dst = appendJSONOptional(dst, `,"statusPageUrl":`, inst.StatusPageURL)
	dst = appendJSONOptional(dst, `,"healthCheckUrl":`, inst.HealthCheckURL)
	dst = appendJSONOptional(dst, `,"secureHealthCheckUrl":`, inst.SecureHealthCheckURL)
	dst = appendJSONOptional(dst, `,"vipAddress":`, inst.VIPAddress)
	dst = appendJSONOptional(dst, `,"secureVipAddress":`, inst.SecureVIPAddress)
	if inst.IsCoordinatingDiscoveryServer {
		dst = append(dst, `,"isCoordinatingDiscoveryServer":"true"`...)
	} else {
		dst = append(dst, `,"isCoordinatingDiscoveryServer":"false"`...)
	}
	dst = append(dst, `,"lastUpdatedTimestamp":"`...)
	dst = strconv.AppendInt(dst, inst.LastUpdatedTimestamp, 10)
	dst = append(dst, `","lastDirtyTimestamp":"`...)
	dst = strconv.AppendInt(dst, inst.LastDirtyTimestamp, 10)
	dst = append(dst, '"')
	dst = appendJSONOptional(dst, `,"actionType":`, string(inst.ActionType))
	dst = appendJSONOptional(dst, `,"asgName":`, inst.ASGName)
	return append(dst, '}')
}

// appendJSONPort appends key (`,"port":`) and {"$":N,"@enabled":"B"}: the
// number a JSON number, the flag a JSON string, as Eureka writes them and as
// fargo requires.
func appendJSONPort(dst []byte, key string, p actors.Port) []byte {
	dst = append(dst, key...)
	dst = append(dst, `{"$":`...)
	dst = strconv.AppendInt(dst, int64(p.Number), 10)
	if p.Enabled {
		return append(dst, `,"@enabled":"true"}`...)
	}
	return append(dst, `,"@enabled":"false"}`...)
}

// appendJSONDataCenter appends the dataCenterInfo field with its @class. Only
// Amazon data centers carry metadata; compact keeps only compactAmazonKeys.
func appendJSONDataCenter(dst []byte, d *actors.DataCenterInfo, compact bool) []byte {
	dst = append(dst, `,"dataCenterInfo":{"@class":`...)
	dst = appendJSONString(dst, dataCenterClass(d))
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, d.Name)
	if isAmazon(d) {
		dst = append(dst, `,"metadata":`...)
		if compact {
			dst = append(dst, '{')
			first := true
			for _, k := range compactAmazonKeys {
				v, ok := d.Metadata[k]
				if !ok {
					continue
				}
				if !first {
					dst = append(dst, ',')
				}
				first = false
				dst = appendJSONString(dst, k)
				dst = append(dst, ':')
				dst = appendJSONString(dst, v)
			}
			dst = append(dst, '}')
		} else {
			dst = appendJSONStringMap(dst, d.Metadata)
		}
	}
	return append(dst, '}')
}

// appendJSONStringMap appends m as a JSON object with sorted keys, so that
// equal maps always give equal bytes.
func appendJSONStringMap(dst []byte, m map[string]string) []byte {
	var buf [16]string
	keys := sortedKeys(buf[:0], m)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, m[k])
	}
	return append(dst, '}')
}

// appendJSONOptional appends key and the string value unless the value is
// empty (Java's null, which Eureka omits).
func appendJSONOptional(dst []byte, key, val string) []byte {
	if val == "" {
		return dst
	}
	dst = append(dst, key...)
	return appendJSONString(dst, val)
}

// jsonSafe[b] is true for the ASCII bytes a JSON string can hold verbatim.
// There is no HTML escaping: Jackson does none.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a quoted JSON string. Invalid UTF-8 becomes
// U+FFFD; U+2028 and U+2029 are escaped so that the output is also valid
// JavaScript.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// decodeInstanceJSON decodes a JSON register body. It accepts the
// {"instance":{…}} wrapper or the bare instance object, and mirrors the
// leniency of Eureka's Jackson decoder plus what eureka-js-client and fargo
// send:
//
//   - port/securePort as {"$":8080,"@enabled":"true"}, with "$" a number or
//     numeric string and "@enabled" a string or boolean, or as a bare number
//     or numeric string. port is enabled unless "@enabled" is false, securePort
//     disabled unless it is true; absent ports are number 0 with those flags;
//   - numbers or numeric strings for countryId, leaseInfo, lastUpdatedTimestamp
//     and lastDirtyTimestamp; "" counts as absent; integral floats are taken;
//   - overriddenStatus, or the legacy overriddenstatus ("" = UNKNOWN after
//     Normalize);
//   - isCoordinatingDiscoveryServer as a boolean or "true"/"false";
//   - metadata values of any scalar type stored as text (10 → "10"), the
//     "@class" marker key and null values dropped;
//   - dataCenterInfo with or without @class; its metadata is kept for Amazon
//     only;
//   - nulls and unknown keys ignored.
//
// A body that is not a JSON object, or a known field of a type that cannot
// be coerced (port as an array, status as a number, an object as a metadata
// value, a non-numeric timestamp), is ErrBadBody.
func decodeInstanceJSON(body []byte) (*actors.Instance, error) {
	v, err := parseJSON(body)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, badBody("JSON body is not an object")
	}
	return instanceFromJSON(obj)
}

// parseJSON parses exactly one JSON value, numbers kept as json.Number so
// that no precision is lost and metadata numbers keep their text. A body
// that is not valid UTF-8 is ErrInvalidUTF8: encoding/json would replace
// each bad byte with U+FFFD and so store a value the client never sent.
func parseJSON(body []byte) (any, error) {
	if err := checkUTF8(body); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badBody("json: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badBody("json: data after the top-level value")
	}
	return v, nil
}

// instanceFromJSON reads an instance from a decoded JSON object, wrapped in
// {"instance":…} or not.
func instanceFromJSON(obj map[string]any) (*actors.Instance, error) {
	switch w := obj["instance"].(type) {
	case nil:
	case map[string]any:
		obj = w
	default:
		return nil, badBody("field %q: want an object, got %s", "instance", jsonKind(w))
	}
	r := jsonFields{obj: obj}
	inst := &actors.Instance{
		InstanceID:       r.str("instanceId"),
		HostName:         r.str("hostName"),
		App:              r.str("app"),
		IPAddr:           r.str("ipAddr"),
		SID:              r.str("sid"),
		Status:           actors.Status(strings.ToUpper(r.str("status"))),
		Port:             r.port("port", true),
		SecurePort:       r.port("securePort", false),
		CountryID:        r.int("countryId"),
		Metadata:         r.stringMap("metadata"),
		AppGroupName:     r.str("appGroupName"),
		HomePageURL:      r.str("homePageUrl"),
		StatusPageURL:    r.str("statusPageUrl"),
		HealthCheckURL:   r.str("healthCheckUrl"),
		VIPAddress:       r.str("vipAddress"),
		SecureVIPAddress: r.str("secureVipAddress"),
		ASGName:          r.str("asgName"),
		ActionType:       actors.ActionType(r.str("actionType")),

		SecureHealthCheckURL:          r.str("secureHealthCheckUrl"),
		IsCoordinatingDiscoveryServer: r.bool("isCoordinatingDiscoveryServer"),
		LastUpdatedTimestamp:          r.int64("lastUpdatedTimestamp"),
		LastDirtyTimestamp:            r.int64("lastDirtyTimestamp"),
	}
	// The current key wins over the legacy lower-case one.
	osKey := "overriddenStatus"
	if obj[osKey] == nil {
		osKey = "overriddenstatus"
	}
	inst.OverriddenStatus = actors.Status(strings.ToUpper(r.str(osKey)))

	if dc := r.object("dataCenterInfo"); dc != nil {
		d := jsonFields{obj: dc}
		inst.DataCenterInfo.Class = d.str("@class")
		inst.DataCenterInfo.Name = d.str("name")
		md := d.stringMap("metadata")
		if isAmazon(&inst.DataCenterInfo) {
			inst.DataCenterInfo.Metadata = md
		}
		r.adopt("dataCenterInfo", d.err)
	}
	if li := r.object("leaseInfo"); li != nil {
		l := jsonFields{obj: li}
		inst.LeaseInfo = actors.LeaseInfo{
			RenewalIntervalSecs:   l.int("renewalIntervalInSecs"),
			DurationSecs:          l.int("durationInSecs"),
			RegistrationTimestamp: l.int64("registrationTimestamp"),
			LastRenewalTimestamp:  l.int64("lastRenewalTimestamp"),
			EvictionTimestamp:     l.int64("evictionTimestamp"),
			ServiceUpTimestamp:    l.int64("serviceUpTimestamp"),
		}
		r.adopt("leaseInfo", l.err)
	}
	if r.err != nil {
		return nil, r.err
	}
	return inst, nil
}

// jsonFields reads typed fields from a decoded JSON object, coercing where
// Eureka's decoders do and keeping the first type error.
type jsonFields struct {
	obj map[string]any
	err error
}

// fail records a type error for key unless one is already recorded.
func (r *jsonFields) fail(key string, v any, want string) {
	if r.err == nil {
		r.err = badBody("field %q: want %s, got %s", key, want, jsonKind(v))
	}
}

// adopt records the error of a nested object's reader.
func (r *jsonFields) adopt(key string, err error) {
	if r.err == nil && err != nil {
		r.err = badBody("in %q: %v", key, err)
	}
}

// str returns a string field; absent or null is "".
func (r *jsonFields) str(key string) string {
	switch v := r.obj[key].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		r.fail(key, v, "a string")
		return ""
	}
}

// bool returns a boolean field given as a boolean or a string; like Java's
// Boolean.valueOf, only "true" (any case) is true.
func (r *jsonFields) bool(key string) bool {
	switch v := r.obj[key].(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return strings.EqualFold(strings.TrimSpace(v), "true")
	default:
		r.fail(key, v, "a boolean")
		return false
	}
}

// int64 returns an integer field given as a number or a numeric string.
func (r *jsonFields) int64(key string) int64 {
	v := r.obj[key]
	n, ok := jsonInt(v)
	if !ok {
		r.fail(key, v, "a number")
	}
	return n
}

// int is int64 for Go int fields, rejecting values that do not fit.
func (r *jsonFields) int(key string) int {
	n := r.int64(key)
	if int64(int(n)) != n {
		r.fail(key, r.obj[key], "a number in range")
		return 0
	}
	return int(n)
}

// object returns an object field; absent or null is nil.
func (r *jsonFields) object(key string) map[string]any {
	switch v := r.obj[key].(type) {
	case nil:
		return nil
	case map[string]any:
		return v
	default:
		r.fail(key, v, "an object")
		return nil
	}
}

// stringMap returns a metadata map: scalar values as text, the @class
// marker and nulls dropped, nil when empty.
func (r *jsonFields) stringMap(key string) map[string]string {
	obj := r.object(key)
	var m map[string]string
	for k, v := range obj {
		if k == "@class" {
			continue
		}
		var s string
		switch v := v.(type) {
		case nil:
			continue
		case string:
			s = v
		case json.Number:
			s = string(v)
		case bool:
			s = strconv.FormatBool(v)
		default:
			r.fail(key+"."+k, v, "a scalar")
			return nil
		}
		if m == nil {
			m = make(map[string]string, len(obj))
		}
		m[k] = s
	}
	return m
}

// port reads a port field in any of the shapes clients send. def is the
// enabled flag when the client does not say: true for port, false for
// securePort, and only the opposite value turns it around.
func (r *jsonFields) port(key string, def bool) actors.Port {
	p := actors.Port{Enabled: def}
	switch v := r.obj[key].(type) {
	case nil:
		p = defaultPort(def)
	case json.Number, string:
		n, ok := jsonInt(v)
		if !ok || int64(int(n)) != n {
			r.fail(key, v, "a port number")
		}
		p.Number = int(n)
	case map[string]any:
		n, ok := jsonInt(v["$"])
		if !ok || int64(int(n)) != n {
			r.fail(key+".$", v["$"], "a port number")
		}
		p.Number = int(n)
		switch e := v["@enabled"].(type) {
		case bool:
			p.Enabled = e
		case string:
			if def {
				p.Enabled = !strings.EqualFold(strings.TrimSpace(e), "false")
			} else {
				p.Enabled = strings.EqualFold(strings.TrimSpace(e), "true")
			}
		}
	default:
		r.fail(key, v, "a port object or number")
	}
	return p
}

// jsonInt coerces a decoded JSON value to an integer: a number or numeric
// string, integral floats included. null and "" are 0 and fine.
func jsonInt(v any) (int64, bool) {
	var s string
	switch v := v.(type) {
	case nil:
		return 0, true
	case json.Number:
		s = string(v)
	case string:
		s = strings.TrimSpace(v)
		if s == "" {
			return 0, true
		}
	default:
		return 0, false
	}
	return parseInt(s)
}

// parseInt parses a decimal integer, accepting an integral float ("8080.0",
// "1e3") the way Jackson coerces floats to ints.
func parseInt(s string) (int64, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// jsonKind names the JSON type of a decoded value for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a value"
}
