package eureka

// Full JSON: Eureka's LegacyJacksonJson shapes, written by hand.

import (
	"strconv"
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
	dst = AppendJSONString(dst, versionDelta)
	dst = append(dst, `,"apps__hashcode":`...)
	dst = AppendJSONString(dst, hashcode)
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
	dst = AppendJSONString(dst, name)
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
	dst = AppendJSONString(dst, name)
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
	dst = appendJSONIdentity(dst, inst)
	if inst.SID != "" {
		dst = append(dst, `,"sid":`...)
		dst = AppendJSONString(dst, inst.SID)
	}
	dst = append(dst, `,"status":`...)
	dst = AppendJSONString(dst, string(inst.Status))
	dst = append(dst, `,"overriddenStatus":`...)
	dst = AppendJSONString(dst, string(inst.OverriddenStatus))
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
	dst = AppendJSONString(dst, dataCenterClass(d))
	dst = append(dst, `,"name":`...)
	dst = AppendJSONString(dst, d.Name)
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
				dst = AppendJSONString(dst, k)
				dst = append(dst, ':')
				dst = AppendJSONString(dst, v)
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
		dst = AppendJSONString(dst, k)
		dst = append(dst, ':')
		dst = AppendJSONString(dst, m[k])
	}
	return append(dst, '}')
}

// appendJSONIdentity opens an instance object with the keys that the full
// and the compact formats begin with alike: instanceId (when set), hostName,
// app and ipAddr.
func appendJSONIdentity(dst []byte, inst *actors.Instance) []byte {
	if inst.InstanceID != "" {
		dst = append(dst, `{"instanceId":`...)
		dst = AppendJSONString(dst, inst.InstanceID)
		dst = append(dst, `,"hostName":`...)
	} else {
		dst = append(dst, `{"hostName":`...)
	}
	dst = AppendJSONString(dst, inst.HostName)
	dst = append(dst, `,"app":`...)
	dst = AppendJSONString(dst, inst.App)
	dst = append(dst, `,"ipAddr":`...)
	return AppendJSONString(dst, inst.IPAddr)
}

// appendJSONOptional appends key and the string value unless the value is
// empty (Java's null, which Eureka omits).
func appendJSONOptional(dst []byte, key, val string) []byte {
	if val == "" {
		return dst
	}
	dst = append(dst, key...)
	return AppendJSONString(dst, val)
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

// AppendJSONString appends s as a quoted JSON string. Invalid UTF-8 becomes
// U+FFFD; U+2028 and U+2029 are escaped so that the output is also valid
// JavaScript.
func AppendJSONString(dst []byte, s string) []byte {
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
