// Package wire defines the messages heureka nodes send each other and their
// binary encoding. It imports no other heureka package: the cluster package
// converts between these DTOs and the registry's own types, so the wire format
// can stay fixed while the registry's types change.
//
// # Frame
//
// Every encoded message is one frame:
//
//	byte 0     the protocol version the frame is written in
//	byte 1     message Type tag
//	bytes 2..  msgpack body of the message struct
//
// Decode refuses a frame whose version byte is not one this build speaks
// (ErrVersion) or whose tag it does not know (ErrUnknownType) before it
// looks at the body, so a node never misreads a peer: it drops the message
// and logs, and the cluster layer refuses peers that share no version with
// it at join time.
//
// # Compatibility
//
// Each release talks to the previous one. A build speaks every version from
// MinProtocolVersion (the previous release's ProtocolVersion) to
// ProtocolVersion: it decodes frames of either, and writes each peer's frames
// in the highest version both know (Common, EncodeVersion), so a cluster can
// be upgraded, or rolled back, one node at a time. A field that a version
// lacks decodes as its zero value, which receivers must read as "unknown"
// (a version-2 Records has no SentAt: the receiver does not shift the
// records' times by the clock difference, as with a sender that did not
// say). Two releases apart share no version and refuse each other: upgrade
// through every release in turn.
//
// A protocol bump therefore means: raise ProtocolVersion, set
// MinProtocolVersion to the old one, keep a view of each changed struct as
// the old version framed it (a view type chosen by bodyAt), drop the views of
// the version that falls out of range, and keep the old version's frames,
// written by the old commit's encoder, in testdata/v<old> (the golden-frame
// test decodes them and re-encodes them byte for byte). The upgrade test
// (`make upgrade-test`) then runs the old and new binaries together. A new
// message type is a bump too: its tag is known from its version on
// (Type.Since), a frame of an older version with that tag is refused, and
// senders write it only to peers that speak that version (version 4 added
// Handoff; version 3 peers are simply not sent one).
//
// A memberlist push/pull state (a Digest) is written before its reader is
// known: a node writes it in the oldest version every alive member reads
// (cluster's LowestProtocol), and the release before this one wrote it in
// its own lowest version, one below MinProtocolVersion, which DecodeState
// reads (a Digest's body has not changed since version 3).
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
// exactly as its version byte says or is refused, never read with fields
// shifted; version negotiation (see Compatibility) is what lets nodes of
// two releases read each other, not leniency in the decoder.
//
// The structs do not go through msgpack's reflection: each implements
// msgpack.CustomEncoder and CustomDecoder with methods generated from its
// definition (msgpack_methods_gen.go, written by internal/msgpackgen; rules
// in msgpack_codec.go; the few kept by hand in msgpack_handwritten.go), which
// encodes a record batch in less than half the time and decodes it in about
// two thirds. The methods write exactly the bytes reflection wrote for the
// struct tags, and accept and refuse exactly what it accepted and refused;
// the tests hold them to that against msgpack's reflection on method-less
// copies of the types, and fail when a field is added to a struct but not to
// its methods. So a change to a struct means running `go generate ./wire/`
// (and checking msgpack_handwritten.go) as well as a new ProtocolVersion.
// msgpack_methods_gen.go is the package's one file over ~900 lines: it is
// generated, one run of methods per struct, and read by no one.
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
