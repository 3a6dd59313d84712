package view

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// A change to a large application recompresses one gzip chunk of its
// element (and of its delta group), not the whole application: the other
// chunks are taken from the predecessor, and the document stays the same
// bytes as the plain one.
func TestGzipChangeRecompressesOneChunk(t *testing.T) {
	v, _, lines := testView(t, nil)
	f := newFeeder(v)
	const n = 1000
	for i := range n {
		f.add("BIG", fmt.Sprintf("i-%04d", i), actors.StatusUp)
	}
	s := v.Snapshot()
	s.Full(FormatJSON, true)
	s.Delta(FormatJSON, true)
	enc := lines[FormatJSON]
	require.Equal(t, 2*n, enc.encodes("BIG"), "gzip only: each document encodes into scratch once")
	require.Greater(t, len(s.App("BIG").gzChunks(enc, FormatJSON)), n/pieceShape.max)

	for round, change := range []func(){
		func() { f.modify("BIG", "i-0500", actors.StatusDown) },
		func() { f.add("BIG", "i-0500a", actors.StatusUp) },
		func() { f.remove("BIG", "i-0250") },
	} {
		before := enc.encodes("BIG")
		change()
		s = v.Snapshot()
		s.Full(FormatJSON, true)
		s.Delta(FormatJSON, true)
		// At most two chunks a document: an insert may split one.
		assert.LessOrEqual(t, enc.encodes("BIG")-before, 2*2*pieceShape.max, "round %d", round)
	}
	assert.Equal(t, string(s.Full(FormatJSON, false)), string(gunzip(t, s.Full(FormatJSON, true))))
	assert.Equal(t, string(s.Delta(FormatJSON, false)), string(gunzip(t, s.Delta(FormatJSON, true))))
}

// sepEncoder is lineEncoder with separators between instances, as JSON has.
type sepEncoder struct{ *lineEncoder }

func (sepEncoder) AppendInstanceSeparator(dst []byte) []byte { return append(dst, ',') }

// Chunks join into the element: separators between instances, also where
// one chunk ends and the next begins, and none before the first.
func TestGzipChunksJoinWithSeparators(t *testing.T) {
	_, _, lines := testView(t, nil)
	enc := sepEncoder{lines[FormatJSON]}
	for _, n := range []int{0, 1, 2, pieceShape.max, 5 * pieceShape.max} {
		a := &App{name: "A", pieces: treeOf(testPieces(n))}
		want := appendElement(nil, enc, FormatJSON, "A", a.pieces.All())
		got := gunzip(t, assembleGzip(a.appendGzElement(nil, enc, FormatJSON)))
		assert.Equal(t, string(want), string(got), "%d instances", n)
	}
}

// A write reuses every gzip block of the full document and of the delta
// but its application's (an insert may split one in two), and the
// assembled documents stay the plain ones, gzipped.
func TestGzipBlocksReusedAcrossSnapshots(t *testing.T) {
	defer func(m int) { spanMin = m }(spanMin)
	spanMin = 2 << 10 // spans of about 16 blocks of this document
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	const apps = 2000
	for a := range apps {
		f.add(fmt.Sprintf("APP-%04d", a), "i-1", actors.StatusUp)
	}
	s1 := v.Snapshot()
	s1.Full(FormatJSON, true)
	s1.Delta(FormatJSON, true)
	for round, change := range []func(){
		func() { f.modify("APP-1000", "i-1", actors.StatusDown) },
		func() { f.add("APP-1000a", "i-1", actors.StatusUp) },
		func() { f.remove("APP-0500", "i-1") },
	} {
		change()
		s2 := v.Snapshot()
		for _, kind := range []int{docFull, docDelta} {
			if kind == docFull {
				s2.Full(FormatJSON, true)
			} else {
				s2.Delta(FormatJSON, true)
			}
			l1, l2 := s1.docs().blocks[kind][FormatJSON].Load(), s2.docs().blocks[kind][FormatJSON].Load()
			require.Greater(t, len(l2.blocks), apps/appShape.max)
			require.Greater(t, len(l2.spans), 4)
			old := map[*byte]bool{}
			for _, b := range l1.blocks {
				old[dataPtr(b.z.deflated)] = true
			}
			joined := 0
			for _, b := range l2.blocks {
				if !old[dataPtr(b.z.deflated)] {
					joined++
				}
			}
			assert.LessOrEqual(t, joined, 2, "round %d, kind %d: blocks joined again", round, kind)
			oldSpans := map[*byte]bool{}
			for _, sp := range l1.spans {
				oldSpans[dataPtr(sp.z.deflated)] = true
			}
			joined = 0
			for _, sp := range l2.spans {
				if !oldSpans[dataPtr(sp.z.deflated)] {
					joined++
				}
			}
			assert.LessOrEqual(t, joined, 2, "round %d, kind %d: spans joined again, of %d", round, kind, len(l2.spans))
		}
		assert.Equal(t, string(s2.Full(FormatJSON, false)), string(gunzip(t, s2.Full(FormatJSON, true))))
		assert.Equal(t, string(s2.Delta(FormatJSON, false)), string(gunzip(t, s2.Delta(FormatJSON, true))))
		s1 = s2
	}
}

// A gzip document is written from its parts, the spans of its blocks,
// which are large enough to go out without a copy; a body is one slice
// only once Full or Delta joined the document. Both are the same bytes.
func TestGzipBodyIsItsSpans(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	for a := range 4000 {
		f.add(fmt.Sprintf("APP-%04d", a), "i-1", actors.StatusUp)
	}
	s := v.Snapshot()
	body := s.DeltaBody(FormatJSON, true)
	l := s.docs().blocks[docDelta][FormatJSON].Load()
	assert.Equal(t, len(l.spans)+4, len(body.parts), "header, opening, spans, close, trailer")
	assert.Greater(t, len(l.blocks), 4*len(l.spans), "blocks grouped into spans")
	require.Greater(t, len(l.spans), 1)
	for _, sp := range l.spans[:len(l.spans)-1] {
		assert.GreaterOrEqual(t, len(sp.z.deflated), writeSpan, "a span but the last goes out without a copy")
	}
	for range 3 { // never joined for a body
		assert.Len(t, s.DeltaBody(FormatJSON, true).parts, len(body.parts))
	}
	b1 := bodyBytes(t, body)
	assert.EqualValues(t, body.Len(), len(b1))
	assert.Equal(t, b1, s.Delta(FormatJSON, true))
	assert.Equal(t, string(s.Delta(FormatJSON, false)), string(gunzip(t, b1)))

	// Once joined (Delta's bytes asked for), a body is one slice.
	assert.Len(t, s.DeltaBody(FormatJSON, true).parts, 1)
	assert.Equal(t, b1, bodyBytes(t, s.DeltaBody(FormatJSON, true)))
	assert.Equal(t, s.Full(FormatJSON, false), bodyBytes(t, s.FullBody(FormatJSON, false)))
}

func bodyBytes(t *testing.T, b Body) []byte {
	var buf bytes.Buffer
	_, err := b.WriteTo(&buf)
	require.NoError(t, err)
	return buf.Bytes()
}

// testPieces returns n pieces of application A, sorted by id.
func testPieces(n int) []*piece {
	ps := make([]*piece, n)
	for i := range ps {
		ps[i] = newPiece(testInst("A", fmt.Sprintf("i-%05d", i), actors.StatusUp), actors.Version{})
	}
	return ps
}

// An application's gzip chunks are the leaves of its piece list: one for a
// small application, pieceShape.min to pieceShape.max instances each for a large one,
// however it was built.
func TestGzipChunksAreLeaves(t *testing.T) {
	_, _, lines := testView(t, nil)
	enc := lines[FormatJSON]
	for _, n := range []int{1, 20, pieceShape.max, 1000} {
		a := &App{name: "A", pieces: treeOf(testPieces(n))}
		chunks := a.gzChunks(enc, FormatJSON)
		leaves := slices.Collect(a.pieces.leaves())
		require.Len(t, chunks, len(leaves), "%d instances", n)
		if n < pieceShape.max+1 {
			assert.Len(t, chunks, 1, "%d instances", n)
			continue
		}
		for k, c := range chunks {
			assert.Same(t, &leaves[k][0], &c.pieces[0])
			assert.GreaterOrEqual(t, len(c.pieces), pieceShape.min)
			assert.LessOrEqual(t, len(c.pieces), pieceShape.max)
		}
	}
}

// countingWriter counts the writes it takes.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

// A body of many small parts is written in few writes (each a system call
// on a connection), gathered into at least writeSpan bytes but the last;
// a large part alone is written without a copy; the bytes are the parts',
// in order.
func TestBodyGathersSmallParts(t *testing.T) {
	var parts [][]byte
	var want []byte
	for i := range 300 {
		p := bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i)
		parts = append(parts, p)
		want = append(want, p...)
	}
	big := bytes.Repeat([]byte{'Z'}, 3*writeSpan)
	parts = append(parts, big)
	want = append(want, big...)
	b := Body{parts: parts, size: len(want)}
	var w countingWriter
	n, err := b.WriteTo(&w)
	require.NoError(t, err)
	assert.EqualValues(t, len(want), n)
	assert.Equal(t, want, w.Bytes())
	small := len(want) - len(big)
	assert.LessOrEqual(t, w.writes, small/writeSpan+2, "%d writes for %d parts", w.writes, len(parts))
}
