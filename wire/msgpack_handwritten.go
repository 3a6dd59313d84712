package wire

// The msgpack methods that stay hand-written: msgpackgen generates every
// method of the message structs (msgpack_methods_gen.go) except those
// declared here, which hold logic a struct's field list cannot express.

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
