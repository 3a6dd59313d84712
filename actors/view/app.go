package view

// Prepared pieces.
//
// The unit of encoding is one instance state: a piece holds an immutable
// *actors.Instance and its bytes per Format, each encoded on first use and
// then kept for as long as the piece lives. A piece is made once per event
// and shared by everything that shows that state: the App that holds the
// instance, every snapshot that holds that App, and the delta's group of its
// application. So the registry document, the delta and the VIP documents are
// concatenations of the same cached instance bytes, and a change encodes one
// instance, once per format that is read.
//
// A gzip document is assembled from independently compressed pieces (see
// gzip.go): an App's gzip element is a run of chunks of a few dozen
// instances, each compressed once, on first use, from its instances' bytes.
// A chunk is one leaf of the App's persistent tree of pieces (btree.go), so
// after a change an App built from its predecessor reuses every chunk whose
// leaf did not change and compresses one: a write costs O(chunk), not
// O(application), however large the application or its delta group grows.
// Compression reuses the instances' plain bytes when some plain document
// already encoded them, and otherwise encodes them into a scratch buffer
// that it does not keep, so a registry that is only read gzipped (what Java
// clients ask for) holds compressed bytes only.

import (
	"encoding/binary"
	"hash/fnv"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"unique"
	"unsafe"

	"github.com/heureka/heureka/actors"
)

// piece is one instance state with its encodings, built lazily per format.
type piece struct {
	// inst is the state, or nil when the state is packed (a deleted state
	// in the delta; see packed.go).
	inst *actors.Instance
	// str is the packed state when inst is nil, and inst's id otherwise
	// (the same string, so no bytes of its own): a tree's search compares
	// ids without loading the instance.
	str string
	// clock and node are the version of the state (see version), with the
	// node's name as a handle: 8 bytes where a string takes 16.
	clock uint64
	node  unique.Handle[string]
	enc   [NumFormats]atomic.Pointer[[]byte]
	// at is when the change that made the piece was applied (epoch ms),
	// set under the view's lock before the piece is published and never
	// written after: pruning drops a piece from the delta when it is
	// older than the retention.
	at int64
}

func newPiece(inst *actors.Instance, v actors.Version) *piece {
	return &piece{inst: inst, str: inst.ID(), clock: v.Clock, node: unique.Make(v.Node)}
}

// newPackedPiece returns a piece holding inst packed: a deleted state,
// which only the delta shows.
func newPackedPiece(inst *actors.Instance, v actors.Version) *piece {
	return &piece{str: pack(inst), clock: v.Clock, node: unique.Make(v.Node)}
}

// state returns the piece's instance, unpacked into a new one if packed.
func (p *piece) state() *actors.Instance {
	if p.inst != nil {
		return p.inst
	}
	in := new(actors.Instance)
	unpackInto(in, p.str, &unpackScratch{})
	return in
}

// appendState appends the piece's instance in enc's encoding.
func (p *piece) appendState(dst []byte, enc Encoder) []byte {
	if p.inst != nil {
		return enc.AppendInstance(dst, p.inst)
	}
	return appendPacked(dst, enc, p.str)
}

// version returns the version of the piece's state.
func (p *piece) version() actors.Version {
	return actors.Version{Clock: p.clock, Node: p.node.Value()}
}

// scratch buffers for encodings that are copied or compressed, not kept.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// bytes returns the instance's encoding in format f, encoding it on first
// use. Concurrent first uses may both encode; the first stored wins, so every
// caller sees the same backing array.
func (p *piece) bytes(enc Encoder, f Format) []byte {
	if b := p.enc[f].Load(); b != nil {
		return *b
	}
	buf := scratch.Get().(*[]byte)
	*buf = p.appendState((*buf)[:0], enc)
	b := append(make([]byte, 0, len(*buf)), *buf...) // exact size: kept for the piece's life
	scratch.Put(buf)
	if !p.enc[f].CompareAndSwap(nil, &b) {
		return *p.enc[f].Load()
	}
	return b
}

// peek returns the cached encoding in format f, or nil.
func (p *piece) peek(f Format) []byte {
	if b := p.enc[f].Load(); b != nil {
		return *b
	}
	return nil
}

// appendElement appends the application element named name made of pieces
// in format f, encoding (and caching) the pieces that are not yet.
func appendElement(dst []byte, enc Encoder, f Format, name string, pieces iter.Seq[*piece]) []byte {
	dst = enc.AppendApplicationOpen(dst, name)
	first := true
	for p := range pieces {
		if !first {
			dst = enc.AppendInstanceSeparator(dst)
		}
		first = false
		dst = append(dst, p.bytes(enc, f)...)
	}
	return enc.AppendApplicationClose(dst)
}

// App is one application in a snapshot. It is immutable; its encoded bytes
// are built on first use and shared by every snapshot that holds it.
type App struct {
	name string
	// pieces are the instances with their versions, sorted by id (the
	// instances and versions are read from the pieces, not kept beside
	// them): a write copies one path of the tree.
	pieces btree[*piece]
	// held is what a delta group's pieces hold beyond the registry
	// (heldBytes), kept for the delta's memory bound.
	held int64
	// cache holds what is built on first use. It is allocated by the first
	// reader, so that a write, which copies an App, does not pay for the
	// caches of a version nobody may read.
	cache atomic.Pointer[appCache]
	// reuse holds, per format, the gzip chunks of the latest predecessor
	// that built them: chunks whose instances are unchanged are taken from
	// there instead of compressed again. Cleared once a's own are built.
	reuse [NumFormats]atomic.Pointer[[]gzChunk]
}

// appCache is an App's lazily built bytes and digest.
type appCache struct {
	gz     [NumFormats]lazyChunks // the element as gzip chunks
	doc    [NumFormats][2]lazy
	digest struct {
		once sync.Once
		v    uint64
	}
}

// caches returns a's cache, allocating it on first use.
func (a *App) caches() *appCache {
	if c := a.cache.Load(); c != nil {
		return c
	}
	a.cache.CompareAndSwap(nil, &appCache{})
	return a.cache.Load()
}

// Digest summarizes the application's instance versions: two nodes holding
// the same versions of the same instances get the same digest. It is an XOR
// of a hash of every instance's id and version, computed once per App.
func (a *App) Digest() uint64 {
	d := &a.caches().digest
	d.once.Do(func() {
		var buf [8]byte
		for p := range a.pieces.All() {
			h := fnv.New64a()
			_, _ = h.Write([]byte(p.key()))
			binary.LittleEndian.PutUint64(buf[:], p.clock)
			_, _ = h.Write(buf[:])
			_, _ = h.Write([]byte(p.node.Value()))
			d.v ^= mix64(h.Sum64())
		}
	})
	return d.v
}

// mix64 is a finalizer that spreads FNV's output over all bits.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Name returns the application's upper-case name.
func (a *App) Name() string { return a.name }

// Instances returns the instances sorted by id, in a new slice.
func (a *App) Instances() []*actors.Instance {
	out := make([]*actors.Instance, 0, a.pieces.Len())
	for p := range a.pieces.All() {
		out = append(out, p.state())
	}
	return out
}

// Versions returns the versions of Instances(), index for index, in a new
// slice.
func (a *App) Versions() []actors.Version {
	out := make([]actors.Version, 0, a.pieces.Len())
	for p := range a.pieces.All() {
		out = append(out, p.version())
	}
	return out
}

// All yields every instance, sorted by id, with its version, without
// copying.
func (a *App) All() iter.Seq2[*actors.Instance, actors.Version] {
	return func(yield func(*actors.Instance, actors.Version) bool) {
		for p := range a.pieces.All() {
			if !yield(p.state(), p.version()) {
				return
			}
		}
	}
}

// Len returns the number of instances (0 for nil).
func (a *App) Len() int {
	if a == nil {
		return 0
	}
	return a.pieces.Len()
}

func (a *App) find(id string) *actors.Instance {
	if p := a.pieces.Get(id); p != nil {
		return p.state()
	}
	return nil
}

func (a *App) findPiece(id string) *piece { return a.pieces.Get(id) }

// key orders applications in a btree.
func (a *App) key() string { return a.name }

// shape is the shape of the trees of applications.
func (*App) shape() *treeShape { return appShape }

// key orders pieces in a btree.
func (p *piece) key() string {
	if p.inst != nil {
		return p.str
	}
	return packedID(p.str)
}

// shape is the shape of the trees of pieces.
func (*piece) shape() *treeShape { return pieceShape }

// with returns a copy of a (nil means a new app) with p's instance set (at
// p's version), and the piece p replaced (nil if none). It copies one path
// of the application's tree of pieces, and encodes nothing. A delta group
// (which holds pieces only) changes the same way.
func (a *App) with(name string, p *piece) (*App, *piece) {
	var n *App
	if a != nil {
		n = &App{name: a.name}
		n.inherit(a)
	} else {
		n = &App{name: name}
	}
	var old *piece
	n.pieces, old = a.list().Swap(p)
	n.held = a.heldBytes() + p.heldBytes() - old.heldBytes()
	return n, old
}

// heldBytes returns what a, a delta group, holds beyond the registry (0
// for nil).
func (a *App) heldBytes() int64 {
	if a == nil {
		return 0
	}
	return a.held
}

// Estimates of what a delta entry holds, for the delta's memory bound
// (Config.DeltaMaxBytes): its slot in its group's tree (a pointer, with the
// tree's nodes about two-thirds full), and for a deleted state the piece
// with its packed state, rounded up to its size class, and about as much
// again for its share of the compressed chunks that gzip reads of the
// delta keep (clients read it in one format; TestDeltaHeldBytesEstimate).
// A live state's piece is the registry's.
const (
	deltaSlotBytes  = 24
	pieceBytes      = int64(unsafe.Sizeof(piece{})) // 80, a size class (TestPieceFitsItsSizeClass)
	packedOverBytes = 8                             // the rounding of a packed state to its size class, on average
)

// heldBytes estimates what p holds in the delta beyond the registry (0
// for nil).
func (p *piece) heldBytes() int64 {
	switch {
	case p == nil:
		return 0
	case p.inst != nil:
		return deltaSlotBytes
	}
	return deltaSlotBytes + pieceBytes + 2*int64(len(p.str)) + packedOverBytes
}

// list returns a's pieces (none when a is nil).
func (a *App) list() btree[*piece] {
	if a == nil {
		return btree[*piece]{}
	}
	return a.pieces
}

// without returns a copy of a without id, or nil when that leaves it empty.
func (a *App) without(id string) *App {
	if a == nil {
		return nil
	}
	l, found := a.pieces.Delete(id)
	if !found {
		return a
	}
	if l.Len() == 0 {
		return nil
	}
	n := &App{name: a.name, pieces: l}
	n.inherit(a)
	return n
}

// withoutExpired returns a copy of g, a delta group, without the pieces of
// ids applied before cutoff (an instance changed since holds a newer piece
// and stays), nil when that leaves it empty, g itself when nothing goes.
func (g *App) withoutExpired(ids []string, cutoff int64) *App {
	if g == nil {
		return nil
	}
	drop := make(map[*piece]struct{}, len(ids))
	for _, id := range ids {
		if p := g.findPiece(id); p != nil && p.at < cutoff {
			drop[p] = struct{}{}
		}
	}
	if len(drop) == 0 {
		return g
	}
	if len(drop) == g.pieces.Len() {
		return nil
	}
	l, held := g.pieces, g.held
	for p := range drop {
		l, _ = l.Delete(p.key())
		held -= p.heldBytes()
	}
	n := &App{name: g.name, pieces: l, held: held}
	n.inherit(g)
	return n
}

// lazy is a byte slice built once on first use.
type lazy struct {
	once sync.Once
	b    []byte
	done atomic.Bool // set once b is built
}

func (l *lazy) get(build func() []byte) []byte {
	l.once.Do(func() {
		l.b = build()
		l.done.Store(true)
	})
	return l.b
}

// lazyChunks are an element's gzip chunks, built once on first use.
type lazyChunks struct {
	once  sync.Once
	built atomic.Pointer[[]gzChunk] // set once built
}

func (l *lazyChunks) get(build func() []gzChunk) []gzChunk {
	l.once.Do(func() {
		c := build()
		l.built.Store(&c)
	})
	return *l.built.Load()
}

// gzChunk is one leaf of an application element's pieces compressed as
// one gzip piece. The first chunk starts with the element's opening, every
// other one with an instance separator; the last ends with its closing.
type gzChunk struct {
	first, last bool
	pieces      []*piece // the leaf
	z           gzPiece
}

// inherit lets n, made from a by one change, reuse a's gzip chunks, or
// those a itself would have reused where a built none.
func (n *App) inherit(a *App) {
	c := a.cache.Load()
	for f := range n.reuse {
		if c != nil {
			if b := c.gz[f].built.Load(); b != nil {
				n.reuse[f].Store(b)
				continue
			}
		}
		n.reuse[f].Store(a.reuse[f].Load())
	}
}

// plainLen returns the length of the application element in format f from
// the cached instance bytes, or -1 when some instance is not encoded yet.
func (a *App) plainLen(f Format) int {
	n := 0
	for p := range a.pieces.All() {
		b := p.peek(f)
		if b == nil {
			return -1
		}
		n += len(b)
	}
	return n
}

// gzChunks returns the application element in format f as gzip chunks,
// one per leaf of its pieces, built once per App: a chunk of the
// predecessor it was made from is reused where the leaf and its place
// (first, last) are the same, the others are compressed. Instance bytes
// already cached are reused; the others are encoded into a scratch buffer
// and not kept.
func (a *App) gzChunks(enc Encoder, f Format) []gzChunk {
	return a.caches().gz[f].get(func() []gzChunk {
		var old map[**piece]*gzChunk // by the leaf's first element
		if prev := a.reuse[f].Load(); prev != nil {
			old = make(map[**piece]*gzChunk, len(*prev))
			for i := range *prev {
				if c := &(*prev)[i]; len(c.pieces) > 0 {
					old[&c.pieces[0]] = c
				}
			}
		}
		defer a.reuse[f].Store(nil)
		leaves := slices.Collect(a.pieces.leaves())
		if len(leaves) == 0 {
			return []gzChunk{a.chunk(enc, f, gzChunk{first: true, last: true})}
		}
		out := make([]gzChunk, len(leaves))
		for k, lf := range leaves {
			c := gzChunk{first: k == 0, last: k == len(leaves)-1, pieces: lf}
			if o := old[&lf[0]]; o != nil && o.first == c.first && o.last == c.last && len(o.pieces) == len(lf) {
				c.z = o.z
				out[k] = c
				continue
			}
			out[k] = a.chunk(enc, f, c)
		}
		return out
	})
}

// chunk returns c with its pieces compressed.
func (a *App) chunk(enc Encoder, f Format, c gzChunk) gzChunk {
	z := newPieceWriter()
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	if c.first {
		z.write(enc.AppendApplicationOpen((*buf)[:0], a.name))
	}
	sep := enc.AppendInstanceSeparator(nil)
	for i, p := range c.pieces {
		if (i > 0 || !c.first) && len(sep) > 0 {
			z.write(sep)
		}
		if b := p.peek(f); b != nil {
			z.write(b)
		} else {
			*buf = p.appendState((*buf)[:0], enc)
			z.write(*buf)
		}
	}
	if c.last {
		z.write(enc.AppendApplicationClose((*buf)[:0]))
	}
	c.z = z.finish()
	return c
}

// appendGzElement appends the gzip pieces of a's element in format f.
func (a *App) appendGzElement(dst []gzPiece, enc Encoder, f Format) []gzPiece {
	for _, c := range a.gzChunks(enc, f) {
		dst = append(dst, c.z)
	}
	return dst
}

// Document returns the document for GET apps/{app} in format f, gzipped if
// gz. Where the encoder's document wraps the application element
// (DocumentWrapper), the gzip document is assembled from the element's
// chunks, so after a change it costs one chunk's compression.
func (a *App) Document(enc Encoder, f Format, gz bool) []byte {
	g := 0
	if gz {
		g = 1
	}
	return a.caches().doc[f][g].get(func() []byte {
		if w, ok := enc.(DocumentWrapper); ok && gz {
			open, closing := w.ApplicationDocumentWrap()
			pieces := append(make([]gzPiece, 0, a.pieces.Len()/pieceShape.min+3), compressedConst(open))
			pieces = a.appendGzElement(pieces, enc, f)
			return assembleGzip(append(pieces, compressedConst(closing)))
		}
		plain := enc.AppendApplicationDocument(nil, a.name, a.Instances())
		if gz {
			return assembleGzip([]gzPiece{compressPiece(plain)})
		}
		return plain
	})
}

// constPieces caches the gzip pieces of constant texts (document wraps).
var constPieces sync.Map // string → gzPiece

// compressedConst returns s as a gzip piece, compressed once.
func compressedConst(s string) gzPiece {
	if p, ok := constPieces.Load(s); ok {
		return p.(gzPiece)
	}
	p, _ := constPieces.LoadOrStore(s, compressPiece([]byte(s)))
	return p.(gzPiece)
}
