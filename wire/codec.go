package wire

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Errors returned by Encode and Decode. Decode wraps them with details, so
// test with errors.Is.
var (
	// ErrVersion means the frame was written in a version this build does
	// not speak (outside MinProtocolVersion..ProtocolVersion), or Encode
	// was asked for one; the error text carries the version seen.
	ErrVersion = errors.New("wire: unsupported protocol version")
	// ErrUnknownType means the frame's type tag is not one this build knows.
	ErrUnknownType = errors.New("wire: unknown message type")
	// ErrTruncated means the input is too short to hold a frame header or
	// its body ends before the last value does.
	ErrTruncated = errors.New("wire: truncated message")
	// ErrMalformed means the body is not a well-formed encoding of the
	// message its tag names.
	ErrMalformed = errors.New("wire: malformed message")
	// ErrNilMessage means Encode was given a nil Message.
	ErrNilMessage = errors.New("wire: nil message")
)

// headerLen is the frame header: version byte and type tag.
const headerLen = 2

// maxDepth bounds how deeply containers may nest in a body. Our deepest value
// (Records → records → record → instance → data center → metadata map) nests
// six deep; anything much deeper is garbage or an attack on the decoder.
const maxDepth = 16

// Encoders and decoders are pooled privately (not via msgpack.GetEncoder) so
// that the options set here cannot leak to, or be changed by, other users of
// msgpack's shared pools.
var (
	encPool = sync.Pool{New: func() any {
		e := msgpack.NewEncoder(nil)
		// Compact ints: ports, counts and lease seconds take 1–3 bytes
		// instead of 9. Sorted map keys: a message always encodes to the
		// same bytes, which keeps digests and tests stable.
		e.UseCompactInts(true)
		e.SetSortMapKeys(true)
		return e
	}}
	decPool = sync.Pool{New: func() any { return msgpack.NewDecoder(nil) }}
	// Frames are built in pooled buffers and copied out at their exact
	// size: a buffer grown to a large batch keeps its size, where a fresh
	// one would double a dozen times per message.
	bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// maxPooledBuf is the largest buffer put back in bufPool: one huge message
// must not pin its buffer for good.
const maxPooledBuf = 1 << 20

// Encode returns the frame of m in ProtocolVersion: version byte, type tag,
// msgpack body.
func Encode(m Message) ([]byte, error) { return EncodeVersion(m, ProtocolVersion) }

// EncodeVersion returns the frame of m in version v, which must be one this
// build speaks (Supported): a peer that speaks only an older version gets
// the message as that version framed it. It returns ErrVersion for another
// v, and ErrUnknownType for a message that version does not have (a
// Handoff in version 3).
func EncodeVersion(m Message, v uint8) ([]byte, error) {
	if err := checkMessage(m); err != nil {
		return nil, err
	}
	if !Supported(v) {
		return nil, fmt.Errorf("%w: encode in %d, this build speaks %d to %d", ErrVersion, v, MinProtocolVersion, ProtocolVersion)
	}
	t := m.Type()
	if v < t.Since() {
		return nil, fmt.Errorf("%w: %s in version %d", ErrUnknownType, t, v)
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	buf.WriteByte(v)
	buf.WriteByte(byte(t))
	enc := encPool.Get().(*msgpack.Encoder)
	enc.ResetWriter(buf) // not Reset: it would clear the options set in encPool
	err := enc.Encode(bodyAt(m, v))
	enc.ResetWriter(nil)
	encPool.Put(enc)
	var frame []byte
	if err == nil {
		frame = bytes.Clone(buf.Bytes())
	}
	if buf.Cap() <= maxPooledBuf {
		bufPool.Put(buf)
	}
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", t, err)
	}
	return frame, nil
}

// Decode parses one frame produced by Encode or EncodeVersion, of any version
// this build speaks (a field a version lacks is left zero, which the
// receiver reads as "unknown"). It returns ErrVersion for a frame of
// another protocol version, ErrUnknownType for an unknown tag and
// ErrTruncated or ErrMalformed for input that is not a whole, well-formed
// message; it never panics and never returns a partially decoded message.
func Decode(b []byte) (Message, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes, want at least %d", ErrTruncated, len(b), headerLen)
	}
	if !Supported(b[0]) {
		return nil, fmt.Errorf("%w: got %d, want %d to %d", ErrVersion, b[0], MinProtocolVersion, ProtocolVersion)
	}
	t := Type(b[1])
	m := newMessage(t)
	if m == nil || b[0] < t.Since() {
		return nil, fmt.Errorf("%w: tag %d in version %d", ErrUnknownType, b[1], b[0])
	}
	body := b[headerLen:]
	if err := checkBody(body); err != nil {
		return nil, fmt.Errorf("decode %s: %w", t, err)
	}
	dec := decPool.Get().(*msgpack.Decoder)
	dec.Reset(bytes.NewReader(body))
	err := dec.Decode(bodyAt(m, b[0]))
	dec.Reset(nil)
	decPool.Put(dec)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, t, err)
	}
	return m, nil
}

// FrameVersion returns the version byte of a frame (false for an empty one),
// so that an answer can go back in the version its question came in.
func FrameVersion(b []byte) (uint8, bool) {
	if len(b) == 0 {
		return 0, false
	}
	return b[0], true
}

// bodyAt returns what encodes or decodes m's body as version v framed it:
// m itself, or a view of it with the fields of an older version (a Load
// without Alive before version 5; views.go).
func bodyAt(m Message, v uint8) any {
	if l, ok := m.(*Load); ok && v < 5 {
		return (*loadV4)(l)
	}
	return m
}

// newMessage returns a zero message of type t, or nil if t is unknown.
func newMessage(t Type) Message {
	switch t {
	case TypeRecords:
		return new(Records)
	case TypeRenewals:
		return new(Renewals)
	case TypeDigest:
		return new(Digest)
	case TypeSyncRequest:
		return new(SyncRequest)
	case TypeLoad:
		return new(Load)
	case TypeHandoff:
		return new(Handoff)
	}
	return nil
}

// checkMessage accepts only this package's message types, non-nil: a foreign
// type that merely returns one of our tags would otherwise be framed as
// something a peer cannot read back.
func checkMessage(m Message) error {
	var isNil bool
	switch v := m.(type) {
	case nil:
		isNil = true
	case *Records:
		isNil = v == nil
	case *Renewals:
		isNil = v == nil
	case *Digest:
		isNil = v == nil
	case *SyncRequest:
		isNil = v == nil
	case *Load:
		isNil = v == nil
	case *Handoff:
		isNil = v == nil
	default:
		return fmt.Errorf("%w: %T", ErrUnknownType, m)
	}
	if isNil {
		return ErrNilMessage
	}
	return nil
}

// DecodeState decodes a memberlist push/pull state: a Digest frame. A
// node writes its state before it knows who reads it, and the previous
// release wrote it in the lowest version it speaks, one below
// MinProtocolVersion. A Digest's body has not changed since version 3, so
// a Digest frame of that version is read as MinProtocolVersion; anything
// else decodes as Decode does.
func DecodeState(b []byte) (Message, error) {
	if len(b) >= headerLen && b[0] == MinProtocolVersion-1 && b[0] >= 3 && Type(b[1]) == TypeDigest {
		c := bytes.Clone(b)
		c[0] = MinProtocolVersion
		return Decode(c)
	}
	return Decode(b)
}
