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
// (wire protocol 4) wrote: testdata/v4 holds the sample messages as the
// encoder of the last commit with ProtocolVersion 4 framed them (written
// once from that commit). Today's Decode must read them, and
// EncodeVersion(m, 4) must write the very same bytes, so that a node of the
// previous release reads what this one sends it.
func TestPreviousVersionGoldenFrames(t *testing.T) {
	msgs := sampleMessages()
	msgs["batch"] = batch(3)
	// Version 4 has no Load.Alive: the golden frame holds the rest.
	msgs["load"] = loadWithoutAlive()
	files, err := filepath.Glob(filepath.Join("testdata", "v4", "*.bin"))
	require.NoError(t, err)
	require.Len(t, files, 9, "one frame per message of version 4")
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".bin")
		t.Run(name, func(t *testing.T) {
			want, ok := msgs[name]
			require.True(t, ok, "a sample message named %s", name)
			frame, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, byte(4), frame[0], "a version-4 frame")
			got, err := Decode(frame)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			again, err := EncodeVersion(got, 4)
			require.NoError(t, err)
			assert.Equal(t, frame, again, "EncodeVersion(4) writes what the previous release wrote")
			same, err := sameDecoding(frame)
			require.NoError(t, err)
			assert.True(t, same)
		})
	}
}

// loadWithoutAlive is the sample Load without the field version 5 added.
func loadWithoutAlive() *Load {
	l := *sampleMessages()["load"].(*Load)
	l.Alive = nil
	return &l
}

// A Load written for a version-4 peer leaves Alive out, as the previous
// release's decoder requires (it refuses an array of another length), and
// one of version 5 carries it; a version-4 frame with seven fields is
// refused, as the previous release refuses it.
func TestLoadAliveIsVersion5(t *testing.T) {
	m := sampleMessages()["load"].(*Load)
	require.NotEmpty(t, m.Alive)
	old, err := EncodeVersion(m, 4)
	require.NoError(t, err)
	golden, err := os.ReadFile(filepath.Join("testdata", "v4", "load.bin"))
	require.NoError(t, err)
	assert.Equal(t, golden, old, "the sample Load as the previous release framed it, Alive dropped")
	got, err := Decode(old)
	require.NoError(t, err)
	assert.Equal(t, loadWithoutAlive(), got, "Alive unknown from a version-4 sender")

	b, err := EncodeVersion(m, 5)
	require.NoError(t, err)
	got, err = Decode(b)
	require.NoError(t, err)
	assert.Equal(t, m, got)

	b[0] = 4
	_, err = Decode(b)
	require.ErrorIs(t, err, ErrMalformed, "seven fields in a version-4 Load")
}

// The previous release writes its push/pull state, a Digest, in its lowest
// version, 3: testdata/state/digest-v3.bin is the sample digest as it
// framed it. DecodeState reads it (a Digest has the same body from version
// 3 on); Decode refuses it, and DecodeState refuses any other version-3
// frame.
func TestPreviousReleaseStateRead(t *testing.T) {
	frame, err := os.ReadFile(filepath.Join("testdata", "state", "digest-v3.bin"))
	require.NoError(t, err)
	require.Equal(t, byte(3), frame[0])
	_, err = Decode(frame)
	require.ErrorIs(t, err, ErrVersion)
	got, err := DecodeState(frame)
	require.NoError(t, err)
	assert.Equal(t, sampleMessages()["digest"], got)
	assert.Equal(t, byte(3), frame[0], "the input is not changed")

	other, err := EncodeVersion(&Records{}, 4)
	require.NoError(t, err)
	other[0] = 3
	_, err = DecodeState(other)
	require.ErrorIs(t, err, ErrVersion, "only a Digest is read a version back")
}

// Versions outside the range are refused for every message: version 3,
// the release before the previous one, among them.
func TestVersionsOutOfRangeRefused(t *testing.T) {
	for _, v := range []uint8{0, 1, 2, 3, ProtocolVersion + 1} {
		_, err := EncodeVersion(&Records{}, v)
		assert.ErrorIs(t, err, ErrVersion, "version %d", v)
	}
	b, err := EncodeVersion(&Digest{Node: "n"}, 4)
	require.NoError(t, err)
	b[0] = 3
	_, err = Decode(b)
	require.ErrorIs(t, err, ErrVersion)
}

func TestCommon(t *testing.T) {
	for _, c := range []struct {
		min, max uint8
		want     uint8
		ok       bool
	}{
		{4, 4, 4, true},                 // the previous release
		{3, 4, 4, true},                 // the previous release's range
		{4, 5, 5, true},                 // this release
		{5, 5, 5, true},                 // a release speaking only 5
		{5, 6, 5, true},                 // the next release
		{6, 7, 0, false},                // two releases on
		{3, 3, 0, false},                // two releases back
		{5, 4, 0, false},                // nonsense range
		{0, 255, ProtocolVersion, true}, // a future range that spans ours
		{ProtocolVersion + 1, 255, 0, false},
	} {
		got, ok := Common(c.min, c.max)
		assert.Equal(t, c.ok, ok, "%d..%d", c.min, c.max)
		assert.Equal(t, c.want, got, "%d..%d", c.min, c.max)
	}
}
