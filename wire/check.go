package wire

import (
	"encoding/binary"
	"fmt"
)

// checkBody verifies that b holds exactly one well-formed msgpack value
// before the decoder sees it.
//
// Why: msgpack (and the hand-written decoders in msgpack_codec.go, which
// follow it) sizes slices from the length a header declares, so a 5-byte
// body claiming 2^32 records would make it allocate gigabytes (an
// out-of-memory crash, which recover cannot catch). Here every container must
// declare no more elements than there are bytes left to hold them (each
// element takes at least one byte), every string/binary/extension must fit in
// the input, nesting is bounded by maxDepth and nothing may trail the value.
// The walk allocates nothing and is linear in len(b).
func checkBody(b []byte) error {
	n, err := skipValue(b, 0)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b)-n)
	}
	return nil
}

// skipValue returns the length of the msgpack value at the start of b.
func skipValue(b []byte, depth int) (int, error) {
	if len(b) == 0 {
		return 0, ErrTruncated
	}
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: nested deeper than %d", ErrMalformed, maxDepth)
	}
	c := b[0]
	switch {
	case c <= 0x7f, c >= 0xe0: // positive and negative fixint
		return 1, nil
	case c <= 0x8f: // fixmap
		return skipContainer(b, 1, int(c&0x0f), 2, depth)
	case c <= 0x9f: // fixarray
		return skipContainer(b, 1, int(c&0x0f), 1, depth)
	case c <= 0xbf: // fixstr
		return skipBytes(b, 1, int(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return 1, nil
	case 0xc4, 0xd9: // bin8, str8
		return skipSized(b, 1, 0)
	case 0xc5, 0xda: // bin16, str16
		return skipSized(b, 2, 0)
	case 0xc6, 0xdb: // bin32, str32
		return skipSized(b, 4, 0)
	case 0xc7: // ext8: length, type, data
		return skipSized(b, 1, 1)
	case 0xc8: // ext16
		return skipSized(b, 2, 1)
	case 0xc9: // ext32
		return skipSized(b, 4, 1)
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return skipBytes(b, 1, 4)
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return skipBytes(b, 1, 8)
	case 0xcc, 0xd0: // uint8, int8
		return skipBytes(b, 1, 1)
	case 0xcd, 0xd1: // uint16, int16
		return skipBytes(b, 1, 2)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: type + data
		return skipBytes(b, 1, 1+1<<(c-0xd4))
	case 0xdc: // array16
		return skipCounted(b, 2, 1, depth)
	case 0xdd: // array32
		return skipCounted(b, 4, 1, depth)
	case 0xde: // map16
		return skipCounted(b, 2, 2, depth)
	case 0xdf: // map32
		return skipCounted(b, 4, 2, depth)
	}
	// 0xc1 is reserved: never valid.
	return 0, fmt.Errorf("%w: invalid code 0x%02x", ErrMalformed, c)
}

// readLen reads a big-endian length of size 1, 2 or 4 bytes at b[off:].
func readLen(b []byte, off, size int) (int, bool) {
	if len(b) < off+size {
		return 0, false
	}
	switch size {
	case 1:
		return int(b[off]), true
	case 2:
		return int(binary.BigEndian.Uint16(b[off:])), true
	default:
		return int(binary.BigEndian.Uint32(b[off:])), true
	}
}

// skipBytes checks that a value of head bytes of header plus n bytes of
// payload fits in b and returns its length.
func skipBytes(b []byte, head, n int) (int, error) {
	if n > len(b)-head {
		return 0, ErrTruncated
	}
	return head + n, nil
}

// skipSized handles str/bin/ext values: a code byte, a length of lenSize
// bytes, extra header bytes (the ext type) and the payload.
func skipSized(b []byte, lenSize, extra int) (int, error) {
	n, ok := readLen(b, 1, lenSize)
	if !ok {
		return 0, ErrTruncated
	}
	return skipBytes(b, 1+lenSize+extra, n)
}

// skipCounted handles array16/32 and map16/32: a code byte and a count of
// lenSize bytes; per is 1 for arrays, 2 for maps (values per entry).
func skipCounted(b []byte, lenSize, per, depth int) (int, error) {
	n, ok := readLen(b, 1, lenSize)
	if !ok {
		return 0, ErrTruncated
	}
	return skipContainer(b, 1+lenSize, n, per, depth)
}

// skipContainer walks the n entries (per values each) of a container whose
// header is head bytes long.
func skipContainer(b []byte, head, n, per, depth int) (int, error) {
	values := n * per
	if values > len(b)-head {
		// Each value takes at least one byte, so the header lies.
		return 0, fmt.Errorf("%w: container of %d values in %d bytes", ErrTruncated, values, len(b)-head)
	}
	off := head
	for range values {
		k, err := skipValue(b[off:], depth+1)
		if err != nil {
			return 0, err
		}
		off += k
	}
	return off, nil
}
