package eureka

// The direct JSON register decoder
//
// Most register bodies have one shape: the Java client's (spec §3.7), or a
// subset of it, {"instance":{…}} with every field in its usual type.
// decodeDirect reads that shape in one pass over the body, without building
// a tree and without a second pass to validate it: its scanner accepts only
// JSON (the strict grammar of the values it takes: strings without control
// characters, integers without leading zeros, true and false), and it gives
// up (ok false) on anything else: an unknown or repeated key, a null, a
// value of another type, a fraction, a nesting it does not expect. The
// caller then decodes the body the fastjson way (json_decode_fast.go), which
// gives up to encoding/json in its turn, so every body still reads exactly
// as decodeInstanceJSON reads it; the differential test and fuzz target of
// the fast decoder hold all three equal.

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
)

// directScanner reads a body without a backslash (escapes are
// encoding/json's) that is valid UTF-8.
type directScanner struct {
	b []byte
	i int
	// ctl says that the body holds a byte below 0x20 somewhere (JSON's
	// whitespace, or a control character a string must not hold), so that
	// strings are checked for them one by one.
	ctl bool
}

// hasControl reports whether b holds a byte below 0x20, eight bytes at a
// time.
func hasControl(b []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if (x-lo)&^x&hi != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// ws skips JSON whitespace.
func (s *directScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// token consumes c after whitespace, and reports whether it was there.
func (s *directScanner) token(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string: its bytes, in the body's memory.
func (s *directScanner) str() ([]byte, bool) {
	if !s.token('"') {
		return nil, false
	}
	start := s.i
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, false
	}
	v := s.b[start : start+end]
	if s.ctl && hasControl(v) { // JSON forbids control characters in strings
		return nil, false
	}
	s.i = start + end + 1
	return v, true
}

// integer reads a number that is a JSON integer of at most 18 digits (no
// fraction, no exponent): what strconv reads the same as encoding/json.
func (s *directScanner) integer() (int64, bool) {
	s.ws()
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	start := j
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		j++
	}
	digits := j - start
	if digits == 0 || (digits > 1 && s.b[start] == '0' && !sabotage.On(sabotage.DirectJSONLeadingZeros)) {
		return 0, false
	}
	if j < len(s.b) && (s.b[j] == '.' || s.b[j] == 'e' || s.b[j] == 'E') {
		return 0, false
	}
	n, ok := parseDigits(s.b[s.i:j])
	if !ok {
		return 0, false
	}
	s.i = j
	return n, true
}

// digits reads a port number or timestamp the way the other decoders take
// it: a JSON integer, or a string of one (at most 18 digits either way).
func (s *directScanner) digits() (int64, bool) {
	if s.peek() != '"' {
		return s.integer()
	}
	v, ok := s.str()
	if !ok {
		return 0, false
	}
	return parseDigits(v)
}

// number reads any JSON number (JSON's grammar: an optional minus, an
// integer without leading zeros, an optional fraction, an optional
// exponent) and returns its text.
func (s *directScanner) number() ([]byte, bool) {
	s.ws()
	b, j := s.b, s.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	intDigits := func() int {
		n := 0
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
			n++
		}
		return n
	}
	start := j
	n := intDigits()
	if n == 0 || (n > 1 && b[start] == '0') {
		return nil, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if intDigits() == 0 {
			return nil, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if intDigits() == 0 {
			return nil, false
		}
	}
	v := b[s.i:j]
	s.i = j
	return v, true
}

// boolean reads true or false.
func (s *directScanner) boolean() (bool, bool) {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, true
	}
	return false, false
}

// peek returns the next byte after whitespace (0 at the end).
func (s *directScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object reads an object, calling member for each key; member reads the
// value and reports whether it could.
func (s *directScanner) object(member func(key []byte) bool) bool {
	if !s.token('{') {
		return false
	}
	if s.token('}') {
		return true
	}
	for {
		k, ok := s.str()
		if !ok || !s.token(':') || !member(k) {
			return false
		}
		if !s.token(',') {
			return s.token('}')
		}
	}
}

// The fields of an instance that decodeDirect reads, as bits of a set (a
// repeated key gives up).
const (
	dfInstanceID = 1 << iota
	dfHostName
	dfApp
	dfIPAddr
	dfSID
	dfStatus
	dfOverridden
	dfOverriddenLegacy
	dfPort
	dfSecurePort
	dfCountryID
	dfDataCenter
	dfLeaseInfo
	dfMetadata
	dfAppGroupName
	dfHomePage
	dfStatusPage
	dfHealthCheck
	dfSecureHealthCheck
	dfVIP
	dfSecureVIP
	dfASG
	dfActionType
	dfCoordinating
	dfLastUpdated
	dfLastDirty
)

// directField maps a key to its field bit (0 for a key it does not read).
func directField(key []byte) int {
	switch string(key) {
	case "instanceId":
		return dfInstanceID
	case "hostName":
		return dfHostName
	case "app":
		return dfApp
	case "ipAddr":
		return dfIPAddr
	case "sid":
		return dfSID
	case "status":
		return dfStatus
	case "overriddenStatus":
		return dfOverridden
	case "overriddenstatus":
		return dfOverriddenLegacy
	case "port":
		return dfPort
	case "securePort":
		return dfSecurePort
	case "countryId":
		return dfCountryID
	case "dataCenterInfo":
		return dfDataCenter
	case "leaseInfo":
		return dfLeaseInfo
	case "metadata":
		return dfMetadata
	case "appGroupName":
		return dfAppGroupName
	case "homePageUrl":
		return dfHomePage
	case "statusPageUrl":
		return dfStatusPage
	case "healthCheckUrl":
		return dfHealthCheck
	case "secureHealthCheckUrl":
		return dfSecureHealthCheck
	case "vipAddress":
		return dfVIP
	case "secureVipAddress":
		return dfSecureVIP
	case "asgName":
		return dfASG
	case "actionType":
		return dfActionType
	case "isCoordinatingDiscoveryServer":
		return dfCoordinating
	case "lastUpdatedTimestamp":
		return dfLastUpdated
	case "lastDirtyTimestamp":
		return dfLastDirty
	}
	return 0
}

// directBody is what decodeDirect read of an instance: the strings in the
// body's memory, the rest decoded.
type directBody struct {
	strs                       [32][]byte // by field bit's index
	port, securePort           actors.Port
	countryID                  int
	dcClass, dcName            []byte
	lease                      actors.LeaseInfo
	coordinating               bool
	lastUpdated, lastDirty     int64
	metadata                   [][2][]byte // the members, in order
	hasPort, hasSecurePort     bool
	hasMetadata, hasDataCenter bool
}

// bitIndex returns the index of a single-bit field.
func bitIndex(f int) int { return bits.TrailingZeros(uint(f)) }

// decodeDirect decodes body (valid UTF-8, no backslash) when it has the
// usual shape; ok is false when it does not, and the caller decodes it
// another way (see the file comment). The result is the fast decoder's for
// the same body.
func (sc *fjScratch) decodeDirect(body []byte) (inst *actors.Instance, ok bool) {
	s := directScanner{b: body, ctl: hasControl(body)}
	var d directBody
	d.metadata = sc.pairs[:0]
	defer func() {
		clear(d.metadata)
		sc.pairs = d.metadata[:0]
	}()
	seen := 0
	readInstance := func() bool {
		return s.object(func(key []byte) bool {
			f := directField(key)
			if f == 0 || seen&f != 0 {
				return false // unknown or repeated: the other decoders judge it
			}
			seen |= f
			return d.readField(&s, f)
		})
	}
	root := false
	if !s.object(func(key []byte) bool {
		if root || string(key) != "instance" {
			return false
		}
		root = true
		return readInstance()
	}) || !root {
		return nil, false
	}
	if s.ws(); s.i != len(s.b) {
		return nil, false
	}
	if seen&dfOverridden != 0 && seen&dfOverriddenLegacy != 0 {
		return nil, false
	}
	return sc.directInstance(&d), true
}

// readField reads the value of field f.
func (d *directBody) readField(s *directScanner, f int) bool {
	var ok bool
	switch f {
	case dfPort, dfSecurePort:
		var p actors.Port
		p, ok = readPort(s, f == dfPort)
		if f == dfPort {
			d.port, d.hasPort = p, true
		} else {
			d.securePort, d.hasSecurePort = p, true
		}
	case dfCountryID:
		var n int64
		n, ok = s.integer()
		d.countryID = int(n)
	case dfDataCenter:
		d.hasDataCenter = true
		ok = s.object(func(key []byte) bool {
			var v []byte
			var ok bool
			switch string(key) {
			case "@class":
				if d.dcClass != nil {
					return false
				}
				v, ok = s.str()
				d.dcClass = v
			case "name":
				if d.dcName != nil {
					return false
				}
				v, ok = s.str()
				d.dcName = v
			}
			return ok && v != nil
		})
	case dfLeaseInfo:
		var seen int
		ok = s.object(func(key []byte) bool {
			var dst *int64
			var small *int
			bit := 0
			switch string(key) {
			case "renewalIntervalInSecs":
				small, bit = &d.lease.RenewalIntervalSecs, 1
			case "durationInSecs":
				small, bit = &d.lease.DurationSecs, 2
			case "registrationTimestamp":
				dst, bit = &d.lease.RegistrationTimestamp, 4
			case "lastRenewalTimestamp":
				dst, bit = &d.lease.LastRenewalTimestamp, 8
			case "evictionTimestamp":
				dst, bit = &d.lease.EvictionTimestamp, 16
			case "serviceUpTimestamp":
				dst, bit = &d.lease.ServiceUpTimestamp, 32
			default:
				return false
			}
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			n, ok := s.integer()
			if small != nil {
				*small = int(n)
			} else {
				*dst = n
			}
			return ok
		})
	case dfMetadata:
		d.hasMetadata = true
		ok = s.object(func(key []byte) bool {
			var v []byte
			var ok bool
			switch c := s.peek(); {
			case c == '"':
				v, ok = s.str()
			case c == 't' || c == 'f':
				var b bool
				if b, ok = s.boolean(); b {
					v = []byte("true")
				} else {
					v = []byte("false")
				}
			default: // a number keeps its text, as json.Number does
				v, ok = s.number()
			}
			if !ok {
				return false
			}
			if string(key) == "@class" {
				return true // the Java client's marker of an empty map
			}
			for _, kv := range d.metadata {
				if bytes.Equal(kv[0], key) {
					return false // repeated: the other decoders keep the last
				}
			}
			d.metadata = append(d.metadata, [2][]byte{key, v})
			return true
		})
	case dfCoordinating:
		if s.peek() == '"' {
			var v []byte
			v, ok = s.str()
			d.coordinating = bytes.EqualFold(bytes.TrimSpace(v), []byte("true"))
		} else {
			d.coordinating, ok = s.boolean()
		}
	case dfLastUpdated, dfLastDirty:
		var n int64
		n, ok = s.digits()
		if f == dfLastUpdated {
			d.lastUpdated = n
		} else {
			d.lastDirty = n
		}
	default: // a string field
		var v []byte
		v, ok = s.str()
		d.strs[bitIndex(f)] = v
	}
	return ok
}

// readPort reads a port, {"$": number, "@enabled": "true"} (the number
// or its string; a string or a boolean), or a bare number or its string,
// as the fast decoder's port does.
func readPort(s *directScanner, plain bool) (actors.Port, bool) {
	p := actors.Port{Enabled: plain}
	if s.peek() != '{' {
		n, ok := s.digits()
		p.Number = int(n)
		return p, ok
	}
	hasNumber, hasEnabled := false, false
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "$":
			if hasNumber {
				return false
			}
			hasNumber = true
			n, ok := s.digits()
			p.Number = int(n)
			return ok
		case "@enabled":
			if hasEnabled {
				return false
			}
			hasEnabled = true
			if s.peek() != '"' {
				var ok bool
				p.Enabled, ok = s.boolean()
				return ok
			}
			v, ok := s.str()
			t := bytes.TrimSpace(v)
			if plain {
				p.Enabled = !bytes.EqualFold(t, []byte("false"))
			} else {
				p.Enabled = bytes.EqualFold(t, []byte("true"))
			}
			return ok
		}
		return false
	})
	return p, ok && hasNumber
}

// directInstance builds the instance from what decodeDirect read, with the
// fast decoder's sharing: the values the registry shares interned in sc,
// the instance's own strings in one allocation (fjScratch.own).
func (sc *fjScratch) directInstance(d *directBody) *actors.Instance {
	str := func(f int) []byte { return d.strs[bitIndex(f)] }
	inst := &actors.Instance{}
	inst.App = sc.intern(str(dfApp))
	inst.SID = sc.intern(str(dfSID))
	inst.Status = actors.Status(strings.ToUpper(sc.intern(str(dfStatus))))
	inst.Port, inst.SecurePort = defaultPort(true), defaultPort(false)
	if d.hasPort {
		inst.Port = d.port
	}
	if d.hasSecurePort {
		inst.SecurePort = d.securePort
	}
	inst.CountryID = d.countryID
	if d.hasMetadata {
		inst.Metadata = sc.sharedPairsMap(d.metadata)
	}
	inst.AppGroupName = sc.intern(str(dfAppGroupName))
	inst.VIPAddress = sc.intern(str(dfVIP))
	inst.SecureVIPAddress = sc.intern(str(dfSecureVIP))
	inst.ASGName = sc.intern(str(dfASG))
	inst.ActionType = actors.ActionType(sc.intern(str(dfActionType)))
	inst.IsCoordinatingDiscoveryServer = d.coordinating
	inst.LastUpdatedTimestamp = d.lastUpdated
	inst.LastDirtyTimestamp = d.lastDirty
	defer sc.dropOwn()
	sc.own(&inst.StatusPageURL, str(dfStatusPage))
	sc.own(&inst.HealthCheckURL, str(dfHealthCheck))
	sc.own(&inst.SecureHealthCheckURL, str(dfSecureHealthCheck))
	sc.own(&inst.HomePageURL, str(dfHomePage))
	sc.own(&inst.HostName, str(dfHostName))
	sc.own(&inst.IPAddr, str(dfIPAddr))
	sc.own(&inst.InstanceID, str(dfInstanceID))
	os := str(dfOverridden)
	if os == nil {
		os = str(dfOverriddenLegacy)
	}
	inst.OverriddenStatus = actors.Status(strings.ToUpper(sc.intern(os)))
	if d.hasDataCenter {
		inst.DataCenterInfo.Class = sc.intern(d.dcClass)
		inst.DataCenterInfo.Name = sc.intern(d.dcName)
	}
	inst.LeaseInfo = d.lease
	sc.ownAll()
	return inst
}

// sharedPairsMap is fjFields.sharedStringMap for members read by
// decodeDirect (string values only): the same text, so the same cached map.
func (sc *fjScratch) sharedPairsMap(members [][2][]byte) map[string]string {
	if len(members) == 0 {
		return nil
	}
	sc.text = sc.text[:0]
	for _, kv := range members {
		sc.text = strconv.AppendInt(sc.text, int64(len(kv[0])), 10)
		sc.text = append(append(sc.text, ':'), kv[0]...)
		sc.text = strconv.AppendInt(sc.text, int64(len(kv[1])), 10)
		sc.text = append(append(sc.text, ':'), kv[1]...)
	}
	build := func() map[string]string {
		m := make(map[string]string, len(members))
		for _, kv := range members {
			m[string(kv[0])] = string(kv[1])
		}
		return m
	}
	if len(sc.text) > maxScratchMetadataText {
		return build()
	}
	if m, ok := sc.metadata[string(sc.text)]; ok {
		return m
	}
	m := build()
	if len(sc.metadata) >= maxScratchMetadata {
		clear(sc.metadata)
	}
	sc.metadata[string(sc.text)] = m
	return m
}
