package view

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"sync"
)

// Gzip responses are assembled from pieces compressed independently, so that
// a change to one application recompresses only that application.
//
// Each piece is a raw DEFLATE stream ended by a sync flush: it starts with no
// history and ends on a byte boundary without a final block, so pieces can be
// concatenated into one valid DEFLATE stream. A document is then
//
//	gzip header + piece₁ + … + pieceₙ + final empty block + CRC-32 + size
//
// where the CRC-32 of the whole uncompressed document is combined from the
// pieces' CRCs (crc32Combine) instead of being recomputed over every byte.

// gzPiece is one independently compressed piece of a document.
type gzPiece struct {
	deflated []byte
	crc      uint32
	size     int
}

// pieceLevel is the DEFLATE level of every piece. Pieces are compressed on
// the read after a write (a chunk of an application, a VIP document), so
// the level is a trade of that read's latency against size: on chunks of
// 36 instance elements level 3 compresses about twice as fast as the
// default level 6, to a document 5% larger (measured: 64 against 119 µs a
// 31 kB chunk, 24.2× against 25.5×).
const pieceLevel = 3

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, pieceLevel)
	return w
}}

// compressPiece deflates plain into a concatenable piece.
func compressPiece(plain []byte) gzPiece {
	z := newPieceWriter()
	z.buf.Grow(len(plain)/8 + 64)
	z.write(plain)
	return z.finish()
}

// storedPiece returns plain (at most 65,535 bytes) as a piece of one stored
// (uncompressed) DEFLATE block: for a small text that changes with every
// document (the applications' opening, with its hashcode), which costs
// less to send as it is than to compress.
func storedPiece(plain []byte) gzPiece {
	if len(plain) > 0xffff {
		return compressPiece(plain)
	}
	n := uint16(len(plain))
	out := make([]byte, 0, 5+len(plain))
	// BFINAL 0, BTYPE 00 (stored), padded to the byte; LEN, NLEN.
	out = append(out, 0, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
	out = append(out, plain...)
	return gzPiece{deflated: out, crc: crc32.ChecksumIEEE(plain), size: len(plain)}
}

// pieceWriter compresses a piece written in several parts, so that a piece
// made of cached byte slices needs no contiguous copy of its plain text.
type pieceWriter struct {
	buf  bytes.Buffer
	w    *flate.Writer
	crc  uint32
	size int
}

func newPieceWriter() *pieceWriter {
	z := &pieceWriter{w: flateWriters.Get().(*flate.Writer)}
	z.w.Reset(&z.buf)
	return z
}

func (z *pieceWriter) write(b []byte) {
	_, _ = z.w.Write(b) // writes to a bytes.Buffer cannot fail
	z.crc = crc32.Update(z.crc, crc32.IEEETable, b)
	z.size += len(b)
}

// finish ends the piece with a sync flush and returns it; z must not be
// used afterwards. The deflated bytes are copied to their exact size, since
// pieces live as long as their application.
func (z *pieceWriter) finish() gzPiece {
	_ = z.w.Flush()
	flateWriters.Put(z.w)
	z.w = nil
	return gzPiece{deflated: bytes.Clone(z.buf.Bytes()), crc: z.crc, size: z.size}
}

// joinPieces joins consecutive pieces into one: their deflated bytes
// concatenated, their CRCs combined.
func joinPieces(pieces []gzPiece) gzPiece {
	n := 0
	for _, p := range pieces {
		n += len(p.deflated)
	}
	out := gzPiece{deflated: make([]byte, 0, n)}
	for i, p := range pieces {
		out.deflated = append(out.deflated, p.deflated...)
		if i == 0 {
			out.crc = p.crc
		} else {
			out.crc = crc32Combine(out.crc, p.crc, p.size)
		}
		out.size += p.size
	}
	return out
}

// gzipHeader is a minimal gzip member header: magic, deflate, no flags, no
// mtime, no extra flags, unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

// finalBlock is an empty final DEFLATE block with fixed Huffman codes.
var finalBlock = []byte{0x03, 0x00}

// gzipParts returns the slices of one gzip document made of pieces, in
// order: the header, each piece's deflated bytes, and the trailer.
func gzipParts(pieces []gzPiece) [][]byte {
	out := make([][]byte, 0, len(pieces)+2)
	out = append(out, gzipHeader)
	var crc uint32
	size := 0
	for i, p := range pieces {
		out = append(out, p.deflated)
		if i == 0 {
			crc = p.crc
		} else {
			crc = crc32Combine(crc, p.crc, p.size)
		}
		size += p.size
	}
	trailer := append([]byte(nil), finalBlock...)
	trailer = binary.LittleEndian.AppendUint32(trailer, crc)
	trailer = binary.LittleEndian.AppendUint32(trailer, uint32(size))
	return append(out, trailer)
}

// assembleGzip joins pieces into one gzip document.
func assembleGzip(pieces []gzPiece) []byte {
	n := len(gzipHeader) + len(finalBlock) + 8
	for _, p := range pieces {
		n += len(p.deflated)
	}
	out := make([]byte, 0, n)
	out = append(out, gzipHeader...)
	var crc uint32
	size := 0
	for i, p := range pieces {
		out = append(out, p.deflated...)
		if i == 0 {
			crc = p.crc
		} else {
			crc = crc32Combine(crc, p.crc, p.size)
		}
		size += p.size
	}
	out = append(out, finalBlock...)
	out = binary.LittleEndian.AppendUint32(out, crc)
	out = binary.LittleEndian.AppendUint32(out, uint32(size))
	return out
}

// crc32Combine returns the CRC-32 (IEEE) of A‖B given crc(A), crc(B) and
// len(B). Appending n zero bytes to A is a linear map on the CRC register
// over GF(2), a 32×32 bit matrix; the matrices for 2^k zero bytes are
// computed once (zeroOps) and tabulated per byte of the register
// (zeroTables), so a combination costs four table lookups per set bit of
// len(B), tens of nanoseconds: a document is assembled from thousands of
// pieces after every change.
func crc32Combine(crc1, crc2 uint32, len2 int) uint32 {
	if len2 <= 0 {
		return crc1
	}
	t := zeroTables()
	for k, n := 0, uint64(len2); n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			z := &t[k]
			crc1 = z[0][crc1&0xff] ^ z[1][crc1>>8&0xff] ^ z[2][crc1>>16&0xff] ^ z[3][crc1>>24]
		}
	}
	return crc1 ^ crc2
}

// zeroTables holds, for each k, the product of zeroOps()[k] with every
// value of each byte of the register: the product with a whole register is
// the XOR of its four bytes' entries (the map is linear).
var zeroTables = sync.OnceValue(func() *[64][4][256]uint32 {
	ops := zeroOps()
	var t [64][4][256]uint32
	for k := range t {
		for b := range 4 {
			for v := range 256 {
				t[k][b][v] = gf2Times(&ops[k], uint32(v)<<(8*b))
			}
		}
	}
	return &t
})

var zeroOpsOnce = sync.OnceValue(func() *[64][32]uint32 {
	var ops [64][32]uint32
	// The operator for one zero bit (reflected IEEE polynomial), squared
	// three times: one zero byte.
	var bit, two, four [32]uint32
	bit[0] = 0xedb88320
	row := uint32(1)
	for i := 1; i < 32; i++ {
		bit[i] = row
		row <<= 1
	}
	gf2Square(&two, &bit)
	gf2Square(&four, &two)
	gf2Square(&ops[0], &four)
	for k := 1; k < 64; k++ {
		gf2Square(&ops[k], &ops[k-1])
	}
	return &ops
})

// zeroOps returns the matrices that append 2^k zero bytes, k = 0…63.
func zeroOps() *[64][32]uint32 { return zeroOpsOnce() }

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := 0; n < 32; n++ {
		square[n] = gf2Times(mat, mat[n])
	}
}
