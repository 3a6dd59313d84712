package eureka

// The lenient JSON instance decoder shared by registration and peer
// replication, on encoding/json: the reference the faster decoders
// (json_decode_fast.go, json_decode_direct.go) give their bodies up to.

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/heureka/heureka/actors"
)

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
