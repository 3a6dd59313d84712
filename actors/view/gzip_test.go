package view

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"slices"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// gunzip decompresses a gzip document; the reader checks the CRC-32 and the
// size in the trailer.
func gunzip(t *testing.T, doc []byte) []byte {
	t.Helper()
	br := bytes.NewReader(doc)
	zr, err := gzip.NewReader(br)
	require.NoError(t, err)
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NoError(t, zr.Close())
	require.Zero(t, br.Len(), "one gzip member, nothing after it")
	return out
}

// populate registers n applications with 1–3 instances each, some sharing
// VIPs, with mixed statuses.
func populate(f *feeder, n int) {
	statuses := []actors.Status{actors.StatusUp, actors.StatusDown, actors.StatusStarting, actors.StatusOutOfService}
	for i := 0; i < n; i++ {
		app := fmt.Sprintf("APP-%03d", i)
		for j := 0; j <= i%3; j++ {
			in := vipInst(app, fmt.Sprintf("%s-i%d", app, j), statuses[(i+j)%len(statuses)],
				fmt.Sprintf("vip%d,common", i%7), fmt.Sprintf("svip%d", i%5))
			in.Metadata = map[string]string{"pad": fmt.Sprintf("%0*d", 20+i%50, i)}
			f.apply(actors.ActionAdded, in)
		}
	}
}

// assertGzipDocs checks that every gzipped document of s decompresses to
// exactly the plain one, in formats with and without an application
// separator.
func assertGzipDocs(t *testing.T, s *Snapshot, apps int) {
	t.Helper()
	for _, f := range []Format{FormatJSON, FormatXML} {
		assert.Equal(t, string(s.Full(f, false)), string(gunzip(t, s.Full(f, true))), "full, format %d", f)
		assert.Equal(t, string(s.Delta(f, false)), string(gunzip(t, s.Delta(f, true))), "delta, format %d", f)
		for _, vip := range []string{"vip0", "common", "unknown"} {
			assert.Equal(t, string(s.VIP(vip, f, false)), string(gunzip(t, s.VIP(vip, f, true))), "vip %s", vip)
		}
		for _, svip := range []string{"svip1", "unknown"} {
			assert.Equal(t, string(s.SVIP(svip, f, false)), string(gunzip(t, s.SVIP(svip, f, true))), "svip %s", svip)
		}
		for _, i := range []int{0, apps / 2, apps - 1} {
			if apps == 0 {
				break
			}
			name := fmt.Sprintf("APP-%03d", i)
			plain, ok := s.AppDocument(name, f, false)
			require.True(t, ok, name)
			gz, ok := s.AppDocument(name, f, true)
			require.True(t, ok, name)
			assert.Equal(t, string(plain), string(gunzip(t, gz)), "app %s", name)
		}
	}
}

func TestGzipDocumentsDecompress(t *testing.T) {
	for _, n := range []int{0, 1, 300} {
		t.Run(fmt.Sprint(n, " apps"), func(t *testing.T) {
			v, _, _ := testView(t, nil)
			f := newFeeder(v)
			populate(f, n)
			s := v.Snapshot()
			require.Equal(t, n, s.apps.Len())
			assertGzipDocs(t, s, n)

			if n == 0 {
				return
			}
			// After a change only one piece is recompressed; the
			// reassembled document is still exact.
			f.modify("APP-000", "APP-000-i0", actors.StatusUp)
			f.remove(fmt.Sprintf("APP-%03d", n-1), fmt.Sprintf("APP-%03d-i0", n-1))
			s2 := v.Snapshot()
			assertGzipDocs(t, s2, n-1)
			assert.NotEqual(t, s.Full(FormatJSON, false), s2.Full(FormatJSON, false))
		})
	}
}

func TestAssembleGzip(t *testing.T) {
	rnd := rand.New(rand.NewSource(7))
	tests := []struct {
		name   string
		pieces []string
	}{
		{"no pieces", nil},
		{"one empty piece", []string{""}},
		{"one piece", []string{"hello, gzip"}},
		{"empty pieces between", []string{"a", "", "b", "", ""}},
		{"many", []string{"open\n", "app A\n", "--\n", "app B\n", "end\n"}},
		{"large random", []string{randText(rnd, 70000), randText(rnd, 1), randText(rnd, 33333)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pieces []gzPiece
			var whole bytes.Buffer
			for _, p := range tc.pieces {
				pieces = append(pieces, compressPiece([]byte(p)))
				whole.WriteString(p)
			}
			doc := assembleGzip(pieces)
			assert.Equal(t, whole.String(), string(gunzip(t, doc)))
			assert.Equal(t, []byte{0x1f, 0x8b, 8}, doc[:3], "gzip magic and deflate")
		})
	}
}

// randText returns n bytes that compress somewhat (like JSON does).
func randText(rnd *rand.Rand, n int) string {
	const alphabet = `{}[]":,abcdefghijklmnopqrstuvwxyz0123456789 `
	b := make([]byte, n)
	for i := range b {
		if rnd.Intn(4) == 0 {
			b[i] = byte(rnd.Intn(256))
		} else {
			b[i] = alphabet[rnd.Intn(len(alphabet))]
		}
	}
	return string(b)
}

func TestCrc32Combine(t *testing.T) {
	tests := []struct {
		a, b string
	}{
		{"", ""},
		{"", "x"},
		{"x", ""},
		{"hello, ", "world"},
		{"a", "b"},
		{"\x00\x00\x00", "\x00"},
		{"123456789", "123456789123456789123456789"},
	}
	for _, tc := range tests {
		got := crc32Combine(crc32.ChecksumIEEE([]byte(tc.a)), crc32.ChecksumIEEE([]byte(tc.b)), len(tc.b))
		assert.Equal(t, crc32.ChecksumIEEE([]byte(tc.a+tc.b)), got, "%q + %q", tc.a, tc.b)
	}

	// Random data split at random points, combined left to right.
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		data := make([]byte, rnd.Intn(5000))
		rnd.Read(data)
		cuts := []int{0}
		for k := rnd.Intn(6); k > 0; k-- {
			cuts = append(cuts, rnd.Intn(len(data)+1))
		}
		cuts = append(cuts, len(data))
		slices.Sort(cuts)
		crc := crc32.ChecksumIEEE(data[cuts[0]:cuts[1]])
		for j := 1; j+1 < len(cuts); j++ {
			part := data[cuts[j]:cuts[j+1]]
			crc = crc32Combine(crc, crc32.ChecksumIEEE(part), len(part))
		}
		require.Equal(t, crc32.ChecksumIEEE(data), crc, "cuts %v", cuts)
	}
}

func TestCrc32CombineProperty(t *testing.T) {
	prop := func(a, b []byte) bool {
		got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), len(b))
		return got == crc32.ChecksumIEEE(append(append([]byte(nil), a...), b...))
	}
	require.NoError(t, quick.Check(prop, &quick.Config{MaxCount: 500, Rand: rand.New(rand.NewSource(3))}))
	// Pieces of megabytes use the tables of high powers of two.
	rnd := rand.New(rand.NewSource(4))
	for _, n := range []int{1 << 20, 3<<20 + 12345} {
		a, b := make([]byte, 777), make([]byte, n)
		rnd.Read(a)
		rnd.Read(b)
		assert.True(t, prop(a, b), "%d bytes", n)
	}
}
