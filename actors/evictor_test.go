package actors

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Spec §4.10: limit = size − int(size × 0.85).
func TestEvictionLimit(t *testing.T) {
	tests := []struct {
		size, want int
	}{
		{0, 0}, {1, 1}, {2, 1}, {3, 1}, {6, 1}, {7, 2}, {10, 2}, {20, 3}, {100, 15}, {1000, 150},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, evictionLimit(tc.size, 0.85), "size=%d", tc.size)
	}
	assert.Equal(t, 0, evictionLimit(10, 1), "100% protects everything")
	assert.Equal(t, 5, evictionLimit(10, 0.5))
}

func testKeys(n int) []Key {
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = Key{App: fmt.Sprintf("APP%d", i%3), ID: fmt.Sprintf("i-%d", i)}
	}
	return keys
}

func TestChooseEvictions(t *testing.T) {
	tests := []struct {
		name         string
		n, limit     int
		wantLen      int
		wantAllInput bool
	}{
		{"limit above size keeps all", 5, 10, 5, true},
		{"limit equal to size keeps all", 5, 5, 5, true},
		{"cap", 20, 3, 3, false},
		{"limit one", 20, 1, 1, false},
		{"limit zero", 20, 0, 0, false},
		{"negative limit", 20, -1, 0, false},
		{"nothing expired", 0, 3, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := testKeys(tc.n)
			got := chooseEvictions(append([]Key(nil), in...), tc.limit, rand.New(rand.NewSource(1)))
			require.Len(t, got, tc.wantLen)
			if tc.wantAllInput {
				assert.ElementsMatch(t, in, got)
			}
			assertDistinctSubset(t, in, got)
		})
	}
}

func assertDistinctSubset(t *testing.T, all, chosen []Key) {
	t.Helper()
	valid := map[Key]bool{}
	for _, k := range all {
		valid[k] = true
	}
	seen := map[Key]bool{}
	for _, k := range chosen {
		assert.True(t, valid[k], "%v was not expired", k)
		assert.False(t, seen[k], "%v chosen twice", k)
		seen[k] = true
	}
}

func TestChooseEvictionsDeterministicAndSpread(t *testing.T) {
	in := testKeys(50)
	pick := func(seed int64) []Key {
		return chooseEvictions(append([]Key(nil), in...), 7, rand.New(rand.NewSource(seed)))
	}
	assert.Equal(t, pick(42), pick(42), "same seed, same choice")

	// Over many runs every key gets chosen sometimes (the choice is not
	// biased to a prefix) and every choice is distinct and capped.
	hits := map[Key]int{}
	rnd := rand.New(rand.NewSource(7))
	for run := 0; run < 200; run++ {
		got := chooseEvictions(append([]Key(nil), in...), 7, rnd)
		require.Len(t, got, 7)
		assertDistinctSubset(t, in, got)
		for _, k := range got {
			hits[k]++
		}
	}
	assert.Len(t, hits, len(in))
	assert.NotEqual(t, pick(1), pick(2))
}
