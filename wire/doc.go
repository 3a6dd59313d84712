// Package wire defines the messages heureka nodes send each other and their
// binary encoding. It imports no other heureka package: the cluster package
// converts between these DTOs and the registry's own types, so the wire format
// can stay fixed while the registry's types change.
//
// # Frame
//
// Every encoded message is one frame:
//
//	byte 0     ProtocolVersion of the sender
//	byte 1     message Type tag
//	bytes 2..  msgpack body of the message struct
//
// Decode refuses a frame whose version byte is not ProtocolVersion (ErrVersion)
// or whose tag it does not know (ErrUnknownType) before it looks at the body,
// so a node never misreads a peer that speaks another protocol: it drops the
// message and logs, and the cluster layer refuses such peers at join time.
//
// # Body encoding
//
// Structs are encoded as msgpack arrays (the `msgpack:",as_array"` tag), not
// as maps keyed by field name. A record of ~35 fields would otherwise carry
// ~400 bytes of field names; as arrays it carries none, which roughly halves
// the size of a record batch. The price is that field order is the format and
// the decoder requires the exact field count: adding, removing or reordering a
// field of any struct in this package is a wire change and must bump
// ProtocolVersion. That strictness is deliberate: a frame either decodes
// exactly or is refused, never read with fields shifted.
//
// The structs do not go through msgpack's reflection: each implements
// msgpack.CustomEncoder and CustomDecoder by hand (msgpack_methods.go, rules
// in msgpack_codec.go), which encodes a record batch in less than half the
// time and decodes it in about two thirds. The methods write exactly the bytes
// reflection wrote for the struct tags, and accept and refuse exactly what it
// accepted and refused; the tests hold them to that against msgpack's
// reflection on method-less copies of the types, and fail when a field is
// added to a struct but not to its methods. So a change to a struct means a
// change to its methods as well as a new ProtocolVersion.
//
// Before msgpack sees a body, Decode checks its structure (lengths within the
// input, bounded nesting, nothing trailing), so hostile or corrupt input
// returns an error without panicking or allocating more than a small multiple
// of its own size.
//
// # Concurrency
//
// Encode and Decode are safe for concurrent use. Decoded messages share no
// memory with the input frame.
package wire
