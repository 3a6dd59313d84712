package wire

// Views of message structs as an older protocol version framed them
// (bodyAt picks one by the frame's version). Each is the struct itself
// under another name, with methods that write and read only the fields
// that version had; a field it lacks decodes as its zero value, which
// receivers read as "unknown".

import "github.com/vmihailenco/msgpack/v5"

// loadV4 is a Load as version 4 framed it: without Alive.
type loadV4 Load

// loadV4Fields names the fields of a version-4 Load, in wire order.
var loadV4Fields = loadFields[:6]

// EncodeMsgpack implements msgpack.CustomEncoder.
func (m *loadV4) EncodeMsgpack(e *msgpack.Encoder) error {
	w := writer{e: e}
	m.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (m *loadV4) DecodeMsgpack(d *msgpack.Decoder) error {
	return decodeStruct(d, m, loadV4Fields)
}

// writeTo encodes m as the array of its version-4 fields.
func (m *loadV4) writeTo(w *writer) {
	w.arrayLen(len(loadV4Fields))
	w.str(m.Node)
	w.int(m.WindowMillis)
	w.int(m.Renewals)
	w.int(m.Expected)
	w.boolean(m.Engaged)
	w.str(m.Reason)
}

// decodeField decodes version-4 field i of m: the first fields of a Load,
// in the same order.
func (m *loadV4) decodeField(d *msgpack.Decoder, i int) error {
	return (*Load)(m).decodeField(d, i)
}
