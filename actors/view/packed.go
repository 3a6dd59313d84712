package view

// Packed deleted states.
//
// A cancelled instance stays in the delta for the retention (three minutes
// by default), whole, as Eureka's delta shows it. Under deploy churn that is
// most of what the view holds: an *actors.Instance of 448 bytes, the strings
// that only it still refers to (the registry dropped the live state), and its
// metadata map. A deleted state is read only to be encoded, a few times in
// its life, so the delta keeps it packed instead: one string holding every
// field, with strings that repeat an earlier field (ipAddr and hostName, the
// two VIP addresses) stored once, URLs under the home page as their suffix,
// and Eureka's constant names as one byte. Encoding unpacks it into a
// pooled Instance whose strings point into the packed string (or, for the
// joined URLs, into a pooled arena), so a read allocates nothing for it.
//
// Layout: the id (the piece's key) first, as a literal string, then the
// fields in the order of packFields, each string as a header uvarint h:
//
//	h&3 == 0: a literal of h>>2 bytes follows
//	h&3 == 1: the same as the (h>>2)th string written before
//	h&3 == 2: the constant packConsts[h>>2]
//	h&3 == 3: the (h>>2)th string written before, then a literal suffix
//	          (a uvarint length and its bytes): URLs under the home page
//
// integers as zigzag varints, timestamps as a byte 0 (unset) or a byte 1
// and the difference from the timestamp written before, booleans as one
// byte, and a
// map as a uvarint (0: nil, n+1: n entries) followed by its keys and values
// as strings.

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"github.com/heureka/heureka/actors"
)

// packConsts are strings that packed states refer to by index. Packed
// states live only in this process's memory, so the table may change
// between versions.
var packConsts = [...]string{
	"", string(actors.StatusUp), string(actors.StatusDown), string(actors.StatusStarting),
	string(actors.StatusOutOfService), string(actors.StatusUnknown),
	string(actors.ActionAdded), string(actors.ActionModified), string(actors.ActionDeleted),
	"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", "com.netflix.appinfo.AmazonInfo",
	"MyOwn", "Amazon", "na", "true", "false",
}

// packConstIndex maps a constant to its index in packConsts.
var packConstIndex = func() map[string]int {
	m := make(map[string]int, len(packConsts))
	for i, s := range packConsts {
		m[s] = i
	}
	return m
}()

// packer appends one state's packed form to buf.
type packer struct {
	buf  []byte
	strs []string // the strings written so far, for back references
	last int64    // the timestamp written last
}

// minPrefix is the shortest earlier string a string is written as a suffix
// of; shorter ones are not worth the reference.
const minPrefix = 8

// str writes s as a constant, a repeat or an extension of an earlier
// string, or a literal, whichever applies first.
func (w *packer) str(s string) {
	if i, ok := packConstIndex[s]; ok {
		w.buf = binary.AppendUvarint(w.buf, uint64(i)<<2|2)
		return
	}
	prefix := -1
	for i, o := range w.strs {
		if len(o) == len(s) && o == s {
			w.buf = binary.AppendUvarint(w.buf, uint64(i)<<2|1)
			return
		}
		if len(o) >= minPrefix && len(o) < len(s) && s[:len(o)] == o && (prefix < 0 || len(o) > len(w.strs[prefix])) {
			prefix = i
		}
	}
	if prefix < 0 {
		w.literal(s)
		return
	}
	suffix := s[len(w.strs[prefix]):]
	w.strs = append(w.strs, s)
	w.buf = binary.AppendUvarint(w.buf, uint64(prefix)<<2|3)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(suffix)))
	w.buf = append(w.buf, suffix...)
}

// literal writes s as a literal, which later strings may refer to.
func (w *packer) literal(s string) {
	w.strs = append(w.strs, s)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(s))<<2)
	w.buf = append(w.buf, s...)
}

func (w *packer) int(v int64) { w.buf = binary.AppendVarint(w.buf, v) }

func (w *packer) time(v int64) {
	if v == 0 {
		w.buf = append(w.buf, 0)
		return
	}
	w.buf = binary.AppendVarint(append(w.buf, 1), v-w.last) // wraps alike both ways
	w.last = v
}

func (w *packer) bool(b bool) {
	if b {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

func (w *packer) strMap(m map[string]string) {
	if m == nil {
		w.buf = append(w.buf, 0)
		return
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(len(m))+1)
	for k, v := range m {
		w.str(k)
		w.str(v)
	}
}

// unpacker reads a packed state. Its strings point into the packed string.
type unpacker struct {
	s     string
	off   int
	strs  []string
	last  int64
	arena []byte // holds the strings made of a prefix and a suffix
	bad   bool
}

// rest returns the bytes not read yet, without copying.
func (r *unpacker) rest() []byte {
	return unsafe.Slice(unsafe.StringData(r.s[r.off:]), len(r.s)-r.off)
}

// advance moves past a varint of n bytes, as encoding/binary reports it
// (n ≤ 0: none could be read, and the state is bad).
func (r *unpacker) advance(n int) bool {
	if n <= 0 {
		r.bad = true
		r.off = len(r.s)
		return false
	}
	r.off += n
	return true
}

func (r *unpacker) uvarint() uint64 {
	v, n := binary.Uvarint(r.rest())
	if !r.advance(n) {
		return 0
	}
	return v
}

func (r *unpacker) str() string {
	if r.off >= len(r.s) {
		r.bad = true
		return ""
	}
	h := r.uvarint()
	i := int(h >> 2)
	switch h & 3 {
	case 0:
		if i > len(r.s)-r.off {
			r.bad = true
			return ""
		}
		s := r.s[r.off : r.off+i]
		r.off += i
		r.strs = append(r.strs, s)
		return s
	case 1:
		if i < len(r.strs) {
			return r.strs[i]
		}
	case 2:
		if i < len(packConsts) {
			return packConsts[i]
		}
	case 3:
		n := r.uvarint()
		if i < len(r.strs) && n <= uint64(len(r.s)-r.off) {
			// Appending never changes bytes an earlier string points to:
			// a full arena is copied, not overwritten.
			start := len(r.arena)
			r.arena = append(append(r.arena, r.strs[i]...), r.s[r.off:r.off+int(n)]...)
			r.off += int(n)
			s := unsafe.String(&r.arena[start], len(r.arena)-start)
			r.strs = append(r.strs, s)
			return s
		}
	}
	r.bad = true
	return ""
}

func (r *unpacker) int() int64 {
	v, n := binary.Varint(r.rest())
	if !r.advance(n) {
		return 0
	}
	return v
}

func (r *unpacker) time() int64 {
	if !r.bool() {
		return 0
	}
	r.last += r.int()
	return r.last
}

func (r *unpacker) bool() bool {
	if r.off >= len(r.s) {
		r.bad = true
		return false
	}
	r.off++
	return r.s[r.off-1] == 1
}

// strMap reads a map into m (cleared; nil: a new one), returning nil for a
// packed nil map.
func (r *unpacker) strMap(m map[string]string) map[string]string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	n--
	if n > uint64(len(r.s)) { // every entry takes at least two bytes
		r.bad = true
		return nil
	}
	if m == nil {
		m = make(map[string]string, n)
	} else {
		clear(m)
	}
	for range n {
		k := r.str()
		m[k] = r.str()
	}
	return m
}

// packFields writes or reads every field of an Instance, in one order for
// both, so that the two cannot disagree.
func packFields(w *packer, in *actors.Instance) {
	for _, s := range [...]string{in.InstanceID, in.HostName, in.App, in.IPAddr, in.SID,
		string(in.Status), string(in.OverriddenStatus)} {
		w.str(s)
	}
	w.int(int64(in.Port.Number))
	w.bool(in.Port.Enabled)
	w.int(int64(in.SecurePort.Number))
	w.bool(in.SecurePort.Enabled)
	w.int(int64(in.CountryID))
	w.str(in.DataCenterInfo.Class)
	w.str(in.DataCenterInfo.Name)
	w.strMap(in.DataCenterInfo.Metadata)
	l := &in.LeaseInfo
	w.int(int64(l.RenewalIntervalSecs))
	w.int(int64(l.DurationSecs))
	for _, v := range [...]int64{l.RegistrationTimestamp, l.LastRenewalTimestamp, l.EvictionTimestamp,
		l.ServiceUpTimestamp} {
		w.time(v)
	}
	w.strMap(in.Metadata)
	for _, s := range [...]string{in.AppGroupName, in.HomePageURL, in.StatusPageURL, in.HealthCheckURL,
		in.SecureHealthCheckURL, in.VIPAddress, in.SecureVIPAddress} {
		w.str(s)
	}
	w.bool(in.IsCoordinatingDiscoveryServer)
	w.time(in.LastUpdatedTimestamp)
	w.time(in.LastDirtyTimestamp)
	w.str(string(in.ActionType))
	w.str(in.ASGName)
}

// unpackFields is packFields' inverse; in's maps are reused.
func unpackFields(r *unpacker, in *actors.Instance) {
	in.InstanceID, in.HostName, in.App, in.IPAddr, in.SID = r.str(), r.str(), r.str(), r.str(), r.str()
	in.Status, in.OverriddenStatus = actors.Status(r.str()), actors.Status(r.str())
	in.Port = actors.Port{Number: int(r.int()), Enabled: r.bool()}
	in.SecurePort = actors.Port{Number: int(r.int()), Enabled: r.bool()}
	in.CountryID = int(r.int())
	in.DataCenterInfo.Class = r.str()
	in.DataCenterInfo.Name = r.str()
	in.DataCenterInfo.Metadata = r.strMap(in.DataCenterInfo.Metadata)
	in.LeaseInfo = actors.LeaseInfo{RenewalIntervalSecs: int(r.int()), DurationSecs: int(r.int()),
		RegistrationTimestamp: r.time(), LastRenewalTimestamp: r.time(), EvictionTimestamp: r.time(),
		ServiceUpTimestamp: r.time()}
	in.Metadata = r.strMap(in.Metadata)
	in.AppGroupName, in.HomePageURL, in.StatusPageURL, in.HealthCheckURL = r.str(), r.str(), r.str(), r.str()
	in.SecureHealthCheckURL, in.VIPAddress, in.SecureVIPAddress = r.str(), r.str(), r.str()
	in.IsCoordinatingDiscoveryServer = r.bool()
	in.LastUpdatedTimestamp = r.time()
	in.LastDirtyTimestamp = r.time()
	in.ActionType = actors.ActionType(r.str())
	in.ASGName = r.str()
}

var packers = sync.Pool{New: func() any { return &packer{buf: make([]byte, 0, 512)} }}

// pack returns in's packed form, led by its id.
func pack(in *actors.Instance) string {
	w := packers.Get().(*packer)
	w.buf, w.strs, w.last = w.buf[:0], w.strs[:0], 0
	w.literal(in.ID())
	packFields(w, in)
	s := string(w.buf)
	clear(w.strs) // keep no strings alive
	packers.Put(w)
	return s
}

// packedID returns the id that leads packed state s, without copying.
func packedID(s string) string {
	h, k := binary.Uvarint(unsafe.Slice(unsafe.StringData(s), len(s)))
	if k <= 0 || h&3 != 0 || h>>2 > uint64(len(s)-k) {
		return "" // never: pack wrote it
	}
	return s[k : k+int(h>>2)]
}

// unpackScratch is what unpacking a state may keep between uses: the arena
// of the strings it joins, and the strings it has read.
type unpackScratch struct {
	arena []byte
	strs  []string
}

// unpackInto fills in from packed state s; in's strings then point into s
// and into sc's arena, to which it appends the strings it joins, and in's
// maps are reused (nil: made). It reports whether s was well formed.
func unpackInto(in *actors.Instance, s string, sc *unpackScratch) bool {
	r := unpacker{s: s, arena: sc.arena[:0], strs: sc.strs[:0]}
	r.str() // the id, which fields may refer to
	unpackFields(&r, in)
	sc.arena, sc.strs = r.arena, r.strs
	clear(sc.strs) // keep no strings of s alive
	return !r.bad && r.off == len(s)
}

// unpackedState is a pooled Instance, with its scratch, for encoding a
// packed state.
type unpackedState struct {
	in actors.Instance
	sc unpackScratch
}

var unpackedStates = sync.Pool{New: func() any {
	return &unpackedState{sc: unpackScratch{arena: make([]byte, 0, 256), strs: make([]string, 0, 32)}}
}}

// appendPacked appends packed state s in enc's encoding.
func appendPacked(dst []byte, enc Encoder, s string) []byte {
	u := unpackedStates.Get().(*unpackedState)
	unpackInto(&u.in, s, &u.sc)
	dst = enc.AppendInstance(dst, &u.in)
	md, dc := u.in.Metadata, u.in.DataCenterInfo.Metadata
	u.in = actors.Instance{} // keep no strings of s alive
	u.in.Metadata, u.in.DataCenterInfo.Metadata = md, dc
	clear(md)
	clear(dc)
	unpackedStates.Put(u)
	return dst
}
