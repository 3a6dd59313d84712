package wire

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

//go:generate go run ./internal/msgpackgen

// The message structs implement msgpack.CustomEncoder and CustomDecoder
// without reflection: msgpack's reflection walked every field of every record
// through reflect.Value, 18% of the CPU of a node joining a cluster of a
// million instances. The methods are generated from the struct definitions in
// msg.go by internal/msgpackgen (msgpack_methods_gen.go; the few kept by hand
// are in msgpack_handwritten.go) and built on the helpers in this file. They
// must stay byte-for-byte what reflection produces for those definitions, and
// accept and refuse exactly what it accepts and refuses; msgpack_codec_test.go
// checks both against msgpack's own reflection on method-less copies of the
// types.
//
// What reflection does, and so what the methods do:
//
//   - A struct tagged as_array is an array of its exported fields in
//     declaration order; the `_msgpack struct{}` marker is not a field.
//   - Strings are str (fixstr, str8, str16, str32 by length); bool is
//     true/false; int, int64, uint32 and uint64 take the fewest bytes
//     (UseCompactInts, which the wire encoder sets; plain int is compact
//     whatever the option).
//   - A nil pointer, slice or map is nil; an empty slice or map is an empty
//     array or map. map[string]string is written in increasing key order
//     (SetSortMapKeys, which the wire encoder sets).
//
// Encoding does not consult the Encoder's compact-int and sorted-keys
// options (msgpack does not expose them): it always writes what the wire
// encoder (codec.go), which sets both, wrote by reflection. Decoding follows
// reflection's leniency: a struct may also come as nil or an empty array
// (its zero value) or as a map keyed by field name (unknown keys skipped,
// repeated keys decoded again into the same field); scalars accept nil as
// their zero value and any integer width; a string may come as bin.

// reflectCodec makes every EncodeMsgpack and DecodeMsgpack hand over to
// msgpack's reflection on a method-less copy of its type, as before the
// methods existed. Tests and benchmarks set it to compare the two; it must be
// false in production, and it is not safe to flip while messages are encoded
// or decoded.
var reflectCodec bool

// sabotage makes the encoder write values differently from reflection, so
// that a test can prove that the equality checks catch it.
// Tests only; zero in production.
var sabotage sabotageKind

// sabotageKind names one deliberate mistake of the encoder.
type sabotageKind int

const (
	// sabotageNone: the encoder is correct.
	sabotageNone sabotageKind = iota
	// sabotageWideInt writes every signed integer (writer.int) as a full
	// int64, not compactly: same values decoded, different bytes.
	sabotageWideInt
	// sabotageMapOrder writes metadata maps in decreasing key order.
	sabotageMapOrder
	// sabotageEmptyMap writes a nil metadata map as an empty one.
	sabotageEmptyMap
	// sabotageSwapFields writes RecordVersion's Node before its ID.
	sabotageSwapFields
)

// msgpack codes this file tells apart (msgpcode declares them as variables).
const (
	codeNil         = 0xc0
	codeFixMapLow   = 0x80
	codeFixMapHigh  = 0x8f
	codeFixArrayLow = 0x90
	codeFixArrayHi  = 0x9f
	codeArray16     = 0xdc
	codeArray32     = 0xdd
	codeMap16       = 0xde
	codeMap32       = 0xdf
)

// writer wraps an Encoder and keeps its first error, so that each type's
// encoder reads as the list of its fields.
type writer struct {
	e   *msgpack.Encoder
	err error
}

// keep records err if it is the first. It stores nothing on success: the
// writer may live on the heap, where every pointer store costs a write barrier
// while the collector runs.
func (w *writer) keep(err error) {
	if err != nil {
		w.err = err
	}
}

func (w *writer) arrayLen(n int) {
	if w.err == nil {
		w.keep(w.e.EncodeArrayLen(n))
	}
}

func (w *writer) null() {
	if w.err == nil {
		w.keep(w.e.EncodeNil())
	}
}

func (w *writer) str(s string) {
	if w.err == nil {
		w.keep(w.e.EncodeString(s))
	}
}

func (w *writer) boolean(b bool) {
	if w.err == nil {
		w.keep(w.e.EncodeBool(b))
	}
}

// int writes a signed integer in the fewest bytes, as reflection writes int,
// and int64 under UseCompactInts.
func (w *writer) int(n int64) {
	if w.err == nil {
		if sabotage == sabotageWideInt {
			w.keep(w.e.EncodeInt64(n))
			return
		}
		w.keep(w.e.EncodeInt(n))
	}
}

// uint writes an unsigned integer in the fewest bytes, as reflection writes
// uint32 and uint64 under UseCompactInts.
func (w *writer) uint(n uint64) {
	if w.err == nil {
		w.keep(w.e.EncodeUint(n))
	}
}

// strs writes a []string as reflection does: nil, or an array of strings.
func (w *writer) strs(s []string) {
	if s == nil {
		w.null()
		return
	}
	w.arrayLen(len(s))
	for _, v := range s {
		w.str(v)
	}
}

// entry is one key and value of a map[string]string being sorted.
type entry struct{ k, v string }

// strMap writes a map[string]string as reflection does under SetSortMapKeys:
// nil, or a map whose keys come in increasing byte order (sort.Strings).
func (w *writer) strMap(m map[string]string) {
	if m == nil {
		if sabotage == sabotageEmptyMap && w.err == nil {
			w.err = w.e.EncodeMapLen(0)
			return
		}
		w.null()
		return
	}
	if w.err == nil {
		w.keep(w.e.EncodeMapLen(len(m)))
	}
	var buf [16]entry // metadata maps are small: sort them on the stack
	es := buf[:0]
	for k, v := range m {
		es = append(es, entry{k, v})
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.k, b.k) })
	if sabotage == sabotageMapOrder {
		slices.Reverse(es)
	}
	for _, e := range es {
		w.str(e.k)
		w.str(e.v)
	}
}

// writable is a message struct with a reflection-free encoder.
type writable[T any] interface {
	*T
	writeTo(w *writer)
}

// writeStructs writes a slice of structs as reflection does: nil, or an array
// of the structs.
func writeStructs[T any, P writable[T]](w *writer, s []T) {
	if s == nil {
		w.null()
		return
	}
	w.arrayLen(len(s))
	for i := range s {
		P(&s[i]).writeTo(w)
	}
}

// readable is a message struct with a reflection-free decoder: decodeField
// decodes the value of its i-th field (in wire order) into it.
type readable[T any] interface {
	*T
	decodeField(d *msgpack.Decoder, i int) error
}

// decodeStruct decodes a struct whose fields are named names, in wire order,
// into *p the way reflection decodes an as_array struct: nil or an empty
// array is the zero value, an array must hold exactly one value per field,
// and a map sets the fields it names (others skipped).
func decodeStruct[T any, P readable[T]](d *msgpack.Decoder, p P, names []string) error {
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case c == codeNil:
		*p = *new(T)
		return d.DecodeNil()
	case c >= codeFixArrayLow && c <= codeFixArrayHi, c == codeArray16, c == codeArray32:
		n, err := d.DecodeArrayLen()
		if err != nil {
			return err
		}
		if n <= 0 {
			*p = *new(T)
			return nil
		}
		if n != len(names) {
			return fmt.Errorf("msgpack: %T has %d fields, array has %d", *p, len(names), n)
		}
		for i := range n {
			if err := p.decodeField(d, i); err != nil {
				return err
			}
		}
		return nil
	case c >= codeFixMapLow && c <= codeFixMapHigh, c == codeMap16, c == codeMap32:
		n, err := d.DecodeMapLen()
		if err != nil {
			return err
		}
		for range n {
			name, err := d.DecodeString()
			if err != nil {
				return err
			}
			if i := slices.Index(names, name); i >= 0 {
				err = p.decodeField(d, i)
			} else {
				err = d.Skip()
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("msgpack: invalid code=%x decoding %T", c, *p)
}

// decodeStructs decodes a slice of structs into *s the way reflection does:
// nil is a nil slice, an empty array an empty one, and elements are decoded
// in place into what *s already holds (relevant only when a map-encoded
// parent repeats the field).
func decodeStructs[T any, P readable[T]](d *msgpack.Decoder, s *[]T, names []string) error {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	v := *s
	switch {
	case n < 0:
		*s = nil
		return nil
	case n == 0 && v == nil:
		*s = []T{}
		return nil
	case v == nil:
		v = make([]T, n)
	case cap(v) >= n:
		v = v[:n]
	default:
		v = append(v[:cap(v)], make([]T, n-cap(v))...)
	}
	*s = v
	for i := range v {
		if err := decodeStruct[T, P](d, &v[i], names); err != nil {
			return err
		}
	}
	return nil
}

// decodePointer decodes a pointer to a struct whose fields are named names
// the way reflection decodes a pointer field: nil sets it to nil, anything
// else is decoded into the existing value or a new one.
func decodePointer[T any, P readable[T]](d *msgpack.Decoder, p **T, names []string) error {
	if c, err := d.PeekCode(); err == nil && c == codeNil {
		*p = nil
		return d.DecodeNil()
	}
	if *p == nil {
		*p = new(T)
	}
	return decodeStruct(d, P(*p), names)
}

// encodeReflect encodes *v with msgpack's reflection (reflectCodec).
func encodeReflect(e *msgpack.Encoder, v any) error {
	return e.EncodeValue(reflect.ValueOf(v).Elem())
}

// decodeReflect decodes into *v with msgpack's reflection (reflectCodec).
func decodeReflect(d *msgpack.Decoder, v any) error {
	return d.DecodeValue(reflect.ValueOf(v).Elem())
}
