package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// The reflection-free codec (msgpack_codec.go, msgpack_methods_gen.go) is checked
// against msgpack's reflection on "mirror" types: struct types built at run
// time with reflect.StructOf from the message structs' exported fields, so
// they have the same fields, tags and field types but none of the methods.
// Reflection on them is exactly what Encode and Decode did before the
// methods existed (TestMirrorMatchesGoldenFrames pins that to the seed
// frames written by the reflective codec), and it shares no code with the
// methods under test.

// codecModes are the two codecs the benchmarks compare.
var codecModes = []struct {
	name    string
	reflect bool
}{{"hand", false}, {"reflect", true}}

// setReflectCodec sets reflectCodec and returns a function restoring it.
func setReflectCodec(on bool) (restore func()) {
	old := reflectCodec
	reflectCodec = on
	return func() { reflectCodec = old }
}

// codecTypes are all the structs with hand-written methods, and the field
// tables their decoders use.
var codecTypes = []struct {
	zero   any // pointer to a zero value
	fields []string
}{
	{new(Records), recordsFields[:]},
	{new(InstanceRecord), instanceRecordFields[:]},
	{new(InstanceData), instanceDataFields[:]},
	{new(PortData), portDataFields[:]},
	{new(DataCenterData), dataCenterDataFields[:]},
	{new(LeaseData), leaseDataFields[:]},
	{new(Renewals), renewalsFields[:]},
	{new(Renewal), renewalFields[:]},
	{new(Digest), digestFields[:]},
	{new(AppDigest), appDigestFields[:]},
	{new(SyncRequest), syncRequestFields[:]},
	{new(SyncApp), syncAppFields[:]},
	{new(RecordVersion), recordVersionFields[:]},
	{new(Load), loadFields[:]},
	{new(Handoff), handoffFields[:]},
	{new(HandoffApp), handoffAppFields[:]},
	{new(LeaseAge), leaseAgeFields[:]},
}

// messageTypes are the framed messages, by tag.
var messageTypes = []Type{TypeRecords, TypeRenewals, TypeDigest, TypeSyncRequest, TypeLoad, TypeHandoff}

// --- mirror types: msgpack's reflection without the methods ---

var (
	mirrorMu    sync.Mutex
	mirrorTypes = map[reflect.Type]reflect.Type{}
)

// mirrorOf returns the method-less twin of t: structs rebuilt from their
// exported fields (the `_msgpack` as_array marker is unexported and cannot be
// rebuilt; the mirror encoder's UseArrayEncodedStructs does its job), and
// pointers, slices and maps of such structs.
func mirrorOf(t reflect.Type) reflect.Type {
	mirrorMu.Lock()
	defer mirrorMu.Unlock()
	return mirrorOfLocked(t)
}

func mirrorOfLocked(t reflect.Type) reflect.Type {
	if m, ok := mirrorTypes[t]; ok {
		return m
	}
	var m reflect.Type
	switch t.Kind() {
	case reflect.Pointer:
		m = reflect.PointerTo(mirrorOfLocked(t.Elem()))
	case reflect.Slice:
		m = reflect.SliceOf(mirrorOfLocked(t.Elem()))
	case reflect.Map:
		m = reflect.MapOf(mirrorOfLocked(t.Key()), mirrorOfLocked(t.Elem()))
	case reflect.Struct:
		marker, ok := t.FieldByName("_msgpack")
		if !ok || marker.Index[0] != 0 || marker.Tag.Get("msgpack") != ",as_array" {
			panic(fmt.Sprintf("%s: want a leading `_msgpack struct{} `msgpack:\",as_array\"`` marker", t))
		}
		var fs []reflect.StructField
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				fs = append(fs, reflect.StructField{Name: f.Name, Type: mirrorOfLocked(f.Type), Tag: f.Tag})
			}
		}
		m = reflect.StructOf(fs)
	default:
		m = t
	}
	mirrorTypes[t] = m
	return m
}

// convert deep-copies src into dst, of the same shape (a type and its
// mirror), keeping nil apart from empty.
func convert(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if src.IsNil() {
			dst.SetZero()
			return
		}
	}
	switch src.Kind() {
	case reflect.Pointer:
		dst.Set(reflect.New(dst.Type().Elem()))
		convert(dst.Elem(), src.Elem())
	case reflect.Slice:
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			convert(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		m := reflect.MakeMapWithSize(dst.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			k := reflect.New(dst.Type().Key()).Elem()
			v := reflect.New(dst.Type().Elem()).Elem()
			convert(k, it.Key())
			convert(v, it.Value())
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case reflect.Struct:
		for i := range dst.NumField() {
			if f := dst.Type().Field(i); f.IsExported() {
				convert(dst.Field(i), src.FieldByName(f.Name))
			}
		}
	default:
		dst.Set(src.Convert(dst.Type()))
	}
}

// newWireEncoder returns an encoder with the options of codec.go's encPool.
func newWireEncoder(buf *bytes.Buffer) *msgpack.Encoder {
	e := msgpack.NewEncoder(buf)
	e.UseCompactInts(true)
	e.SetSortMapKeys(true)
	return e
}

// encodeWire encodes *v (v a pointer) as the wire encoder does, with
// whichever codec reflectCodec selects.
func encodeWire(v any) ([]byte, error) {
	var buf bytes.Buffer
	err := newWireEncoder(&buf).Encode(v)
	return buf.Bytes(), err
}

// decodeWire decodes b into a new value of v's type and returns a pointer to it.
func decodeWire(b []byte, v any) (any, error) {
	out := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	err := msgpack.NewDecoder(bytes.NewReader(b)).Decode(out)
	return out, err
}

// encodeMirror encodes *v with reflection on its mirror type.
func encodeMirror(v any) ([]byte, error) {
	src := reflect.ValueOf(v).Elem()
	m := reflect.New(mirrorOf(src.Type()))
	convert(m.Elem(), src)
	var buf bytes.Buffer
	e := newWireEncoder(&buf)
	e.UseArrayEncodedStructs(true)
	err := e.Encode(m.Interface())
	return buf.Bytes(), err
}

// decodeMirror decodes b with reflection into the mirror of v's type and
// returns a pointer to a copy of the result as v's type.
func decodeMirror(b []byte, v any) (any, error) {
	t := reflect.TypeOf(v).Elem()
	m := reflect.New(mirrorOf(t))
	err := msgpack.NewDecoder(bytes.NewReader(b)).Decode(m.Interface())
	out := reflect.New(t)
	convert(out.Elem(), m.Elem())
	return out.Interface(), err
}

// loadV4Reference is Load as version 4 declared it, for reflection.
type loadV4Reference struct {
	_msgpack struct{} `msgpack:",as_array"`

	Node         string
	WindowMillis int64
	Renewals     int64
	Expected     int64
	Engaged      bool
	Reason       string
}

// decodeFrameMirror is Decode with reflection on the mirror types in place
// of the hand-written decoder: the reference for what Decode must accept.
func decodeFrameMirror(b []byte) (Message, error) {
	switch {
	case len(b) < headerLen:
		return nil, ErrTruncated
	case !Supported(b[0]):
		return nil, ErrVersion
	}
	m := newMessage(Type(b[1]))
	if m == nil {
		return nil, ErrUnknownType
	}
	if err := checkBody(b[headerLen:]); err != nil {
		return nil, err
	}
	if _, ok := m.(*Load); ok && b[0] < 5 {
		old, err := decodeMirror(b[headerLen:], new(loadV4Reference))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		l := old.(*loadV4Reference)
		return &Load{Node: l.Node, WindowMillis: l.WindowMillis, Renewals: l.Renewals, Expected: l.Expected,
			Engaged: l.Engaged, Reason: l.Reason}, nil
	}
	got, err := decodeMirror(b[headerLen:], m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return got.(Message), nil
}

// --- random messages ---

// gen fills values with random contents biased towards the edges of the
// encoding: nil and empty containers, zero and extreme integers, strings
// and containers around the msgpack size classes, unicode.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

var (
	edgeInts = []int64{
		0, 1, -1, 31, 32, -32, -33, 127, 128, -128, -129, 255, 256,
		math.MaxInt16, math.MaxInt16 + 1, math.MinInt16, math.MinInt16 - 1, math.MaxUint16, math.MaxUint16 + 1,
		math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxUint32, math.MaxUint32 + 1,
		math.MaxInt64, math.MinInt64, 1_700_000_000_000,
	}
	edgeUints = []uint64{
		0, 1, 127, 128, 255, 256, math.MaxUint16, math.MaxUint16 + 1, math.MaxUint32, math.MaxUint32 + 1,
		math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64, 1_700_000_000_000 << 16,
	}
	runes      = []rune("aZ09-_.:/ éüßжλ日本語€\u0000\t\n\u00a0\U0001F680\uFFFD")
	edgeStrLen = []int{31, 32, 255, 256, 65535, 65536}
)

func (g *gen) int64() int64 {
	switch g.r.IntN(3) {
	case 0:
		return edgeInts[g.r.IntN(len(edgeInts))]
	case 1:
		return int64(g.r.Uint64()) >> g.r.IntN(64)
	}
	return g.r.Int64N(1000) - 100
}

func (g *gen) uint64() uint64 {
	if g.r.IntN(2) == 0 {
		return edgeUints[g.r.IntN(len(edgeUints))]
	}
	return g.r.Uint64() >> g.r.IntN(64)
}

func (g *gen) str() string {
	switch n := g.r.IntN(100); {
	case n < 10:
		return ""
	case n < 12: // around a size class, in bytes (ASCII)
		return strings.Repeat("x", edgeStrLen[g.r.IntN(4)]+g.r.IntN(3)-1)
	case n == 12 && g.r.IntN(10) == 0: // str16/str32 boundary: rare, it is big
		return strings.Repeat("y", edgeStrLen[4+g.r.IntN(2)])
	case n < 15: // invalid UTF-8 travels as bytes
		return string([]byte{0xff, 0xfe, byte(g.r.IntN(256))})
	}
	var sb strings.Builder
	for range g.r.IntN(40) {
		sb.WriteRune(runes[g.r.IntN(len(runes))])
	}
	return sb.String()
}

// length returns a container length: mostly short, sometimes around the
// fixarray/fixmap limit of 15.
func (g *gen) length(big bool) int {
	if big && g.r.IntN(8) == 0 {
		return 14 + g.r.IntN(4)
	}
	return 1 + g.r.IntN(4)
}

// fill sets v (settable) to a random value of its type.
func (g *gen) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(g.str())
	case reflect.Bool:
		v.SetBool(g.r.IntN(2) == 0)
	case reflect.Int, reflect.Int64:
		v.SetInt(g.int64())
	case reflect.Uint32, reflect.Uint64:
		n := g.uint64()
		for v.OverflowUint(n) {
			n >>= 32
		}
		v.SetUint(n)
	case reflect.Pointer:
		if g.r.IntN(4) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		g.fill(v.Elem())
	case reflect.Slice:
		switch g.r.IntN(6) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			// Keep batches of full records small: a record is big.
			n := g.length(v.Type().Elem() != reflect.TypeFor[InstanceRecord]() || g.r.IntN(4) == 0)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				g.fill(v.Index(i))
			}
		}
	case reflect.Map:
		switch g.r.IntN(5) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			m := reflect.MakeMap(v.Type())
			for range g.length(true) * (1 + g.r.IntN(2)) {
				k := reflect.New(v.Type().Key()).Elem()
				e := reflect.New(v.Type().Elem()).Elem()
				g.fill(k)
				g.fill(e)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				g.fill(v.Field(i))
			}
		}
	default:
		panic("gen: unexpected kind " + v.Kind().String())
	}
}

// value returns a pointer to a random value of the type zero points to.
func (g *gen) value(zero any) any {
	v := reflect.New(reflect.TypeOf(zero).Elem())
	g.fill(v.Elem())
	return v.Interface()
}

// --- the property: hand-written codec == reflection ---

// compareWithReflection encodes *v with the hand-written codec, with
// reflectCodec and with reflection on the mirror type, requires the three
// to be the same bytes, and requires the hand-written decoder reading
// reflection's bytes and reflection reading the hand-written codec's bytes
// to give back *v. It returns every difference found, joined.
func compareWithReflection(v any) error {
	var errs []error
	hand, err := encodeWire(v)
	if err != nil {
		return fmt.Errorf("hand-written encode: %w", err)
	}
	restore := setReflectCodec(true)
	viaSwitch, err := encodeWire(v)
	restore()
	if err != nil {
		return fmt.Errorf("reflectCodec encode: %w", err)
	}
	ref, err := encodeMirror(v)
	if err != nil {
		return fmt.Errorf("reflection encode: %w", err)
	}
	if !bytes.Equal(hand, ref) {
		errs = append(errs, fmt.Errorf("bytes: hand-written encoding differs from reflection: %s", byteDiff(hand, ref)))
	}
	if !bytes.Equal(viaSwitch, ref) {
		errs = append(errs, fmt.Errorf("bytes: reflectCodec encoding differs from reflection: %s", byteDiff(viaSwitch, ref)))
	}
	for _, c := range []struct {
		name   string
		decode func([]byte, any) (any, error)
		input  []byte
	}{
		{"hand-written decoder on reflection's bytes", decodeWire, ref},
		{"hand-written decoder on its own bytes", decodeWire, hand},
		{"reflection on the hand-written bytes", decodeMirror, hand},
	} {
		got, err := c.decode(c.input, v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("value: %s: %w", c.name, err))
		case !reflect.DeepEqual(got, v):
			errs = append(errs, fmt.Errorf("value: %s gives back a different %T", c.name, v))
		}
	}
	return errors.Join(errs...)
}

// byteDiff describes where a and b first differ.
func byteDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return fmt.Sprintf("first at offset %d of %d/%d bytes: % x… vs % x…", i, len(a), len(b), a[i:min(i+8, len(a))], b[i:min(i+8, len(b))])
}

func TestHandCodecMatchesReflection(t *testing.T) {
	iterations := 1000
	if testing.Short() {
		iterations = 100
	}
	seen := map[string]bool{}
	for _, ct := range codecTypes {
		name := reflect.TypeOf(ct.zero).Elem().Name()
		t.Run(name, func(t *testing.T) {
			g := newGen(uint64(len(name)) * 7919)
			require.NoError(t, compareWithReflection(ct.zero), "zero value")
			for i := range iterations {
				v := g.value(ct.zero)
				if err := compareWithReflection(v); err != nil {
					t.Fatalf("iteration %d: %v\nvalue: %#v", i, err, v)
				}
				b, err := encodeWire(v)
				require.NoError(t, err)
				codeFamilies(b, seen)
			}
		})
	}
	// The generator reached every encoding the message structs can take,
	// but for arrays and maps of 65536 or more entries.
	for _, f := range []string{
		"fixint", "negative fixint", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
		"nil", "false", "true", "fixstr", "str8", "str16", "str32", "fixarray", "array16", "fixmap", "map16",
	} {
		assert.True(t, seen[f], "no value was encoded as %s", f)
	}
}

// codeFamilies records in seen the msgpack families of every value in b.
func codeFamilies(b []byte, seen map[string]bool) int {
	named := map[byte]string{
		0xc0: "nil", 0xc2: "false", 0xc3: "true", 0xcc: "uint8", 0xcd: "uint16", 0xce: "uint32", 0xcf: "uint64",
		0xd0: "int8", 0xd1: "int16", 0xd2: "int32", 0xd3: "int64", 0xd9: "str8", 0xda: "str16", 0xdb: "str32",
		0xdc: "array16", 0xdd: "array32", 0xde: "map16", 0xdf: "map32",
	}
	c := b[0]
	head, n := 0, 0 // header length and values inside, for containers
	switch {
	case c <= 0x7f:
		seen["fixint"] = true
	case c >= 0xe0:
		seen["negative fixint"] = true
	case c <= 0x8f:
		seen["fixmap"], head, n = true, 1, 2*int(c&0x0f)
	case c <= 0x9f:
		seen["fixarray"], head, n = true, 1, int(c&0x0f)
	case c <= 0xbf:
		seen["fixstr"] = true
	default:
		seen[named[c]] = true
		switch c {
		case 0xdc:
			head, n = 3, int(b[1])<<8|int(b[2])
		case 0xde:
			head, n = 3, 2*(int(b[1])<<8|int(b[2]))
		}
	}
	if head == 0 {
		size, err := skipValue(b, 0)
		if err != nil {
			panic(err)
		}
		return size
	}
	off := head
	for range n {
		off += codeFamilies(b[off:], seen)
	}
	return off
}

// TestHandCodecMatchesReflectionOnSamples covers the hand-picked messages of
// codec_test.go and a realistic batch, framed.
func TestHandCodecMatchesReflectionOnSamples(t *testing.T) {
	msgs := sampleMessages()
	msgs["realistic"] = realisticRecords(40)
	msgs["batch"] = batch(20)
	for name, m := range msgs {
		require.NoError(t, compareWithReflection(m), name)
		hand, err := Encode(m)
		require.NoError(t, err)
		restore := setReflectCodec(true)
		viaSwitch, err := Encode(m)
		restore()
		require.NoError(t, err)
		require.Equal(t, viaSwitch, hand, name)
	}
}

// TestMirrorMatchesGoldenFrames pins the reference: the fuzz seed frames were
// written by the reflective codec before the hand-written one existed, and
// reflection on the mirror types must still produce them.
func TestMirrorMatchesGoldenFrames(t *testing.T) {
	for name, m := range sampleMessages() {
		body, err := encodeMirror(m)
		require.NoError(t, err)
		frame := append([]byte{ProtocolVersion, byte(m.Type())}, body...)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", frame)
		got, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzDecode", "seed-"+name))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), name)
	}
}

// TestSabotageIsCaught proves that the property can fail: each deliberate
// mistake in the encoder is reported, by the byte comparison always and by
// the value comparison when it changes what is decoded.
func TestSabotageIsCaught(t *testing.T) {
	cases := []struct {
		name      string
		kind      sabotageKind
		valueToo  bool // the decoded value changes too, not only the bytes
		messageOf any
	}{
		{"wide int", sabotageWideInt, false, new(Records)},
		{"map order", sabotageMapOrder, false, new(InstanceData)},
		{"nil map as empty", sabotageEmptyMap, true, new(DataCenterData)},
		{"fields swapped", sabotageSwapFields, true, new(SyncRequest)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGen(uint64(c.kind))
			require.NoError(t, compareWithReflection(g.value(c.messageOf)), "before sabotage")
			sabotage = c.kind
			defer func() { sabotage = sabotageNone }()
			var err error
			for range 200 {
				if err = compareWithReflection(g.value(c.messageOf)); err != nil {
					break
				}
			}
			require.Error(t, err, "sabotage %q went unnoticed", c.name)
			t.Logf("reported: %v", err)
			assert.Contains(t, err.Error(), "bytes: hand-written encoding differs from reflection")
			assert.NotContains(t, err.Error(), "reflectCodec encoding differs", "the reference is not sabotaged")
			if c.valueToo {
				assert.Contains(t, err.Error(), "value: hand-written decoder on its own bytes")
			} else {
				assert.NotContains(t, err.Error(), "value:")
			}
		})
	}
}

// TestFieldTablesMatchStructs guards against a field added to a struct in
// msg.go but not to its hand-written codec.
func TestFieldTablesMatchStructs(t *testing.T) {
	for _, ct := range codecTypes {
		typ := reflect.TypeOf(ct.zero).Elem()
		var names []string
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				names = append(names, f.Name)
			}
		}
		assert.Equal(t, names, ct.fields, "%s: the field table (msgpack_methods_gen.go) must list the exported fields in order", typ)
	}
	// Every struct reachable from a message has a hand-written codec.
	have := map[reflect.Type]bool{}
	for _, ct := range codecTypes {
		have[reflect.TypeOf(ct.zero).Elem()] = true
	}
	var walk func(reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			walk(typ.Elem())
		case reflect.Struct:
			assert.True(t, typ.NumField() == 0 || have[typ], "%s has no hand-written codec", typ)
			for i := range typ.NumField() {
				walk(typ.Field(i).Type)
			}
		}
	}
	for _, tag := range messageTypes {
		walk(reflect.TypeOf(newMessage(tag)).Elem())
	}
}

// --- the decoder accepts and refuses what reflection does ---

// lenient writes a value in any form msgpack's reflective decoder may meet
// from a peer, valid or not: structs as arrays, maps keyed by field name
// (fields missing, repeated, unknown), nil or empty arrays or arrays of the
// wrong length; scalars as nil, in wider or other integer codes, strings as
// bin; containers with non-minimal headers.
type lenient struct {
	*gen
	e *msgpack.Encoder
	w *bytes.Buffer
}

func (l *lenient) rare(n int) bool { return l.r.IntN(n) == 0 }

func (l *lenient) arrayLen(n int) {
	switch {
	case l.rare(12):
		l.w.Write([]byte{codeArray16, byte(n >> 8), byte(n)})
	case l.rare(12):
		l.w.Write([]byte{codeArray32, 0, 0, byte(n >> 8), byte(n)})
	default:
		_ = l.e.EncodeArrayLen(n)
	}
}

func (l *lenient) mapLen(n int) {
	switch {
	case l.rare(12):
		l.w.Write([]byte{codeMap16, byte(n >> 8), byte(n)})
	case l.rare(12):
		l.w.Write([]byte{codeMap32, 0, 0, byte(n >> 8), byte(n)})
	default:
		_ = l.e.EncodeMapLen(n)
	}
}

func (l *lenient) str(s string) {
	switch {
	case l.rare(10):
		_ = l.e.EncodeBytes([]byte(s))
	case l.rare(15) && len(s) < 256:
		l.w.Write(append([]byte{0xd9, byte(len(s))}, s...)) // str8 where fixstr would do
	case l.rare(20):
		_ = l.e.EncodeNil()
	case l.rare(60):
		_ = l.e.EncodeInt(int64(len(s)))
	default:
		_ = l.e.EncodeString(s)
	}
}

// junk writes a random small msgpack value, for unknown map keys.
func (l *lenient) junk() {
	switch l.r.IntN(5) {
	case 0:
		_ = l.e.EncodeString(l.gen.str())
	case 1:
		_ = l.e.EncodeInt(l.int64())
	case 2:
		_ = l.e.Encode([]any{1, "a", nil, true})
	case 3:
		_ = l.e.Encode(map[string]any{"k": []int{1, 2}})
	default:
		_ = l.e.EncodeFloat64(1.5)
	}
}

func (l *lenient) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		l.str(v.String())
	case reflect.Bool:
		switch {
		case l.rare(20):
			_ = l.e.EncodeNil()
		case l.rare(60):
			_ = l.e.EncodeInt(1)
		default:
			_ = l.e.EncodeBool(v.Bool())
		}
	case reflect.Int, reflect.Int64, reflect.Uint32, reflect.Uint64:
		var n uint64
		if v.CanInt() {
			n = uint64(v.Int())
		} else {
			n = v.Uint()
		}
		switch {
		case l.rare(20):
			_ = l.e.EncodeNil()
		case l.rare(10):
			_ = l.e.EncodeUint64(n) // 9 bytes, unsigned code
		case l.rare(10):
			_ = l.e.EncodeInt64(int64(n)) // 9 bytes, signed code
		case l.rare(20):
			_ = l.e.EncodeUint(n + 1<<32) // wider than a uint32 field
		case l.rare(60):
			_ = l.e.EncodeFloat64(float64(n))
		case l.rare(60):
			_ = l.e.EncodeString("1")
		case v.CanInt():
			_ = l.e.EncodeInt(int64(n))
		default:
			_ = l.e.EncodeUint(n)
		}
	case reflect.Pointer:
		if v.IsNil() || l.rare(15) {
			_ = l.e.EncodeNil()
			return
		}
		l.value(v.Elem())
	case reflect.Slice:
		if v.IsNil() || l.rare(25) {
			_ = l.e.EncodeNil()
			return
		}
		l.arrayLen(v.Len())
		for i := range v.Len() {
			l.value(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || l.rare(25) {
			_ = l.e.EncodeNil()
			return
		}
		keys := v.MapKeys()
		dup := 0
		if len(keys) > 0 && l.rare(6) {
			dup = 1 // a key twice: the later value wins
		}
		l.mapLen(len(keys) + dup)
		for _, k := range keys {
			l.str(k.String())
			l.str(v.MapIndex(k).String())
		}
		if dup > 0 {
			l.str(keys[0].String())
			l.str(l.gen.str())
		}
	case reflect.Struct:
		l.structValue(v)
	}
}

func (l *lenient) structValue(v reflect.Value) {
	var fields []int
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			fields = append(fields, i)
		}
	}
	switch n := l.r.IntN(40); {
	case n == 0:
		_ = l.e.EncodeNil()
	case n == 1:
		l.arrayLen(0)
	case n == 2: // one value too many or too few
		k := len(fields) + 1 - 2*l.r.IntN(2)
		l.arrayLen(k)
		for i := range k {
			if i < len(fields) {
				l.value(v.Field(fields[i]))
			} else {
				_ = l.e.EncodeNil()
			}
		}
	case n < 8: // keyed by field name, in any order, some missing, some twice, some unknown
		type kv struct {
			name string
			val  func()
		}
		var kvs []kv
		for _, i := range fields {
			f := v.Type().Field(i)
			if !l.rare(4) {
				kvs = append(kvs, kv{f.Name, func() { l.value(v.Field(i)) }})
			}
			if l.rare(5) { // again, with another value
				other := reflect.New(f.Type).Elem()
				l.fill(other)
				kvs = append(kvs, kv{f.Name, func() { l.value(other) }})
			}
		}
		for range l.r.IntN(3) {
			kvs = append(kvs, kv{[]string{"", "app", "Unknown", "_msgpack"}[l.r.IntN(4)], l.junk})
		}
		l.r.Shuffle(len(kvs), func(i, j int) { kvs[i], kvs[j] = kvs[j], kvs[i] })
		l.mapLen(len(kvs))
		for _, e := range kvs {
			l.str(e.name)
			e.val()
		}
	default:
		l.arrayLen(len(fields))
		for _, i := range fields {
			l.value(v.Field(i))
		}
	}
}

// mutate damages b in one to three random places.
func mutate(r *rand.Rand, b []byte) []byte {
	b = bytes.Clone(b)
	interesting := []byte{codeNil, 0x90, 0x91, 0x80, 0x81, 0xa0, 0xc2, 0xc3, 0xc4, 0xcc, 0xcf, 0xd3, 0xd4, 0xd9, codeArray16, codeMap16, 0xff, 0x00, 0x7f}
	for range 1 + r.IntN(3) {
		if len(b) <= headerLen {
			break
		}
		i := headerLen + r.IntN(len(b)-headerLen)
		switch r.IntN(5) {
		case 0:
			b[i] = byte(r.IntN(256))
		case 1:
			b[i] = interesting[r.IntN(len(interesting))]
		case 2:
			b = append(b[:i], b[i+1:]...)
		case 3:
			b = append(b[:i], append([]byte{interesting[r.IntN(len(interesting))]}, b[i:]...)...)
		default:
			b = b[:i]
		}
	}
	return b
}

// sameDecoding decodes frame with Decode and with reflection on the mirror
// types; they must both refuse it, or both accept it with equal messages.
func sameDecoding(frame []byte) (accepted bool, err error) {
	got, gotErr := Decode(frame)
	want, wantErr := decodeFrameMirror(frame)
	switch {
	case (gotErr == nil) != (wantErr == nil):
		return false, fmt.Errorf("Decode error %v, reflection error %v on % x", gotErr, wantErr, frame)
	case gotErr != nil:
		for _, sentinel := range []error{ErrVersion, ErrUnknownType, ErrTruncated, ErrMalformed} {
			if errors.Is(wantErr, sentinel) && !errors.Is(gotErr, sentinel) {
				return false, fmt.Errorf("Decode error %v, reflection error %v on % x", gotErr, wantErr, frame)
			}
		}
		return false, nil
	case !reflect.DeepEqual(got, want):
		return true, fmt.Errorf("Decode and reflection decode % x differently:\n%#v\n%#v", frame, got, want)
	}
	return true, nil
}

func TestDecodeAcceptsWhatReflectionAccepts(t *testing.T) {
	iterations := 6000
	if testing.Short() {
		iterations = 500
	}
	g := newGen(42)
	var accepted, refused, mutatedAccepted int
	for i := range iterations {
		tag := messageTypes[i%len(messageTypes)]
		m := g.value(newMessage(tag))
		var buf bytes.Buffer
		buf.Write([]byte{ProtocolVersion, byte(tag)})
		l := &lenient{gen: g, e: newWireEncoder(&buf), w: &buf}
		l.value(reflect.ValueOf(m).Elem())
		frame := buf.Bytes()
		mutated := g.r.IntN(3) == 0
		if mutated {
			frame = mutate(g.r, frame)
		}
		ok, err := sameDecoding(frame)
		if err != nil {
			t.Fatalf("iteration %d (%s, mutated %v): %v", i, tag, mutated, err)
		}
		switch {
		case ok && mutated:
			mutatedAccepted++
			accepted++
		case ok:
			accepted++
		default:
			refused++
		}
	}
	t.Logf("%d accepted (%d of them mutated), %d refused", accepted, mutatedAccepted, refused)
	// The generator must exercise both sides.
	assert.Greater(t, accepted, iterations/4)
	assert.Greater(t, refused, iterations/10)
	assert.Positive(t, mutatedAccepted)
}

// TestDecodeRepeatedFieldsLikeReflection pins the strangest inputs
// reflection accepts: a struct keyed by field name that repeats a field, so
// that the second value is decoded into the first.
func TestDecodeRepeatedFieldsLikeReflection(t *testing.T) {
	type kv = map[string]any
	enc := func(v any) []byte {
		var buf bytes.Buffer
		buf.Write([]byte{ProtocolVersion, byte(TypeRecords)})
		e := newWireEncoder(&buf)
		require.NoError(t, e.Encode(v))
		return buf.Bytes()
	}
	inst := func(meta map[string]string) []any {
		return []any{"id", "", "", "", "", "", "", nil, nil, 0, nil, nil, meta, "", "", "", "", "", "", "", false, 0, 0, "", ""}
	}
	rec := func(instance any) []any { return []any{"A", "1", 1, "n", false, instance, false, 0} }
	// msgpack sorts the keys of map[string]any, so build maps by hand.
	records := func(kvs ...any) []byte {
		var buf bytes.Buffer
		buf.Write([]byte{ProtocolVersion, byte(TypeRecords)})
		e := newWireEncoder(&buf)
		require.NoError(t, e.EncodeMapLen(len(kvs)/2))
		for i := 0; i < len(kvs); i += 2 {
			require.NoError(t, e.Encode(kvs[i]))
			require.NoError(t, e.Encode(kvs[i+1]))
		}
		return buf.Bytes()
	}
	frames := map[string][]byte{
		"nil body":           enc(nil),
		"empty array":        enc([]any{}),
		"map body":           enc(kv{"Done": []string{"A"}}),
		"records twice":      records("Records", []any{rec(nil), rec(nil), rec(nil)}, "Records", []any{rec(nil)}),
		"records grow":       records("Records", []any{rec(nil)}, "Records", []any{rec(nil), nil, []any{}}),
		"records shrink":     records("Records", []any{rec(nil), rec(nil), rec(nil)}, "Records", []any{}, "Records", []any{rec(nil), nil, rec(nil)}),
		"records then nil":   records("Records", []any{rec(nil)}, "Records", nil),
		"metadata merged":    records("Records", []any{rec(inst(map[string]string{"a": "1"}))}, "Records", []any{rec(inst(map[string]string{"b": "2"}))}),
		"instance then nil":  records("Records", []any{rec(inst(nil))}, "Records", []any{rec(nil)}),
		"done twice":         records("Done", []string{"A", "B"}, "Done", []string{"C"}),
		"done then nil":      records("Done", []string{"A"}, "Done", nil),
		"done then empty":    records("Done", []string{"A"}, "Done", []string{}),
		"unknown key":        records("Nope", []any{1, 2}, "Done", []string{"A"}),
		"nil key":            records(nil, 1),
		"bin key":            records([]byte("Done"), []string{"A"}),
		"int key":            records(1, 1),
		"wrong field count":  enc([]any{nil}),
		"extra field":        enc([]any{nil, nil, nil}),
		"record as map":      records("Records", []any{kv{"ID": "x", "Clock": 7}}),
		"nested empty array": records("Records", []any{[]any{}}),
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			accepted, err := sameDecoding(frame)
			require.NoError(t, err)
			t.Logf("accepted: %v", accepted)
		})
	}
}

// FuzzDecodeMatchesReflection: whatever the input, Decode accepts it exactly
// when reflection on the method-less types does, and decodes it to the
// same message.
//
//	go test -run XXX -fuzz FuzzDecodeMatchesReflection -fuzztime 60s ./wire/
func FuzzDecodeMatchesReflection(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := Encode(m)
		require.NoError(f, err)
		f.Add(b)
	}
	g := newGen(7)
	for i := range 20 {
		tag := messageTypes[i%len(messageTypes)]
		var buf bytes.Buffer
		buf.Write([]byte{ProtocolVersion, byte(tag)})
		l := &lenient{gen: g, e: newWireEncoder(&buf), w: &buf}
		l.value(reflect.ValueOf(g.value(newMessage(tag))).Elem())
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := sameDecoding(b); err != nil {
			t.Fatal(err)
		}
	})
}
