package eureka

// The fast JSON register decoder
//
// decodeInstanceJSON decodes a body into encoding/json's map[string]any
// tree: about 150 allocations and most of a registration's own CPU time
// (BENCHMARKS.md, "Per-request cost"). decodeInstanceJSONFast reads the
// same bodies with fastjson's pooled parser, which builds its tree in
// reused memory, and allocates only the strings it keeps. It applies the
// very rules of jsonFields (the same coercions, the same first error, the
// last of duplicate keys), and leaves to decodeInstanceJSON every body
// whose reading could differ:
//   - a body that is not valid JSON (fastjson.ValidateBytes, which for a
//     body without escapes has json.Valid's grammar), so that every syntax
//     error keeps encoding/json's message, and nothing fastjson's parser
//     would tolerate is accepted;
//   - a body holding a backslash anywhere, so that every string escape
//     (lone surrogates included) is decoded by encoding/json;
//   - a body fastjson refuses (nesting deeper than it allows).
// A differential test and fuzz target hold the two decoders equal. Before
// either, the direct decoder (json_decode_direct.go) reads the usual shape of
// a body in one pass, and leaves every other body to them.

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fastjson"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
)

// fjScratch is one decoding's reusable memory: the parser (and its tree)
// and the members of the objects read so far.
type fjScratch struct {
	p   fastjson.Parser
	kvs []fjKV
	// interned maps the values of the fields the registry shares between
	// instances (application and group names, VIP addresses, data center,
	// ASG, status) to a copy made when sc first read them, so that a value
	// seen before costs no allocation; it is emptied when it reaches
	// maxScratchInterned. The registry replaces them by its canonical
	// copies (actors: the application's actor compares them with the
	// values it last stored).
	interned map[string]string
	// metadata maps the text of an instance's metadata object (its
	// members' keys and values, in order, as metadataText writes them) to
	// the map sc built for it when it first read it, so that the metadata
	// that an application's instances repeat costs no map and no strings.
	// The maps are shared and never written (the registry shares equal
	// metadata maps between instances too, actors.Instance); it is emptied
	// when it reaches maxScratchMetadata.
	metadata map[string]map[string]string
	text     []byte   // metadataText's buffer
	num      [32]byte // metadataText's buffer for a scalar's text
	// strs and refs gather the instance's own strings (see own): their
	// bytes, and which field takes which of them.
	strs []byte
	refs []fjRef
	// pairs holds the metadata members decodeDirect reads.
	pairs [][2][]byte
}

// fjRef says that *dst is strs[off:off+n] (fjScratch.own).
type fjRef struct {
	dst    *string
	off, n int
}

// own stores b, a value unique to the instance being decoded (an id, a
// host name, an address, a URL), as *dst once the decoding ends (see
// ownAll). The instance's strings are kept in one allocation, so that an
// instance is one object for its strings instead of one per value (fewer
// allocations per registration, fewer objects for the collector to mark
// in the registry), and a value that an earlier one contains (the host name
// in its URLs, the IP address as host name) is held as part of it, as the
// registry's own sharing (actors.appState.share) would make it. The
// strings of one instance live and die together; a holder of one of them
// beyond the instance's life (a map's key) keeps all of them.
func (sc *fjScratch) own(dst *string, b []byte) {
	if len(b) == 0 {
		*dst = ""
		return
	}
	off := bytes.Index(sc.strs, b)
	if off < 0 {
		off = len(sc.strs)
		sc.strs = append(sc.strs, b...)
	}
	sc.refs = append(sc.refs, fjRef{dst: dst, off: off, n: len(b)})
}

// ownAll gives the fields that own gathered their strings, in one
// allocation, and empties the scratch.
func (sc *fjScratch) ownAll() {
	all := string(sc.strs)
	for _, r := range sc.refs {
		*r.dst = all[r.off : r.off+r.n]
	}
	sc.dropOwn()
}

// dropOwn forgets what own gathered (a decoding that failed).
func (sc *fjScratch) dropOwn() {
	clear(sc.refs) // no pointers into a discarded instance stay in the pool
	sc.refs = sc.refs[:0]
	if cap(sc.strs) > maxScratchStrs {
		sc.strs = nil // a huge value's buffer is not kept in the pool
	}
	sc.strs = sc.strs[:0]
}

// maxScratchInterned bounds fjScratch.interned, maxScratchMetadata
// fjScratch.metadata, and maxScratchMetadataText the text of a metadata
// object that it keeps (a larger one is built afresh each time).
const (
	maxScratchInterned     = 1024
	maxScratchMetadata     = 256
	maxScratchMetadataText = 1024
	// maxScratchStrs bounds the buffer of an instance's own strings that a
	// scratch keeps (fjScratch.own).
	maxScratchStrs = 4096
)

// fjScratches recycles fjScratch across requests.
var fjScratches = sync.Pool{New: func() any {
	return &fjScratch{kvs: make([]fjKV, 0, 64), interned: make(map[string]string), metadata: make(map[string]map[string]string)}
}}

// intern returns b as a string: the copy in sc's cache when it holds one,
// else a new one, which the cache keeps. (Not unique.Make: at 50,000
// applications its process-wide table missed the CPU caches on every
// registration, 0.8 µs a value, while the registry's own sharing compares
// with the application's last values.)
func (sc *fjScratch) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := sc.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(sc.interned) >= maxScratchInterned {
		clear(sc.interned)
	}
	sc.interned[s] = s
	return s
}

// collect returns the members of object v, in order, in sc's memory.
func (sc *fjScratch) collect(v *fastjson.Value) []fjKV {
	start := len(sc.kvs)
	o, _ := v.Object()
	o.Visit(func(k []byte, v *fastjson.Value) { sc.kvs = append(sc.kvs, fjKV{k, v}) })
	return sc.kvs[start:len(sc.kvs):len(sc.kvs)]
}

// decodeInstanceJSONFast is decodeInstanceJSON, faster (see the file
// comment).
func decodeInstanceJSONFast(body []byte) (*actors.Instance, error) {
	if err := checkUTF8(body); err != nil {
		return nil, err
	}
	if bytes.IndexByte(body, '\\') >= 0 {
		return decodeInstanceJSON(body)
	}
	sc := fjScratches.Get().(*fjScratch)
	defer fjScratches.Put(sc)
	if inst, ok := sc.decodeDirect(body); ok {
		return inst, nil
	}
	return sc.decode(body)
}

// decode is decodeInstanceJSONFast in sc's memory, for a body in UTF-8
// without a backslash.
func (sc *fjScratch) decode(body []byte) (*actors.Instance, error) {
	defer func() {
		clear(sc.kvs)
		sc.kvs = sc.kvs[:0]
	}()
	// fastjson's parser tolerates what JSON forbids (control characters in
	// strings, loose numbers): a parsed body is validated by fastjson's
	// strict validator, the grammar of encoding/json's json.Valid for a body
	// without escapes, in a fraction of its time. Parsing first bounds the
	// nesting the (recursive) validator meets to fastjson.MaxDepth.
	v, err := sc.p.ParseBytes(body)
	if err != nil || (!sabotage.On(sabotage.FastJSONUnvalidated) && fastjson.ValidateBytes(body) != nil) {
		return decodeInstanceJSON(body)
	}
	root, ok := fjObjectOf(v)
	if !ok {
		return nil, badBody("JSON body is not an object")
	}
	obj := sc.collect(root)
	switch w := fjGet(obj, "instance"); {
	case fjIsNull(w):
	case w.Type() == fastjson.TypeObject:
		obj = sc.collect(w)
	default:
		return nil, badBody("field %q: want an object, got %s", "instance", fjKind(w))
	}
	r := fjFields{sc: sc, obj: obj}
	// The fields are read in the order of the slow decoder's struct, so
	// that both report the same first error; the instance's own values
	// (ids, host name, address, URLs) are stored afterwards (own).
	inst := &actors.Instance{}
	id := r.bytes("instanceId")
	host := r.bytes("hostName")
	inst.App = r.istr("app")
	ip := r.bytes("ipAddr")
	inst.SID = r.istr("sid")
	inst.Status = actors.Status(strings.ToUpper(r.istr("status")))
	inst.Port = r.port("port", true)
	inst.SecurePort = r.port("securePort", false)
	inst.CountryID = r.int("countryId")
	inst.Metadata = r.sharedStringMap("metadata")
	inst.AppGroupName = r.istr("appGroupName")
	home := r.bytes("homePageUrl")
	status := r.bytes("statusPageUrl")
	health := r.bytes("healthCheckUrl")
	inst.VIPAddress = r.istr("vipAddress")
	inst.SecureVIPAddress = r.istr("secureVipAddress")
	inst.ASGName = r.istr("asgName")
	inst.ActionType = actors.ActionType(r.istr("actionType"))
	secureHealth := r.bytes("secureHealthCheckUrl")
	inst.IsCoordinatingDiscoveryServer = r.bool("isCoordinatingDiscoveryServer")
	inst.LastUpdatedTimestamp = r.int64("lastUpdatedTimestamp")
	inst.LastDirtyTimestamp = r.int64("lastDirtyTimestamp")
	// The longest values, which may contain the others, first.
	defer sc.dropOwn()
	sc.own(&inst.StatusPageURL, status)
	sc.own(&inst.HealthCheckURL, health)
	sc.own(&inst.SecureHealthCheckURL, secureHealth)
	sc.own(&inst.HomePageURL, home)
	sc.own(&inst.HostName, host)
	sc.own(&inst.IPAddr, ip)
	sc.own(&inst.InstanceID, id)
	// The current key wins over the legacy lower-case one.
	osKey := "overriddenStatus"
	if fjIsNull(fjGet(obj, osKey)) {
		osKey = "overriddenstatus"
	}
	inst.OverriddenStatus = actors.Status(strings.ToUpper(r.istr(osKey)))

	if dc := r.object("dataCenterInfo"); dc != nil {
		d := fjFields{sc: sc, obj: sc.collect(dc)}
		inst.DataCenterInfo.Class = d.istr("@class")
		inst.DataCenterInfo.Name = d.istr("name")
		md := d.stringMap("metadata")
		if isAmazon(&inst.DataCenterInfo) {
			inst.DataCenterInfo.Metadata = md
		}
		r.adopt("dataCenterInfo", d.err)
	}
	if li := r.object("leaseInfo"); li != nil {
		l := fjFields{sc: sc, obj: sc.collect(li)}
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
	sc.ownAll()
	return inst, nil
}

// fjKV is one member of a parsed object; key points into the parser's
// memory.
type fjKV struct {
	key []byte
	v   *fastjson.Value
}

// fjGet returns the value of key in obj (the last one, as encoding/json's
// map holds it), or nil.
func fjGet(obj []fjKV, key string) *fastjson.Value {
	for i := len(obj) - 1; i >= 0; i-- {
		if string(obj[i].key) == key {
			return obj[i].v
		}
	}
	return nil
}

// fjObjectOf reports whether v is an object.
func fjObjectOf(v *fastjson.Value) (*fastjson.Value, bool) {
	return v, v.Type() == fastjson.TypeObject
}

// fjIsNull reports whether v is absent or null: jsonFields' nil.
func fjIsNull(v *fastjson.Value) bool { return v == nil || v.Type() == fastjson.TypeNull }

// fjKind is jsonKind for a fastjson value.
func fjKind(v *fastjson.Value) string {
	if v == nil {
		return "null"
	}
	switch v.Type() {
	case fastjson.TypeNull:
		return "null"
	case fastjson.TypeString:
		return "a string"
	case fastjson.TypeNumber:
		return "a number"
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "a boolean"
	case fastjson.TypeArray:
		return "an array"
	case fastjson.TypeObject:
		return "an object"
	}
	return "a value"
}

// fjString returns a string value's text (the body holds no escapes).
func fjString(v *fastjson.Value) string {
	b, _ := v.StringBytes()
	return string(b)
}

// fjNumber returns a number value's text, as json.Number holds it.
func fjNumber(v *fastjson.Value) string { return string(v.MarshalTo(nil)) }

// parseDigits parses b when it is only an optional '-' and 1 to 18 ASCII
// digits, which strconv.ParseInt reads the same; ok is false otherwise
// (parseInt then decides).
func parseDigits(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// fjInt is jsonInt for a fastjson value.
func fjInt(v *fastjson.Value) (int64, bool) {
	if fjIsNull(v) {
		return 0, true
	}
	var s string
	switch v.Type() {
	case fastjson.TypeNumber:
		if n, err := v.Int64(); err == nil {
			return n, true // an integer; parseInt agrees
		}
		return parseInt(fjNumber(v))
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		if n, ok := parseDigits(b); ok {
			return n, true
		}
		s = strings.TrimSpace(string(b))
		if s == "" {
			return 0, true
		}
	default:
		return 0, false
	}
	return parseInt(s)
}

// fjFields is jsonFields over a parsed object: the same rules, the same
// first error.
type fjFields struct {
	sc  *fjScratch
	obj []fjKV
	err error
}

func (r *fjFields) fail(key string, v *fastjson.Value, want string) {
	if r.err == nil {
		r.err = badBody("field %q: want %s, got %s", key, want, fjKind(v))
	}
}

func (r *fjFields) adopt(key string, err error) {
	if r.err == nil && err != nil {
		r.err = badBody("in %q: %v", key, err)
	}
}

// bytes returns a string field's text, in the parser's memory (nil for an
// absent or null field), or records the error of a field of another kind
// (jsonFields.str's rules).
func (r *fjFields) bytes(key string) []byte {
	v := fjGet(r.obj, key)
	switch {
	case fjIsNull(v):
		return nil
	case v.Type() == fastjson.TypeString:
		b, _ := v.StringBytes()
		return b
	}
	r.fail(key, v, "a string")
	return nil
}

// istr returns a string field the registry interns (bytes' rules): the copy
// in r's scratch, without an allocation when the scratch has seen the value.
func (r *fjFields) istr(key string) string { return r.sc.intern(r.bytes(key)) }

func (r *fjFields) bool(key string) bool {
	v := fjGet(r.obj, key)
	switch {
	case fjIsNull(v):
		return false
	case v.Type() == fastjson.TypeTrue:
		return true
	case v.Type() == fastjson.TypeFalse:
		return false
	case v.Type() == fastjson.TypeString:
		b, _ := v.StringBytes()
		return strings.EqualFold(strings.TrimSpace(string(b)), "true")
	}
	r.fail(key, v, "a boolean")
	return false
}

func (r *fjFields) int64(key string) int64 {
	v := fjGet(r.obj, key)
	n, ok := fjInt(v)
	if !ok {
		r.fail(key, v, "a number")
	}
	return n
}

func (r *fjFields) int(key string) int {
	n := r.int64(key)
	if int64(int(n)) != n {
		r.fail(key, fjGet(r.obj, key), "a number in range")
		return 0
	}
	return int(n)
}

func (r *fjFields) object(key string) *fastjson.Value {
	v := fjGet(r.obj, key)
	switch {
	case fjIsNull(v):
		return nil
	case v.Type() == fastjson.TypeObject:
		return v
	}
	r.fail(key, v, "an object")
	return nil
}

// stringMap is jsonFields.stringMap: of duplicate keys only the last
// counts, as in the map encoding/json builds. The map is the caller's.
func (r *fjFields) stringMap(key string) map[string]string {
	members, ok := r.mapMembers(key)
	if !ok {
		return nil
	}
	return buildStringMap(members)
}

// sharedStringMap is stringMap, but the map may be one that r's scratch
// built for the same members before: the caller must not write it.
func (r *fjFields) sharedStringMap(key string) map[string]string {
	members, ok := r.mapMembers(key)
	if !ok {
		return nil
	}
	sc := r.sc
	sc.text = metadataText(sc.text[:0], sc.num[:0], members)
	if len(sc.text) > maxScratchMetadataText {
		return buildStringMap(members)
	}
	if m, ok := sc.metadata[string(sc.text)]; ok {
		return m
	}
	m := buildStringMap(members)
	if len(sc.metadata) >= maxScratchMetadata {
		clear(sc.metadata)
	}
	sc.metadata[string(sc.text)] = m
	return m
}

// mapMembers returns the members of the object at key that a string map
// keeps, in order, in the scratch's memory: not the "@class" marker, not a
// key given again later, not a null. It reports false when there is no
// object, or (recording the error) when a member is not a scalar.
func (r *fjFields) mapMembers(key string) ([]fjKV, bool) {
	obj := r.object(key)
	if obj == nil {
		return nil, false
	}
	sc := r.sc
	all := sc.collect(obj)
	start := len(sc.kvs)
	for i, kv := range all {
		if string(kv.key) == "@class" || fjGet(all[i+1:], string(kv.key)) != nil {
			continue // the marker, or a key given again later
		}
		switch kv.v.Type() {
		case fastjson.TypeNull:
			continue
		case fastjson.TypeString, fastjson.TypeNumber, fastjson.TypeTrue, fastjson.TypeFalse:
			sc.kvs = append(sc.kvs, kv)
		default:
			r.fail(key+"."+string(kv.key), kv.v, "a scalar")
			return nil, false
		}
	}
	return sc.kvs[start:], true
}

// scalarBytes returns a scalar's text as a string map holds it: a string's
// own bytes, or a number or boolean written into buf.
func scalarBytes(buf []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		return b
	case fastjson.TypeNumber:
		return v.MarshalTo(buf[:0])
	default:
		return strconv.AppendBool(buf[:0], v.Type() == fastjson.TypeTrue)
	}
}

// metadataText appends members' keys and values, each after its length
// (so that no key or value can fake a boundary). buf is scratch memory for
// a number's or boolean's text (a local array would escape into fastjson).
func metadataText(dst, buf []byte, members []fjKV) []byte {
	for _, kv := range members {
		v := scalarBytes(buf, kv.v)
		dst = strconv.AppendInt(dst, int64(len(kv.key)), 10)
		dst = append(append(dst, ':'), kv.key...)
		dst = strconv.AppendInt(dst, int64(len(v)), 10)
		dst = append(append(dst, ':'), v...)
	}
	return dst
}

// buildStringMap returns members as a new map (nil for none).
func buildStringMap(members []fjKV) map[string]string {
	if len(members) == 0 {
		return nil
	}
	var buf [32]byte
	m := make(map[string]string, len(members))
	for _, kv := range members {
		m[string(kv.key)] = string(scalarBytes(buf[:], kv.v))
	}
	return m
}

func (r *fjFields) port(key string, def bool) actors.Port {
	p := actors.Port{Enabled: def}
	v := fjGet(r.obj, key)
	switch {
	case fjIsNull(v):
		p = defaultPort(def)
	case v.Type() == fastjson.TypeNumber || v.Type() == fastjson.TypeString:
		n, ok := fjInt(v)
		if !ok || int64(int(n)) != n {
			r.fail(key, v, "a port number")
		}
		p.Number = int(n)
	case v.Type() == fastjson.TypeObject:
		members := r.sc.collect(v)
		num := fjGet(members, "$")
		n, ok := fjInt(num)
		if !ok || int64(int(n)) != n {
			r.fail(key+".$", num, "a port number")
		}
		p.Number = int(n)
		if e := fjGet(members, "@enabled"); e != nil {
			switch e.Type() {
			case fastjson.TypeTrue:
				p.Enabled = true
			case fastjson.TypeFalse:
				p.Enabled = false
			case fastjson.TypeString:
				s := strings.TrimSpace(fjString(e))
				if def {
					p.Enabled = !strings.EqualFold(s, "false")
				} else {
					p.Enabled = strings.EqualFold(s, "true")
				}
			}
		}
	default:
		r.fail(key, v, "a port object or number")
	}
	return p
}
