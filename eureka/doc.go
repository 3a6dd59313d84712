// Package eureka owns Eureka's document formats: the JSON and XML documents
// (full and compact) that the view caches and serves, the single-instance
// document, the lenient decoding of registration bodies, and the peer
// replication batch format (a Java peer's batch and the answer to it). It
// knows nothing of HTTP: the HTTP API (package httpapi), the replication to
// Eureka peers (package eurekapeer) and the benchmarks and simulations call
// it with bytes and a Content-Type, and get bytes or an instance back.
//
// Encoding is the hot path: every registry change re-encodes the changed
// application in four formats. The encoders (Encoders, handed to the view)
// are therefore hand-written appenders that write straight into the
// caller's buffer, with no reflection and, for maps of up to 16 keys, no
// allocation. They reproduce Eureka's exact shapes (key order, JSON strings
// where Jackson writes strings, XStream element names) because real clients
// insist on them: fargo, for example, rejects a JSON boolean "@enabled" and
// panics on a whitespace-only <metadata> element.
//
// Decoding runs once per registration and favours leniency over speed: it
// goes through encoding/json (numbers kept as text) and the encoding/xml
// token stream, and accepts every shape real clients are known to send (see
// DecodeInstance). JSON bodies, the common case, are read first by a
// one-pass decoder of the usual shape (json_decode_direct.go), then by
// fastjson's pooled parser under the same rules (json_decode_fast.go),
// falling back to encoding/json (json_decode.go) wherever they could differ.
//
// The files are named for what they hold: instance.go (what encoders and
// decoders agree on about an instance), encoders.go (the view's encoders and
// the single-instance document), json_encode.go, xml_encode.go and
// compact.go (the document shapes), decode.go (DecodeInstance, media types,
// charsets and the errors), json_decode.go, json_decode_fast.go,
// json_decode_direct.go and xml_decode.go (the register body decoders), and
// replication.go (the peer replication batch).
package eureka
