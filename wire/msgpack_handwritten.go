package wire

import "github.com/vmihailenco/msgpack/v5"

// The msgpack methods that stay hand-written: msgpackgen generates every
// method of the message structs (msgpack_methods_gen.go) except those
// declared here, which hold logic a struct's field list cannot express.

// recordsV2 is Records as version 2 framed it: Records and Done, no SentAt
// (a field added in version 3). Decode and EncodeVersion use it for
// version-2 frames (bodyAt). Written by hand: it is a view of an older
// version, not a struct of msg.go, and it goes when version 2 falls out of
// range (see "Compatibility" in the package doc).
type recordsV2 Records

// recordsV2Fields is how many of recordsFields version 2 has.
const recordsV2Fields = 2

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r recordsV2) EncodeMsgpack(e *msgpack.Encoder) error {
	w := writer{e: e}
	w.arrayLen(recordsV2Fields)
	writeStructs(&w, r.Records)
	w.strs(r.Done)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *recordsV2) DecodeMsgpack(d *msgpack.Decoder) error {
	return decodeStruct(d, r, recordsFields[:recordsV2Fields])
}

// decodeField decodes field i of r (readable).
func (r *recordsV2) decodeField(d *msgpack.Decoder, i int) error {
	return (*Records)(r).decodeField(d, i)
}

// writeTo encodes v as the array of its fields. Written by hand for the
// tests' sabotageSwapFields, which must write the fields out of order to
// prove the byte and value comparisons catch it; the rest of RecordVersion's
// methods are generated.
func (v *RecordVersion) writeTo(w *writer) {
	w.arrayLen(len(recordVersionFields))
	if sabotage == sabotageSwapFields {
		w.str(v.Node)
		w.uint(v.Clock)
		w.str(v.ID)
		return
	}
	w.str(v.ID)
	w.uint(v.Clock)
	w.str(v.Node)
}
