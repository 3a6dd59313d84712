package eureka

// Full XML: Eureka's XStream documents, written by hand (the decoder is in
// xml_decode.go).
//
// XStream pretty-prints with two spaces and no XML declaration, writes an
// empty value as <x></x> and an element with neither value nor children as
// <x/>, and escapes element names: "_" becomes "__" and "$" becomes "_-"
// (which is why the header fields read versions__delta and apps__hashcode).
// The escaping also applies to metadata keys, the only element names that
// come from clients. A key that is still not an XML name after escaping
// (empty, starting with a digit, '-' or '.', containing spaces, ':' or other
// punctuation, or invalid UTF-8) is left out of the XML output: Eureka would
// write broken XML there, which makes every XML client fail on the whole
// registry. JSON output keeps such keys.
//
// The view assembles an applications document from pieces; here every piece
// after the root's start tag begins with its own newline and indentation, so
// that Open + App + Separator(empty) + App + … + Close is correctly indented
// for any number of applications.

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/heureka/heureka/actors"
)

// xmlEncoder is the view.Encoder for full (compact=false) and compact XML.
type xmlEncoder struct{ compact bool }

// ContentType implements view.Encoder.
func (xmlEncoder) ContentType() string { return contentTypeXML }

// AppendApplicationsOpen implements view.Encoder.
func (xmlEncoder) AppendApplicationsOpen(dst []byte, versionDelta, hashcode string) []byte {
	dst = append(dst, "<applications>"...)
	dst = appendXMLElem(dst, 1, "versions__delta", versionDelta)
	return appendXMLElem(dst, 1, "apps__hashcode", hashcode)
}

// AppendApplicationsSeparator implements view.Encoder: XML needs none, each
// application element starts on its own line.
func (xmlEncoder) AppendApplicationsSeparator(dst []byte) []byte { return dst }

// AppendApplicationsClose implements view.Encoder.
func (xmlEncoder) AppendApplicationsClose(dst []byte) []byte {
	return append(dst, "\n</applications>"...)
}

// AppendApplication implements view.Encoder: an indented <application>
// element with <name> and one <instance> per instance. Nil instances are
// skipped.
func (e xmlEncoder) AppendApplication(dst []byte, name string, instances []*actors.Instance) []byte {
	dst = appendXMLIndent(dst, 1)
	return e.appendApplication(dst, name, instances, 1)
}

// AppendApplicationOpen implements view.Encoder: AppendApplication up to its
// first instance.
func (xmlEncoder) AppendApplicationOpen(dst []byte, name string) []byte {
	dst = appendXMLIndent(dst, 1)
	dst = append(dst, "<application>"...)
	return appendXMLElem(dst, 2, "name", name)
}

// AppendInstance implements view.Encoder: one <instance> element at the
// depth of an applications document, with the indentation before it.
func (e xmlEncoder) AppendInstance(dst []byte, inst *actors.Instance) []byte {
	dst = appendXMLIndent(dst, 2)
	if e.compact {
		return appendCompactInstanceXML(dst, inst, 2)
	}
	return appendInstanceXML(dst, inst, 2)
}

// AppendInstanceSeparator implements view.Encoder: XML needs none.
func (xmlEncoder) AppendInstanceSeparator(dst []byte) []byte { return dst }

// AppendApplicationClose implements view.Encoder.
func (xmlEncoder) AppendApplicationClose(dst []byte) []byte {
	dst = appendXMLIndent(dst, 1)
	return append(dst, "</application>"...)
}

// AppendApplicationDocument implements view.Encoder: a root <application>
// element.
func (e xmlEncoder) AppendApplicationDocument(dst []byte, name string, instances []*actors.Instance) []byte {
	return e.appendApplication(dst, name, instances, 0)
}

// appendApplication appends <application>…</application> at depth; the
// caller has written the indentation before the start tag.
func (e xmlEncoder) appendApplication(dst []byte, name string, instances []*actors.Instance, depth int) []byte {
	dst = append(dst, "<application>"...)
	dst = appendXMLElem(dst, depth+1, "name", name)
	for _, inst := range instances {
		if inst == nil {
			continue
		}
		dst = appendXMLIndent(dst, depth+1)
		if e.compact {
			dst = appendCompactInstanceXML(dst, inst, depth+1)
		} else {
			dst = appendInstanceXML(dst, inst, depth+1)
		}
	}
	dst = appendXMLIndent(dst, depth)
	return append(dst, "</application>"...)
}

// appendInstanceXML appends <instance>…</instance> at depth, children in
// the JSON order with XStream's names (overriddenstatus in lower case). The
// caller has written the indentation before the start tag.
func appendInstanceXML(dst []byte, inst *actors.Instance, depth int) []byte {
	d := depth + 1
	dst = append(dst, "<instance>"...)
	if inst.InstanceID != "" {
		dst = appendXMLElem(dst, d, "instanceId", inst.InstanceID)
	}
	dst = appendXMLElem(dst, d, "hostName", inst.HostName)
	dst = appendXMLElem(dst, d, "app", inst.App)
	dst = appendXMLElem(dst, d, "ipAddr", inst.IPAddr)
	if inst.SID != "" {
		dst = appendXMLElem(dst, d, "sid", inst.SID)
	}
	dst = appendXMLElem(dst, d, "status", string(inst.Status))
	dst = appendXMLElem(dst, d, "overriddenstatus", string(inst.OverriddenStatus))
	dst = appendXMLPort(dst, d, "port", inst.Port)
	dst = appendXMLPort(dst, d, "securePort", inst.SecurePort)
	dst = appendXMLInt(dst, d, "countryId", int64(inst.CountryID))
	dst = appendXMLDataCenter(dst, d, &inst.DataCenterInfo, false)

	l := &inst.LeaseInfo
	dst = appendXMLIndent(dst, d)
	dst = append(dst, "<leaseInfo>"...)
	dst = appendXMLInt(dst, d+1, "renewalIntervalInSecs", int64(l.RenewalIntervalSecs))
	dst = appendXMLInt(dst, d+1, "durationInSecs", int64(l.DurationSecs))
	dst = appendXMLInt(dst, d+1, "registrationTimestamp", l.RegistrationTimestamp)
	dst = appendXMLInt(dst, d+1, "lastRenewalTimestamp", l.LastRenewalTimestamp)
	dst = appendXMLInt(dst, d+1, "evictionTimestamp", l.EvictionTimestamp)
	dst = appendXMLInt(dst, d+1, "serviceUpTimestamp", l.ServiceUpTimestamp)
	dst = appendXMLIndent(dst, d)
	dst = append(dst, "</leaseInfo>"...)

	dst = appendXMLMap(dst, d, "metadata", inst.Metadata, `<metadata class="`+classEmptyMap+`"/>`)

	dst = appendXMLOptional(dst, d, "appGroupName", inst.AppGroupName)
	dst = appendXMLOptional(dst, d, "homePageUrl", inst.HomePageURL)
	dst = appendXMLOptional(dst, d, "statusPageUrl", inst.StatusPageURL)
	dst = appendXMLOptional(dst, d, "healthCheckUrl", inst.HealthCheckURL)
	dst = appendXMLOptional(dst, d, "secureHealthCheckUrl", inst.SecureHealthCheckURL)
	dst = appendXMLOptional(dst, d, "vipAddress", inst.VIPAddress)
	dst = appendXMLOptional(dst, d, "secureVipAddress", inst.SecureVIPAddress)
	dst = appendXMLElem(dst, d, "isCoordinatingDiscoveryServer", strconv.FormatBool(inst.IsCoordinatingDiscoveryServer))
	dst = appendXMLInt(dst, d, "lastUpdatedTimestamp", inst.LastUpdatedTimestamp)
	dst = appendXMLInt(dst, d, "lastDirtyTimestamp", inst.LastDirtyTimestamp)
	dst = appendXMLOptional(dst, d, "actionType", string(inst.ActionType))
	dst = appendXMLOptional(dst, d, "asgName", inst.ASGName)
	dst = appendXMLIndent(dst, depth)
	return append(dst, "</instance>"...)
}

// appendXMLPort appends <name enabled="B">N</name>.
func appendXMLPort(dst []byte, depth int, name string, p actors.Port) []byte {
	dst = appendXMLIndent(dst, depth)
	dst = append(dst, '<')
	dst = append(dst, name...)
	if p.Enabled {
		dst = append(dst, ` enabled="true">`...)
	} else {
		dst = append(dst, ` enabled="false">`...)
	}
	dst = strconv.AppendInt(dst, int64(p.Number), 10)
	dst = append(dst, "</"...)
	dst = append(dst, name...)
	return append(dst, '>')
}

// appendXMLDataCenter appends <dataCenterInfo class="…"> with <name> and,
// for Amazon only, <metadata> (only compactAmazonKeys when compact).
func appendXMLDataCenter(dst []byte, depth int, d *actors.DataCenterInfo, compact bool) []byte {
	dst = appendXMLIndent(dst, depth)
	dst = append(dst, `<dataCenterInfo class="`...)
	dst = AppendXMLText(dst, dataCenterClass(d), true)
	dst = append(dst, `">`...)
	dst = appendXMLElem(dst, depth+1, "name", d.Name)
	if isAmazon(d) {
		if compact {
			dst = appendXMLIndent(dst, depth+1)
			dst = append(dst, "<metadata>"...)
			n := 0
			for _, k := range compactAmazonKeys {
				if v, ok := d.Metadata[k]; ok {
					dst = appendXMLElem(dst, depth+2, k, v)
					n++
				}
			}
			if n == 0 {
				// Never a whitespace-only element: fargo cannot read it.
				dst = dst[:len(dst)-len("<metadata>")]
				dst = append(dst, "<metadata/>"...)
			} else {
				dst = appendXMLIndent(dst, depth+1)
				dst = append(dst, "</metadata>"...)
			}
		} else {
			dst = appendXMLMap(dst, depth+1, "metadata", d.Metadata, "<metadata/>")
		}
	}
	dst = appendXMLIndent(dst, depth)
	return append(dst, "</dataCenterInfo>"...)
}

// appendXMLMap appends the map m as element name with one child per key,
// keys sorted and escaped; keys that cannot be XML names are skipped (see
// the file comment). With no child to write it appends empty instead, so the
// element is never whitespace-only.
func appendXMLMap(dst []byte, depth int, name string, m map[string]string, empty string) []byte {
	var buf [16]string
	keys := sortedKeys(buf[:0], m)
	valid := keys[:0]
	for _, k := range keys {
		if xmlNameOK(k) {
			valid = append(valid, k)
		}
	}
	dst = appendXMLIndent(dst, depth)
	if len(valid) == 0 {
		return append(dst, empty...)
	}
	dst = append(dst, '<')
	dst = append(dst, name...)
	dst = append(dst, '>')
	for _, k := range valid {
		dst = appendXMLIndent(dst, depth+1)
		dst = append(dst, '<')
		dst = appendXMLName(dst, k)
		dst = append(dst, '>')
		dst = AppendXMLText(dst, m[k], false)
		dst = append(dst, '<', '/')
		dst = appendXMLName(dst, k)
		dst = append(dst, '>')
	}
	dst = appendXMLIndent(dst, depth)
	dst = append(dst, '<', '/')
	dst = append(dst, name...)
	return append(dst, '>')
}

// xmlIndentBuf holds a newline and enough spaces for the deepest element
// (applications > application > instance > dataCenterInfo > metadata > key).
const xmlIndentBuf = "\n                                "

// appendXMLIndent starts a new line indented for depth (two spaces a level).
func appendXMLIndent(dst []byte, depth int) []byte {
	n := 1 + 2*depth
	if n > len(xmlIndentBuf) {
		n = len(xmlIndentBuf)
	}
	return append(dst, xmlIndentBuf[:n]...)
}

// appendXMLElem appends an indented <name>value</name>; name must be a
// literal XML name.
func appendXMLElem(dst []byte, depth int, name, value string) []byte {
	dst = appendXMLIndent(dst, depth)
	dst = append(dst, '<')
	dst = append(dst, name...)
	dst = append(dst, '>')
	dst = AppendXMLText(dst, value, false)
	dst = append(dst, '<', '/')
	dst = append(dst, name...)
	return append(dst, '>')
}

// appendXMLOptional is appendXMLElem, skipped for an empty value (Java's
// null, which XStream omits).
func appendXMLOptional(dst []byte, depth int, name, value string) []byte {
	if value == "" {
		return dst
	}
	return appendXMLElem(dst, depth, name, value)
}

// appendXMLInt appends an indented <name>n</name>.
func appendXMLInt(dst []byte, depth int, name string, n int64) []byte {
	dst = appendXMLIndent(dst, depth)
	dst = append(dst, '<')
	dst = append(dst, name...)
	dst = append(dst, '>')
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, '<', '/')
	dst = append(dst, name...)
	return append(dst, '>')
}

// AppendXMLText appends s escaped as XML character data (attr: as an
// attribute value). Like XStream it escapes both quotes; characters XML 1.0
// cannot hold (most C0 controls, U+FFFE, U+FFFF) and invalid UTF-8 become
// U+FFFD so that the document stays well-formed.
func AppendXMLText(dst []byte, s string, attr bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			var esc string
			switch {
			case b == '&':
				esc = "&amp;"
			case b == '<':
				esc = "&lt;"
			case b == '>':
				esc = "&gt;"
			case b == '"':
				esc = "&quot;"
			case b == '\'':
				esc = "&apos;"
			case b == '\r':
				esc = "&#xD;"
			case b == '\n' && attr:
				esc = "&#xA;"
			case b == '\t' && attr:
				esc = "&#x9;"
			case b < 0x20 && b != '\n' && b != '\t':
				esc = "\uFFFD"
			default:
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, esc...)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == 0xFFFE || r == 0xFFFF {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// appendXMLName appends key as an element name with XStream's escaping:
// "_" → "__", "$" → "_-". The caller has checked xmlNameOK(key).
func appendXMLName(dst []byte, key string) []byte {
	start := 0
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '_':
			dst = append(dst, key[start:i]...)
			dst = append(dst, '_', '_')
			start = i + 1
		case '$':
			dst = append(dst, key[start:i]...)
			dst = append(dst, '_', '-')
			start = i + 1
		}
	}
	return append(dst, key[start:]...)
}

// xmlNameOK reports whether key, once escaped by appendXMLName, is an XML
// name every parser accepts: a letter or '_' (also what '_' and '$' escape
// to) first, then letters, digits, '-', '.', '_' and combining marks. ':' is
// refused because it would read as a namespace prefix.
func xmlNameOK(key string) bool {
	if key == "" || !utf8.ValidString(key) {
		return false
	}
	for i, r := range key {
		switch {
		case r == '_' || r == '$':
		case 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
		case r < utf8.RuneSelf:
			if i == 0 || !('0' <= r && r <= '9' || r == '-' || r == '.') {
				return false
			}
		case unicode.IsLetter(r):
		case i > 0 && (unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc)):
		default:
			return false
		}
	}
	return true
}
