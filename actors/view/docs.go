package view

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/benbjohnson/immutable"

	"github.com/heureka/heureka/actors"
)

// docCache holds a snapshot's whole documents, built on first use.
type docCache struct {
	full, delta [NumFormats]lazy     // plain documents
	gz          [2][NumFormats]gzDoc // gzip documents: docFull, docDelta
	vips, svips sync.Map             // name, format, gzip → *lazy
	// blocks are the gzip blocks and spans the full document (docFull)
	// and the delta (docDelta) were assembled from, per format, once
	// built: the snapshots derived from this one reuse those still the
	// same.
	blocks [2][NumFormats]atomic.Pointer[gzLayout]
}

// The documents assembled from gzip blocks.
const (
	docFull = iota
	docDelta
)

func newDocCache() *docCache { return &docCache{} }

// FullVersionDelta is the versions__delta of a full registry document: any
// value other than -1 makes Java clients use deltas afterwards.
const FullVersionDelta = "1"

// appsPlain builds an applications document in format f from apps'
// cached instance bytes: one pass to size it (encoding the instances that
// are not yet), one to copy.
func appsPlain(enc Encoder, f Format, apps btree[*App], versionDelta, hashcode string) []byte {
	size := 256
	for a := range apps.All() {
		n := a.plainLen(f)
		if n < 0 {
			for p := range a.pieces.All() {
				p.bytes(enc, f)
			}
			n = a.plainLen(f)
		}
		size += n + 2*len(a.name) + 64 + a.pieces.Len()
	}
	out := make([]byte, 0, size)
	out = enc.AppendApplicationsOpen(out, versionDelta, hashcode)
	first := true
	for a := range apps.All() {
		if !first {
			out = enc.AppendApplicationsSeparator(out)
		}
		first = false
		out = appendElement(out, enc, f, a.name, a.pieces.All())
	}
	return enc.AppendApplicationsClose(out)
}

// gzBlock is one leaf of a tree of applications (btree) as one gzip
// piece: its application elements, each but the document's first preceded
// by the applications separator.
type gzBlock struct {
	first bool
	apps  []*App // the leaf's
	z     gzPiece
}

// gzSpan is a run of consecutive blocks joined into one piece: a
// document is written as its spans, parts large enough to go to the
// connection without being gathered into a buffer first, so a read copies
// nothing, and a write joins again only the span whose block changed.
type gzSpan struct {
	ids []*byte // the first deflated byte of each block's piece, in order
	z   gzPiece
}

// gzLayout is how a gzip document was assembled: its blocks and spans.
type gzLayout struct {
	blocks []gzBlock
	spans  []gzSpan
}

// spanMin is the least size of a span but a document's last: a part of at
// least one Body.WriteTo span goes to the connection without a copy. (A
// variable so that tests can make spans of small documents.)
var spanMin = writeSpan

// blockID identifies a block's piece across snapshots (a reused block
// keeps its piece).
func blockID(b *gzBlock) *byte { return unsafe.SliceData(b.z.deflated) }

// spansOf groups blocks into spans, reusing old's spans whose blocks are
// all the same; a document of less than two spans' least size keeps its
// blocks as they are. A span holds at least min deflated bytes (spanMin, or a
// 64th of a large document, so that it is written in at most about 64
// parts), and ends after the first block past that whose first
// application's name hashes to k-1 modulo k, a power of two chosen from the
// average block's size (so that a span runs on past min by an eighth to a
// quarter of min on average): the boundaries
// follow the blocks' own names rather than their positions, so a block
// inserted or removed moves the boundaries of its own span and at most the
// next, and only those are joined again.
func spansOf(blocks []gzBlock, old *gzLayout) []gzSpan {
	if len(blocks) == 0 {
		return nil
	}
	total := 0
	for i := range blocks {
		total += len(blocks[i].z.deflated)
	}
	least := max(spanMin, total/64)
	if total < 2*least {
		// Too small to split: each block is a part of its own, gathered
		// into one write by Body.WriteTo, and nothing is joined.
		spans := make([]gzSpan, len(blocks))
		for i := range blocks {
			spans[i] = gzSpan{ids: []*byte{blockID(&blocks[i])}, z: blocks[i].z}
		}
		return spans
	}
	k := uint64(1)
	for avg := uint64(max(total/len(blocks), 1)); k*avg*2 <= uint64(least/2); {
		k *= 2
	}
	var prev map[*byte]*gzSpan // by the first block's id
	if old != nil {
		prev = make(map[*byte]*gzSpan, len(old.spans))
		for i := range old.spans {
			prev[old.spans[i].ids[0]] = &old.spans[i]
		}
	}
	spans := make([]gzSpan, 0, total/least+1)
	start, size := 0, 0
	for i := range blocks {
		size += len(blocks[i].z.deflated)
		if i < len(blocks)-1 && (size < least || nameHash(blocks[i].apps[0].name)%k != k-1) {
			continue
		}
		size = 0
		run := blocks[start : i+1]
		start = i + 1
		if o := prev[blockID(&run[0])]; o != nil && len(o.ids) == len(run) && sameBlocks(o.ids, run) {
			spans = append(spans, *o)
			continue
		}
		sp := gzSpan{ids: make([]*byte, len(run))}
		pieces := make([]gzPiece, len(run))
		for j := range run {
			sp.ids[j] = blockID(&run[j])
			pieces[j] = run[j].z
		}
		sp.z = joinPieces(pieces)
		spans = append(spans, sp)
	}
	return spans
}

// sameBlocks reports whether run's blocks are those of ids, in order.
func sameBlocks(ids []*byte, run []gzBlock) bool {
	for j := range run {
		if ids[j] != blockID(&run[j]) {
			return false
		}
	}
	return true
}

// nameHash is FNV-1a of name.
func nameHash(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}

// appsGzip builds a gzipped applications document in format f from apps'
// gzip chunks, joined into one block per leaf of apps and the blocks into
// spans (spansOf): the blocks and spans of old (those of the snapshot this
// one derives from) that are still the same are reused, so after a write
// one block and one span are joined again and the document is assembled
// from a walk over the leaves. It returns the document as parts (see
// gzipParts) and its layout.
func appsGzip(enc Encoder, f Format, apps btree[*App], versionDelta, hashcode string, old *gzLayout) ([][]byte, gzLayout) {
	var prev map[**App]*gzBlock // by the leaf's first element
	if old != nil {
		prev = make(map[**App]*gzBlock, len(old.blocks))
		for i := range old.blocks {
			if b := &old.blocks[i]; len(b.apps) > 0 {
				prev[&b.apps[0]] = b
			}
		}
	}
	var sepPiece gzPiece
	sep := enc.AppendApplicationsSeparator(nil)
	if len(sep) > 0 {
		sepPiece = compressedConst(string(sep))
	}
	blocks := make([]gzBlock, 0, apps.Len()/appShape.min+1)
	for lf := range apps.leaves() {
		b := gzBlock{first: len(blocks) == 0, apps: lf}
		if o := prev[&lf[0]]; o != nil && o.first == b.first && len(o.apps) == len(b.apps) {
			b.z = o.z
		} else {
			pieces := make([]gzPiece, 0, 2*len(b.apps))
			for j, a := range b.apps {
				if (j > 0 || !b.first) && len(sep) > 0 {
					pieces = append(pieces, sepPiece)
				}
				pieces = a.appendGzElement(pieces, enc, f)
			}
			b.z = joinPieces(pieces)
		}
		blocks = append(blocks, b)
	}
	spans := spansOf(blocks, old)
	pieces := make([]gzPiece, 0, len(spans)+2)
	pieces = append(pieces, storedPiece(enc.AppendApplicationsOpen(nil, versionDelta, hashcode)))
	for _, sp := range spans {
		pieces = append(pieces, sp.z)
	}
	pieces = append(pieces, compressedConst(string(enc.AppendApplicationsClose(nil))))
	return gzipParts(pieces), gzLayout{blocks: blocks, spans: spans}
}

// gzipDoc returns s's gzip document of kind (docFull or docDelta) in format
// f, built once: from blocks reused from the snapshot s derives from where
// they are unchanged, keeping its blocks for the snapshots derived from s.
func (s *Snapshot) gzipDoc(kind int, f Format) *gzDoc {
	d := &s.docs().gz[kind][f]
	d.once.Do(func() {
		apps, versionDelta := s.apps, FullVersionDelta
		if kind == docDelta {
			apps, versionDelta = s.delta, strconv.FormatUint(s.version, 10)
		}
		parts, layout := appsGzip(s.enc[f], f, apps, versionDelta, s.HashCode(), s.reuse[kind][f].Load())
		d.parts = parts
		for _, p := range parts {
			d.size += len(p)
		}
		s.docs().blocks[kind][f].Store(&layout)
		s.reuse[kind][f].Store(nil)
	})
	return d
}

// gzDoc is a gzip document as its parts (header, spans, close, trailer),
// and joined into one slice when Full or Delta asks for its bytes.
type gzDoc struct {
	once  sync.Once
	parts [][]byte
	size  int
	whole lazy
}

// bytes returns the document in one slice, joined once.
func (d *gzDoc) bytes() []byte {
	return d.whole.get(func() []byte {
		out := make([]byte, 0, d.size)
		for _, p := range d.parts {
			out = append(out, p...)
		}
		return out
	})
}

// body returns the document to write: its parts (a header, the spans,
// the close and the trailer), or one slice once Full or Delta joined them.
// Spans aim at writeSpan or more (a 32nd of a large document), so most are
// written without a copy: a read of a snapshot that a write replaces at
// once, as under churn, copies little, and no read allocates a joined copy
// of the document.
func (d *gzDoc) body() Body {
	if !d.whole.done.Load() {
		return Body{parts: d.parts, size: d.size}
	}
	b := d.bytes()
	return Body{parts: [][]byte{b}, size: len(b)}
}

// Body is a prepared response body, in one or several parts. Its bytes
// belong to the snapshot: they must not be modified.
type Body struct {
	parts [][]byte
	size  int
}

// bodyOf returns b as a Body.
func bodyOf(b []byte) Body { return Body{parts: [][]byte{b}, size: len(b)} }

// Len returns the body's length in bytes.
func (b Body) Len() int { return b.size }

// WriteTo writes the body's parts to w in order. Parts are gathered into
// writes of at least writeSpan bytes (through a pooled buffer), so a body
// of many small parts costs as few writes, and system calls, as one slice:
// a response writer passes a large write straight to the connection, but
// copies small ones into a buffer of a few kilobytes and flushes each time
// it fills.
func (b Body) WriteTo(w io.Writer) (int64, error) {
	if len(b.parts) == 1 {
		m, err := w.Write(b.parts[0])
		return int64(m), err
	}
	buf := writeBufs.Get().(*[]byte)
	defer writeBufs.Put(buf)
	var n int64
	flush := func() error {
		m, err := w.Write(*buf)
		n += int64(m)
		*buf = (*buf)[:0]
		return err
	}
	*buf = (*buf)[:0]
	for _, p := range b.parts {
		if len(p) >= writeSpan { // large enough alone: no copy
			if len(*buf) > 0 {
				if err := flush(); err != nil {
					return n, err
				}
			}
			m, err := w.Write(p)
			n += int64(m)
			if err != nil {
				return n, err
			}
			continue
		}
		*buf = append(*buf, p...)
		if len(*buf) >= writeSpan {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if len(*buf) > 0 {
		if err := flush(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// writeSpan is the least a write of Body.WriteTo carries (but the last).
const writeSpan = 64 << 10

// writeBufs are Body.WriteTo's gathering buffers.
var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2*writeSpan); return &b }}

// Full returns the full registry document (GET apps) in format f, gzipped
// if gz, built once per snapshot (on first use) from the applications'
// cached pieces. Applications without instances are omitted.
func (s *Snapshot) Full(f Format, gz bool) []byte {
	if gz {
		return s.gzipDoc(docFull, f).bytes()
	}
	return s.docs().full[f].get(func() []byte {
		return appsPlain(s.enc[f], f, s.apps, FullVersionDelta, s.HashCode())
	})
}

// FullBody is Full as a response body: a gzip document is written from its
// parts on its first read (see gzDoc.body).
func (s *Snapshot) FullBody(f Format, gz bool) Body {
	if gz {
		return s.gzipDoc(docFull, f).body()
	}
	return bodyOf(s.Full(f, false))
}

// AppDocument returns the document of one application (GET apps/{app}) and
// whether the application exists.
func (s *Snapshot) AppDocument(name string, f Format, gz bool) ([]byte, bool) {
	a := s.App(name)
	if a == nil {
		return nil, false
	}
	return a.Document(s.enc[f], f, gz), true
}

// Delta returns the delta document (GET apps/delta): every instance changed
// within the retention window, once, in its latest state, applications by
// name and instances by id; versions__delta is the snapshot version and
// apps__hashcode is the full registry's. It is built once per snapshot from
// the delta's applications, whose instance bytes and gzip pieces are cached
// like the registry's (and shared with it), so after a change only the
// changed application's part of the delta is encoded and compressed.
func (s *Snapshot) Delta(f Format, gz bool) []byte {
	if gz {
		return s.gzipDoc(docDelta, f).bytes()
	}
	return s.docs().delta[f].get(func() []byte {
		return appsPlain(s.enc[f], f, s.delta, strconv.FormatUint(s.version, 10), s.HashCode())
	})
}

// DeltaBody is Delta as a response body: a gzip document is written from
// its parts on its first read (see gzDoc.body).
func (s *Snapshot) DeltaBody(f Format, gz bool) Body {
	if gz {
		return s.gzipDoc(docDelta, f).body()
	}
	return bodyOf(s.Delta(f, false))
}

// DeltaLen returns the number of instances the delta shows: each instance
// changed within the retention, once.
func (s *Snapshot) DeltaLen() int { return s.deltaN }

// DeltaHeldBytes returns the estimate of what the delta holds beyond the
// registry that Config.DeltaMaxBytes bounds.
func (s *Snapshot) DeltaHeldBytes() int64 { return s.deltaHeld }

// VIPVersionDelta is the versions__delta Eureka sends in VIP documents.
const VIPVersionDelta = "-1"

// VIP returns the document of the instances whose vipAddress lists vip
// (GET vips/{vip}); an unknown VIP gives an empty document.
func (s *Snapshot) VIP(vip string, f Format, gz bool) []byte {
	g, _ := s.vips.Get(vip)
	return s.groupDocument(&s.docs().vips, g, vipOf, vip, f, gz)
}

// SVIP is VIP for secureVipAddress (GET svips/{svip}).
func (s *Snapshot) SVIP(svip string, f Format, gz bool) []byte {
	g, _ := s.svips.Get(svip)
	return s.groupDocument(&s.docs().svips, g, svipOf, svip, f, gz)
}

func vipOf(i *actors.Instance) string  { return i.VIPAddress }
func svipOf(i *actors.Instance) string { return i.SecureVIPAddress }

// Group is the index entry of one VIP or secure VIP address: the
// applications that have instances listing it, sorted by name. It holds no
// per-instance data (the document finds the instances in the
// applications), so the index costs per application and address, not per
// instance. It is immutable and changes only when an application gains its
// first instance listing the address or loses its last (the counts live in
// the View, see groupCounts), so registrations and cancels within an
// application that keeps the address cost the index nothing.
type Group struct {
	apps []string
}

// with returns g with app, or g itself when it holds app.
func (g *Group) with(app string) *Group {
	var apps []string
	if g != nil {
		apps = g.apps
	}
	i, found := slices.BinarySearch(apps, app)
	if found {
		return g
	}
	return &Group{apps: slices.Insert(slices.Clone(apps), i, app)}
}

// without returns g without app, nil when that leaves it empty.
func (g *Group) without(app string) *Group {
	if g == nil {
		return nil
	}
	i, found := slices.BinarySearch(g.apps, app)
	switch {
	case !found:
		return g
	case len(g.apps) == 1:
		return nil
	}
	return &Group{apps: slices.Delete(slices.Clone(g.apps), i, i+1)}
}

// groupCounts counts, per address and application, the instances that
// list the address. The View keeps one per index and changes it under its
// lock; snapshots hold only the Groups.
type groupCounts map[groupKey]int

// groupKey is an address and an application.
type groupKey struct{ addr, app string }

// groupDocument builds (once per snapshot) the document of group g named
// name: its instances grouped by application, versions__delta "-1" and the
// hashcode of the subset, as Eureka does.
func (s *Snapshot) groupDocument(cache *sync.Map, g *Group, field func(*actors.Instance) string, name string,
	f Format, gz bool) []byte {
	type key struct {
		name string
		f    Format
		gz   bool
	}
	v, _ := cache.LoadOrStore(key{name, f, gz}, &lazy{})
	return v.(*lazy).get(func() []byte {
		if gz {
			return assembleGzip([]gzPiece{compressPiece(s.groupPlain(g, field, name, f))})
		}
		return s.groupPlain(g, field, name, f)
	})
}

// groupPlain builds the document of group g in format f: the instances of
// the group's applications whose field lists name.
func (s *Snapshot) groupPlain(g *Group, field func(*actors.Instance) string, name string, f Format) []byte {
	enc := s.enc[f]
	var counts [len(actors.AllStatuses)]int
	out := enc.AppendApplicationsOpen(nil, VIPVersionDelta, "")
	head := len(out)
	if g != nil {
		var pieces []*piece
		first := true
		for _, app := range g.apps {
			a := s.App(app)
			if a == nil {
				continue
			}
			pieces = pieces[:0]
			for p := range a.pieces.All() {
				if listsAddress(field(p.inst), name) {
					pieces = append(pieces, p)
					counts[statusIndex(p.inst.Status)]++
				}
			}
			if len(pieces) == 0 {
				continue
			}
			if !first {
				out = enc.AppendApplicationsSeparator(out)
			}
			first = false
			out = appendElement(out, enc, f, a.name, slices.Values(pieces))
		}
	}
	out = enc.AppendApplicationsClose(out)
	// The hashcode is known only now: put the real head in front.
	doc := enc.AppendApplicationsOpen(make([]byte, 0, len(out)+64), VIPVersionDelta, hashCode(&counts))
	return append(doc, out[head:]...)
}

// listsAddress reports whether the comma-separated list holds name as an
// element (exact match, as splitAddresses splits).
func listsAddress(list, name string) bool {
	if name == "" {
		return false
	}
	for list != "" {
		i := strings.IndexByte(list, ',')
		if i < 0 {
			return list == name
		}
		if list[:i] == name {
			return true
		}
		list = list[i+1:]
	}
	return false
}

// splitAddresses splits a comma-separated VIP list. Eureka matches elements
// exactly (case-sensitive, untrimmed); empty elements are dropped.
func splitAddresses(s string) []string { return appendAddresses(nil, s) }

// appendAddresses appends the elements of the comma-separated list s to dst,
// as splitAddresses splits them: a caller with a small array on its stack
// splits a list without allocating.
func appendAddresses(dst []string, s string) []string {
	for s != "" {
		e, rest, _ := strings.Cut(s, ",")
		if e != "" {
			dst = append(dst, e)
		}
		s = rest
	}
	return dst
}

// updateGroups moves key from the groups named by old's field to those named
// by cur's (either may be nil), counting in counts. A group changes only
// when its application's count reaches or leaves zero; nothing changes when
// the addresses did not.
func updateGroups(m *immutable.Map[string, *Group], counts groupCounts, key actors.Key, old, cur *actors.Instance,
	field func(*actors.Instance) string) *immutable.Map[string, *Group] {
	var before, after string
	if old != nil {
		before = field(old)
	}
	if cur != nil {
		after = field(cur)
	}
	if before == after && (old == nil) == (cur == nil) {
		return m
	}
	if before == "" && after == "" {
		return m
	}
	var oldBuf, newBuf [4]string // most lists name one address
	var oldNames, newNames []string
	if old != nil {
		oldNames = uniqueNames(appendAddresses(oldBuf[:0], before))
	}
	if cur != nil {
		newNames = uniqueNames(appendAddresses(newBuf[:0], after))
	}
	for _, name := range oldNames {
		if slices.Contains(newNames, name) {
			continue
		}
		k := groupKey{name, key.App}
		if counts[k]--; counts[k] > 0 {
			continue
		}
		delete(counts, k)
		g, _ := m.Get(name)
		if n := g.without(key.App); n == nil {
			m = m.Delete(name)
		} else if n != g {
			m = m.Set(name, n)
		}
	}
	for _, name := range newNames {
		if slices.Contains(oldNames, name) {
			continue
		}
		k := groupKey{name, key.App}
		if counts[k]++; counts[k] > 1 {
			continue
		}
		g, _ := m.Get(name)
		if n := g.with(key.App); n != g {
			m = m.Set(name, n)
		}
	}
	return m
}

// uniqueNames drops repeated names (a list may name an address twice; the
// instance is in its group once).
func uniqueNames(names []string) []string {
	out := names[:0]
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
