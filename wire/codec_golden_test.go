package wire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreviousVersionGoldenFrames decodes the frames the previous release
// (wire protocol 3) wrote: testdata/v3 holds the sample messages as the
// encoder of the last commit with ProtocolVersion 3 framed them (written
// once from that commit, in a temporary worktree). Today's Decode must read
// them, and EncodeVersion(m, 3) must write the very same bytes, so that a
// node of the previous release reads what this one sends it.
func TestPreviousVersionGoldenFrames(t *testing.T) {
	msgs := sampleMessages()
	msgs["batch"] = batch(3)
	files, err := filepath.Glob(filepath.Join("testdata", "v3", "*.bin"))
	require.NoError(t, err)
	require.Len(t, files, 8, "one frame per message of version 3")
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".bin")
		t.Run(name, func(t *testing.T) {
			want, ok := msgs[name]
			require.True(t, ok, "a sample message named %s", name)
			frame, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, byte(3), frame[0], "a version-3 frame")
			got, err := Decode(frame)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			again, err := EncodeVersion(got, 3)
			require.NoError(t, err)
			assert.Equal(t, frame, again, "EncodeVersion(3) writes what the previous release wrote")
			same, err := sameDecoding(frame)
			require.NoError(t, err)
			assert.True(t, same)
		})
	}
}

// A Handoff exists from version 4 on: it is not written in version 3, and a
// version-3 frame with its tag is refused, as the previous release refuses
// it; versions outside the range are refused for every message.
func TestHandoffIsVersion4(t *testing.T) {
	m := &Handoff{Node: "a", Apps: []HandoffApp{{App: "APP", Leases: []LeaseAge{{ID: "i", AgeMillis: 5}}}}}
	_, err := EncodeVersion(m, 3)
	require.ErrorIs(t, err, ErrUnknownType)
	b, err := EncodeVersion(m, 4)
	require.NoError(t, err)
	got, err := Decode(b)
	require.NoError(t, err)
	assert.Equal(t, m, got)
	b[0] = 3
	_, err = Decode(b)
	require.ErrorIs(t, err, ErrUnknownType)

	for _, v := range []uint8{0, 1, 2, ProtocolVersion + 1} {
		_, err := EncodeVersion(&Records{}, v)
		assert.ErrorIs(t, err, ErrVersion, "version %d", v)
	}
}

func TestCommon(t *testing.T) {
	for _, c := range []struct {
		min, max uint8
		want     uint8
		ok       bool
	}{
		{3, 3, 3, true},                 // the previous release
		{2, 3, 3, true},                 // the previous release's range
		{3, 4, 4, true},                 // this release
		{4, 4, 4, true},                 // a release speaking only 4
		{4, 5, 4, true},                 // the next release
		{5, 6, 0, false},                // two releases on
		{2, 2, 0, false},                // two releases back
		{4, 3, 0, false},                // nonsense range
		{0, 255, ProtocolVersion, true}, // a future range that spans ours
		{ProtocolVersion + 1, 255, 0, false},
	} {
		got, ok := Common(c.min, c.max)
		assert.Equal(t, c.ok, ok, "%d..%d", c.min, c.max)
		assert.Equal(t, c.want, got, "%d..%d", c.min, c.max)
	}
}
