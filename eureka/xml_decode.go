package eureka

// The XML instance decoder: an <instance> document as XStream or fargo
// write it, on the encoding/xml token stream. Element names are unescaped
// the way xml_encode.go escapes them.

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/heureka/heureka/actors"
)

// unescapeXMLName reverses appendXMLName: "__" → "_", "_-" → "$". Escaped
// names split unambiguously because every '_' starts a two-byte pair.
func unescapeXMLName(name string) string {
	if strings.IndexByte(name, '_') < 0 {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' && i+1 < len(name) {
			switch name[i+1] {
			case '_':
				i++
			case '-':
				c = '$'
				i++
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// decodeInstanceXML decodes an XML register body: an <instance> root with
// Eureka's children, in any order, as XStream or fargo write them:
//
//   - <port enabled="true">8080</port> (number space-trimmed, empty = 0;
//     port enabled unless enabled="false", securePort disabled unless
//     enabled="true", absent attribute = those defaults);
//   - <overriddenstatus> or <overriddenStatus>;
//   - <dataCenterInfo> with or without its class attribute, <metadata> kept
//     for Amazon only;
//   - <metadata> children as key → text, names unescaped ("__" → "_",
//     "_-" → "$"), the class attribute ignored;
//   - leaseInfo numbers, unparsable ones skipped (XStream's converter does
//     the same); other numbers must parse or the body is ErrBadBody;
//   - unknown elements, comments and processing instructions ignored.
//
// A root other than <instance>, malformed XML, or content after the root is
// ErrBadBody. A document read as UTF-8 (no encoding declaration, or a UTF-8
// or US-ASCII one) that is not valid UTF-8 anywhere, comments included, is
// ErrInvalidUTF8, whether or not encoding/xml noticed. Element names match
// on their local part; namespaces are ignored.
func decodeInstanceXML(body []byte) (*actors.Instance, error) {
	d := xml.NewDecoder(bytes.NewReader(body))
	latin1 := false
	d.CharsetReader = func(label string, input io.Reader) (io.Reader, error) {
		r, err := xmlCharsetReader(label, input)
		latin1 = err == nil && isLatin1Label(label)
		return r, err
	}
	inst, err := decodeXMLInstance(d)
	// encoding/xml reports a bad byte in text as a bare "invalid UTF-8"
	// syntax error, in a name as an invalid name, and not at all in a
	// comment; checking the body itself gives one clear answer.
	if !latin1 {
		if uerr := checkUTF8(body); uerr != nil {
			return nil, uerr
		}
	}
	return inst, err
}

// decodeXMLInstance reads the <instance> document from d.
func decodeXMLInstance(d *xml.Decoder) (*actors.Instance, error) {
	root, err := xmlRoot(d)
	if err != nil {
		return nil, err
	}
	if root.Name.Local != "instance" {
		return nil, badBody("xml: root element <%s>, want <instance>", root.Name.Local)
	}
	inst := &actors.Instance{Port: defaultPort(true), SecurePort: defaultPort(false)}
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, xmlBad(err)
		}
		if _, ok := tok.(xml.EndElement); ok {
			break
		}
		if start, ok := tok.(xml.StartElement); ok {
			if err := xmlInstanceField(d, start, inst); err != nil {
				return nil, err
			}
		}
	}
	if err := xmlTail(d); err != nil {
		return nil, err
	}
	return inst, nil
}

// xmlInstanceField reads one child element of <instance> into inst.
func xmlInstanceField(d *xml.Decoder, start xml.StartElement, inst *actors.Instance) error {
	name := start.Name.Local
	var str *string
	switch name {
	case "instanceId":
		str = &inst.InstanceID
	case "hostName":
		str = &inst.HostName
	case "app":
		str = &inst.App
	case "ipAddr":
		str = &inst.IPAddr
	case "sid":
		str = &inst.SID
	case "appGroupName":
		str = &inst.AppGroupName
	case "homePageUrl":
		str = &inst.HomePageURL
	case "statusPageUrl":
		str = &inst.StatusPageURL
	case "healthCheckUrl":
		str = &inst.HealthCheckURL
	case "secureHealthCheckUrl":
		str = &inst.SecureHealthCheckURL
	case "vipAddress":
		str = &inst.VIPAddress
	case "secureVipAddress":
		str = &inst.SecureVIPAddress
	case "asgName":
		str = &inst.ASGName
	case "dataCenterInfo":
		return xmlDataCenter(d, start, &inst.DataCenterInfo)
	case "leaseInfo":
		return xmlLease(d, &inst.LeaseInfo)
	case "metadata":
		m, err := xmlMap(d)
		inst.Metadata = m
		return err
	case "status", "overriddenstatus", "overriddenStatus", "actionType", "port", "securePort",
		"countryId", "isCoordinatingDiscoveryServer", "lastUpdatedTimestamp", "lastDirtyTimestamp":
	default:
		return xmlBad(d.Skip())
	}
	text, err := xmlText(d)
	if err != nil {
		return err
	}
	if str != nil {
		*str = text
		return nil
	}
	switch name {
	case "status":
		inst.Status = actors.Status(strings.ToUpper(text))
	case "overriddenstatus", "overriddenStatus":
		inst.OverriddenStatus = actors.Status(strings.ToUpper(text))
	case "actionType":
		inst.ActionType = actors.ActionType(text)
	case "isCoordinatingDiscoveryServer":
		inst.IsCoordinatingDiscoveryServer = strings.EqualFold(strings.TrimSpace(text), "true")
	case "port", "securePort":
		n, ok := xmlInt(text)
		if !ok || int64(int(n)) != n {
			return badBody("xml: <%s>: bad port number %q", name, text)
		}
		def := name == "port"
		p := actors.Port{Number: int(n), Enabled: def}
		for _, a := range start.Attr {
			if a.Name.Local == "enabled" {
				v := strings.TrimSpace(a.Value)
				if def {
					p.Enabled = !strings.EqualFold(v, "false")
				} else {
					p.Enabled = strings.EqualFold(v, "true")
				}
			}
		}
		if def {
			inst.Port = p
		} else {
			inst.SecurePort = p
		}
	case "countryId":
		n, ok := xmlInt(text)
		if !ok || int64(int(n)) != n {
			return badBody("xml: <countryId>: bad number %q", text)
		}
		inst.CountryID = int(n)
	case "lastUpdatedTimestamp", "lastDirtyTimestamp":
		n, ok := xmlInt(text)
		if !ok {
			return badBody("xml: <%s>: bad number %q", name, text)
		}
		if name == "lastUpdatedTimestamp" {
			inst.LastUpdatedTimestamp = n
		} else {
			inst.LastDirtyTimestamp = n
		}
	}
	return nil
}

// xmlDataCenter reads <dataCenterInfo class="…"><name/><metadata/>.
func xmlDataCenter(d *xml.Decoder, start xml.StartElement, dc *actors.DataCenterInfo) error {
	for _, a := range start.Attr {
		if a.Name.Local == "class" {
			dc.Class = a.Value
		}
	}
	var md map[string]string
	for {
		tok, err := d.Token()
		if err != nil {
			return xmlBad(err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			if isAmazon(dc) {
				dc.Metadata = md
			}
			return nil
		case xml.StartElement:
			switch t.Name.Local {
			case "name":
				dc.Name, err = xmlText(d)
			case "metadata":
				md, err = xmlMap(d)
			default:
				err = xmlBad(d.Skip())
			}
			if err != nil {
				return err
			}
		}
	}
}

// xmlLease reads <leaseInfo>, skipping numbers that do not parse.
func xmlLease(d *xml.Decoder, l *actors.LeaseInfo) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return xmlBad(err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			text, err := xmlText(d)
			if err != nil {
				return err
			}
			n, ok := xmlInt(text)
			if !ok {
				continue
			}
			fits := int64(int(n)) == n
			switch t.Name.Local {
			case "renewalIntervalInSecs":
				if fits {
					l.RenewalIntervalSecs = int(n)
				}
			case "durationInSecs":
				if fits {
					l.DurationSecs = int(n)
				}
			case "registrationTimestamp":
				l.RegistrationTimestamp = n
			case "lastRenewalTimestamp":
				l.LastRenewalTimestamp = n
			case "evictionTimestamp":
				l.EvictionTimestamp = n
			case "serviceUpTimestamp":
				l.ServiceUpTimestamp = n
			}
		}
	}
}

// xmlMap reads a metadata element: each child is a key (unescaped) and its
// text the value; nil when empty.
func xmlMap(d *xml.Decoder) (map[string]string, error) {
	var m map[string]string
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, xmlBad(err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return m, nil
		case xml.StartElement:
			v, err := xmlText(d)
			if err != nil {
				return nil, err
			}
			if m == nil {
				m = make(map[string]string)
			}
			m[unescapeXMLName(t.Name.Local)] = v
		}
	}
}

// xmlText returns the character data of the element just started, up to its
// end tag; nested elements are skipped.
func xmlText(d *xml.Decoder) (string, error) {
	var text []byte
	for {
		tok, err := d.Token()
		if err != nil {
			return "", xmlBad(err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return string(text), nil
		case xml.CharData:
			text = append(text, t...)
		case xml.StartElement:
			if err := d.Skip(); err != nil {
				return "", xmlBad(err)
			}
		}
	}
}

// xmlInt parses a space-trimmed integer; empty is 0.
func xmlInt(text string) (int64, bool) {
	text = strings.TrimSpace(text)
	if text == "" {
		return 0, true
	}
	return parseInt(text)
}

// xmlRoot returns the root element's start tag, skipping the prolog.
func xmlRoot(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return xml.StartElement{}, badBody("xml: no root element")
		}
		if err != nil {
			return xml.StartElement{}, xmlBad(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return xml.StartElement{}, badBody("xml: text before the root element")
			}
		}
	}
}

// xmlTail checks that only comments, processing instructions and white
// space follow the root element (encoding/xml itself allows more roots).
func xmlTail(d *xml.Decoder) error {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return xmlBad(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return badBody("xml: element after the root element")
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return badBody("xml: text after the root element")
			}
		}
	}
}

// xmlBad wraps a decoder error in ErrBadBody (nil stays nil).
func xmlBad(err error) error {
	if err == nil {
		return nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return badBody("xml: %v", err)
}

// xmlCharsetReader lets documents declare UTF-8 under other names, US-ASCII
// or ISO-8859-1. A Latin-1 declaration over text that is valid UTF-8 is
// taken as mislabelled UTF-8.
func xmlCharsetReader(label string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return input, nil
	}
	if isLatin1Label(label) {
		b, err := io.ReadAll(input)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(b) {
			b = latin1ToUTF8(b)
		}
		return bytes.NewReader(b), nil
	}
	return nil, fmt.Errorf("unsupported encoding %q", label)
}

// isLatin1Label reports whether an XML encoding label names ISO-8859-1.
func isLatin1Label(label string) bool {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1":
		return true
	}
	return false
}
