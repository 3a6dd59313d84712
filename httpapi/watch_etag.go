package httpapi

// Entity tags of the watchable reads
//
// The ETag of a delta, one-application or VIP read is a hash of the
// document it returns, so that two nodes serving the same content in the
// same format give the same tag and a client can carry its tag from one
// node to another. It is computed from the identity (not gzip) bytes of
// the format: gzip documents are assembled from blocks whose boundaries
// depend on each node's history, so their bytes differ where the content
// does not. The tag is therefore weak (W/"…"): the gzip and identity
// responses of a format share it, as RFC 9110 allows for representations
// that are equivalent.
//
// The delta document carries one node-local value, versions__delta (the
// snapshot's version, bumped on every write and pruning of that node): it
// is left out of the hash. Clients use versions__delta only to tell a
// delta from a full document (-1 or not), so a 304 that keeps an older
// value loses nothing. Nothing else node-local is hashed: no counter,
// no snapshot version, no node name.
//
// Tags are cached per snapshot (at most etagCacheMax per snapshot), so
// repeated reads of an unchanged registry hash nothing; a new snapshot
// starts a new cache.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/sabotage"
)

// resourceKind names a watchable read.
type resourceKind uint8

const (
	resDelta resourceKind = iota
	resApp
	resVIP
	resSVIP
)

// resource is one watchable read: its kind and its name ("" for the
// delta, the upper-case application name, or the VIP address).
type resource struct {
	kind resourceKind
	name string
}

// document returns the identity bytes resource res serves in format f,
// and false when it does not exist (an unknown application).
func (res resource) document(snap *view.Snapshot, f view.Format) ([]byte, bool) {
	switch res.kind {
	case resDelta:
		return snap.Delta(f, false), true
	case resApp:
		return snap.AppDocument(res.name, f, false)
	case resVIP:
		return snap.VIP(res.name, f, false), true
	default:
		return snap.SVIP(res.name, f, false), true
	}
}

// etagKey identifies a tag within one snapshot.
type etagKey struct {
	res resource
	f   view.Format
}

// etagCacheMax bounds the tags cached for one snapshot: past it, tags are
// computed and not kept.
const etagCacheMax = 4096

// etagTable holds the tags computed for one snapshot.
type etagTable struct {
	snap *view.Snapshot
	mu   sync.Mutex
	m    map[etagKey]string
}

// etags caches the tags of the current snapshot.
type etags struct {
	cur atomic.Pointer[etagTable]
}

// of returns the ETag of res in format f as snap serves it, and false
// when res does not exist in snap.
func (e *etags) of(snap *view.Snapshot, res resource, f view.Format) (string, bool) {
	t := e.cur.Load()
	if t == nil || t.snap != snap {
		nt := &etagTable{snap: snap, m: map[etagKey]string{}}
		if e.cur.CompareAndSwap(t, nt) {
			t = nt
		} else if t = e.cur.Load(); t.snap != snap {
			t = nil // another snapshot won the race: compute without caching
		}
	}
	k := etagKey{res: res, f: f}
	if t != nil {
		t.mu.Lock()
		tag, ok := t.m[k]
		t.mu.Unlock()
		if ok {
			return tag, tag != ""
		}
	}
	doc, ok := res.document(snap, f)
	tag := ""
	if ok {
		tag = computeETag(snap, res, doc)
	}
	if t != nil {
		t.mu.Lock()
		if len(t.m) < etagCacheMax {
			t.m[k] = tag
		}
		t.mu.Unlock()
	}
	return tag, ok
}

// computeETag hashes doc, without the delta's versions__delta value.
func computeETag(snap *view.Snapshot, res resource, doc []byte) string {
	h := sha256.New()
	if res.kind == resDelta {
		if i, n := versionDeltaSpan(doc, strconv.FormatUint(snap.Version(), 10)); n > 0 {
			h.Write(doc[:i])
			h.Write(doc[i+n:])
		} else {
			h.Write(doc)
		}
	} else {
		h.Write(doc)
	}
	if sabotage.On(sabotage.PushETagNodeLocal) {
		h.Write(strconv.AppendUint(nil, snap.Version(), 10))
	}
	var sum [sha256.Size]byte
	return formatETag(h.Sum(sum[:0]))
}

// formatETag makes a weak entity tag of the first 128 bits of a digest.
func formatETag(sum []byte) string {
	var b [2 + 1 + 32 + 1]byte
	copy(b[:], `W/"`)
	hex.Encode(b[3:35], sum[:16])
	b[35] = '"'
	return string(b[:])
}

// versionDeltaSpan finds the value ver of versions__delta in the opening
// of an applications document, JSON (`"versions__delta":"7"`) or XML
// (`<versions__delta>7</versions__delta>`), and returns its offset and
// length; n is 0 when it is not where it should be (the hash then covers
// the whole document: still correct on this node, only not comparable
// across nodes).
func versionDeltaSpan(doc []byte, ver string) (i, n int) {
	const field = "versions__delta"
	const maxOpening = 512 // the field comes first in every format
	head := doc[:min(len(doc), maxOpening)]
	at := bytes.Index(head, []byte(field))
	if at < 0 {
		return 0, 0
	}
	at += len(field)
	// Between the name and the value: `":"` in JSON, `>` in XML.
	for k := 0; k < 4 && at+k < len(head); k++ {
		if bytes.HasPrefix(head[at+k:], []byte(ver)) {
			end := at + k + len(ver)
			if end < len(head) && head[end] >= '0' && head[end] <= '9' {
				return 0, 0 // a longer number: not our value
			}
			return at + k, len(ver)
		}
	}
	return 0, 0
}

// matchETag reports whether an If-None-Match header value lists tag
// (weak comparison, RFC 9110 §13.1.2) or is "*".
func matchETag(header, tag string) bool {
	weak := func(s string) string {
		if len(s) > 2 && s[0] == 'W' && s[1] == '/' {
			return s[2:]
		}
		return s
	}
	want := weak(tag)
	for header != "" {
		var item string
		item, header, _ = strings.Cut(header, ",")
		switch item = strings.TrimSpace(item); item {
		case "":
		case "*":
			return true
		default:
			if weak(item) == want {
				return true
			}
		}
	}
	return false
}
