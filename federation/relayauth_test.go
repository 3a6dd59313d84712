package federation

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A relay request signed with the first key of one keyring is accepted by
// a keyring that holds that key anywhere (a rotation's steps), within the
// clock window only, for the path it was signed for only.
func TestRelayAuth(t *testing.T) {
	old, key := []byte("0123456789abcdef"), []byte("fedcba9876543210")
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	signed := func(keys [][]byte, at time.Time, path string) *http.Request {
		r, err := http.NewRequest("GET", "http://n1:8761"+path, nil)
		require.NoError(t, err)
		newRelayAuth(keys, func() time.Time { return at }).sign(r)
		return r
	}
	const path = "/admin/regions/dc1/relay"
	for _, c := range []struct {
		name   string
		signer [][]byte
		at     time.Time
		path   string
		want   string // "" accepted, else in the error
	}{
		{"same key", [][]byte{key}, now, path, ""},
		{"rotation step 1: signer [old, new], checker [new, old]", [][]byte{old, key}, now, path, ""},
		{"rotation step 2: signer [new, old]", [][]byte{key, old}, now, path, ""},
		{"other key", [][]byte{[]byte("xxxxxxxxxxxxxxxx")}, now, path, "matches no key"},
		{"within the window", [][]byte{key}, now.Add(-RelayAuthWindow + time.Second), path, ""},
		{"too old", [][]byte{key}, now.Add(-RelayAuthWindow - time.Second), path, "from this node's clock"},
		{"from the future", [][]byte{key}, now.Add(RelayAuthWindow + time.Second), path, "from this node's clock"},
		{"unsigned", nil, now, path, "malformed"},
	} {
		r := signed(c.signer, c.at, c.path)
		err := newRelayAuth([][]byte{key, old}, clock).check(r)
		if c.want == "" {
			assert.NoError(t, err, c.name)
		} else if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
	// Another path or method with the same header is refused.
	r := signed([][]byte{key}, now, path)
	other, _ := http.NewRequest("GET", "http://n1:8761/admin/regions/dc3/relay", nil)
	other.Header = r.Header
	assert.ErrorIs(t, newRelayAuth([][]byte{key}, clock).check(other), errRelayAuthWrong)
	post, _ := http.NewRequest("POST", "http://n1:8761"+path, nil)
	post.Header = r.Header
	assert.ErrorIs(t, newRelayAuth([][]byte{key}, clock).check(post), errRelayAuthWrong)
	// A node without a key cannot check a signature.
	assert.ErrorIs(t, newRelayAuth(nil, clock).check(r), errRelayAuthNoKey)
	// Malformed headers.
	for _, h := range []string{"v2 t=1 s=AAAA", "v1 t=x s=AAAA", "v1 s=AAAA t=1", "v1 t=1 s=!!!", "v1 t=1 s=AAAA"} {
		r.Header.Set(RelayAuthHeader, h)
		assert.ErrorIs(t, newRelayAuth([][]byte{key}, clock).check(r), errRelayAuthMalformed, h)
	}
}
