package view

import (
	"fmt"
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
	require.Greater(t, len(s.App("BIG").gzChunks(enc, FormatJSON)), n/chunkMax)

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
		assert.LessOrEqual(t, enc.encodes("BIG")-before, 2*2*chunkMax, "round %d", round)
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
	for _, n := range []int{0, 1, 2, chunkSpan, 5 * chunkMax} {
		a := &App{name: "A"}
		for i := range n {
			a.pieces = append(a.pieces, newPiece(testInst("A", fmt.Sprintf("i-%05d", i), actors.StatusUp)))
		}
		want := appendElement(nil, enc, FormatJSON, "A", a.pieces)
		got := gunzip(t, assembleGzip(a.appendGzElement(nil, enc, FormatJSON)))
		assert.Equal(t, string(want), string(got), "%d instances", n)
	}
}
