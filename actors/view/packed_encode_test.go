package view_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// The delta shows a cancelled instance, held packed, with the bytes the
// wire encoders give the cancelled state itself, in every format, plain and
// gzipped: Eureka's delta shows a DELETED instance whole.
func TestDeltaShowsPackedStatesWhole(t *testing.T) {
	v, clock, apply := manualView()
	enc := eureka.Encoders()
	var gone []*actors.Instance
	for i := range 100 {
		in := decodedInstance(appName(i%3), i)
		apply(actors.ActionAdded, in)
		if i%2 == 0 {
			d := in.Clone()
			d.LeaseInfo.EvictionTimestamp = clock.Now().UnixMilli()
			apply(actors.ActionDeleted, d)
			gone = append(gone, d)
		}
		clock.Advance(time.Millisecond)
	}
	s := v.Snapshot()
	require.Equal(t, 100, s.DeltaLen())
	for f := range view.NumFormats {
		// gzip first: its chunks encode the packed states themselves, where
		// after a plain read they would take the plain bytes.
		zr, err := gzip.NewReader(bytes.NewReader(s.Delta(f, true)))
		require.NoError(t, err)
		unzipped, err := io.ReadAll(zr)
		require.NoError(t, err)
		plain := s.Delta(f, false)
		assert.Equal(t, string(plain), string(unzipped), "format %d: gzip and plain agree", f)
		for _, d := range gone {
			want := enc[f].AppendInstance(nil, d)
			require.True(t, bytes.Contains(plain, want), "format %d: the delta holds %s as encoded", f, d.ID())
		}
	}
}
