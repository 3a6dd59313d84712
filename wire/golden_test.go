package wire

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreviousVersionGoldenFrames decodes the frames the previous release
// (wire protocol 2) wrote: testdata/v2 holds the sample messages as the
// encoder of the last commit with ProtocolVersion 2 framed them (written
// once from that commit, in a temporary worktree). Today's Decode must read
// them, with the fields version 2 lacks left zero (Records.SentAt: unknown),
// and EncodeVersion(m, 2) must write the very same bytes, so that a node of
// the previous release reads what this one sends it.
func TestPreviousVersionGoldenFrames(t *testing.T) {
	msgs := sampleMessages()
	msgs["batch"] = batch(3)
	msgs["records"].(*Records).SentAt = 0 // version 2 has no SentAt
	for name, want := range msgs {
		t.Run(name, func(t *testing.T) {
			frame, err := os.ReadFile(filepath.Join("testdata", "v2", name+".bin"))
			require.NoError(t, err)
			require.Equal(t, byte(2), frame[0], "a version-2 frame")
			got, err := Decode(frame)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			again, err := EncodeVersion(got, 2)
			require.NoError(t, err)
			assert.Equal(t, frame, again, "EncodeVersion(2) writes what the previous release wrote")
			same, err := sameDecoding(frame)
			require.NoError(t, err)
			assert.True(t, same)
		})
	}
}

// A version-2 record batch encoded from a message that has SentAt drops it:
// the previous release reads exactly two fields.
func TestEncodeVersion2DropsSentAt(t *testing.T) {
	m := &Records{Done: []string{"APP"}, SentAt: 42}
	b, err := EncodeVersion(m, 2)
	require.NoError(t, err)
	got, err := Decode(b)
	require.NoError(t, err)
	assert.Equal(t, &Records{Done: []string{"APP"}}, got)
	assert.Equal(t, int64(42), m.SentAt, "the caller's message is not changed")

	for _, v := range []uint8{0, 1, ProtocolVersion + 1} {
		_, err := EncodeVersion(m, v)
		assert.ErrorIs(t, err, ErrVersion, "version %d", v)
	}
}

func TestCommon(t *testing.T) {
	for _, c := range []struct {
		min, max uint8
		want     uint8
		ok       bool
	}{
		{2, 2, 2, true},                 // the previous release
		{2, 3, 3, true},                 // this release
		{3, 3, 3, true},                 // a release speaking only 3
		{3, 4, 3, true},                 // the next release
		{4, 5, 0, false},                // two releases on
		{1, 1, 0, false},                // two releases back
		{3, 2, 0, false},                // nonsense range
		{0, 255, ProtocolVersion, true}, // a future range that spans ours
		{ProtocolVersion + 1, 255, 0, false},
	} {
		got, ok := Common(c.min, c.max)
		assert.Equal(t, c.ok, ok, "%d..%d", c.min, c.max)
		assert.Equal(t, c.want, got, "%d..%d", c.min, c.max)
	}
}
