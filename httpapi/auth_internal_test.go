package httpapi

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// fakeClock is a settable clock for the auth cache.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestAuthenticator(t *testing.T, c AuthConfig) (*authenticator, *fakeClock) {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	require.NoError(t, err)
	c.Users = []User{{Name: "u", PasswordHash: string(hash), Roles: RoleRead | RoleWrite}}
	a, err := newAuthenticator(&c)
	require.NoError(t, err)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	a.now = clk.now
	return a, clk
}

func authRequest(user, pass string) *http.Request {
	r := httptest.NewRequest(http.MethodPut, "/eureka/apps/A/1", nil)
	r.SetBasicAuth(user, pass)
	return r
}

func (a *authenticator) comparisons() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.compares
}

// TestAuthCache: a header is verified with bcrypt once per CacheTTL, right or
// wrong; concurrent requests with a new header share one verification.
func TestAuthCache(t *testing.T) {
	a, clk := newTestAuthenticator(t, AuthConfig{CacheTTL: time.Minute})

	for range 50 {
		u, _, err := a.check(authRequest("u", "pw"))
		require.NoError(t, err)
		assert.Equal(t, "u", u.Name)
	}
	assert.EqualValues(t, 1, a.comparisons(), "renewals do not pay bcrypt every time")

	for range 20 {
		_, name, err := a.check(authRequest("u", "bad"))
		assert.Equal(t, errAuthWrong, err)
		assert.Equal(t, "u", name)
	}
	assert.EqualValues(t, 2, a.comparisons(), "a wrong header is remembered too")

	clk.advance(time.Minute)
	_, _, err := a.check(authRequest("u", "pw"))
	require.NoError(t, err)
	assert.EqualValues(t, 3, a.comparisons(), "an expired entry is verified again")

	// Unknown names are compared too (against a decoy) and not named.
	_, name, err := a.check(authRequest("ghost", "pw"))
	assert.Equal(t, errAuthWrong, err)
	assert.Empty(t, name)
	assert.EqualValues(t, 4, a.comparisons())

	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			_, _, err := a.check(authRequest("u", "pw"+"")) // same header as above, cached
			assert.NoError(t, err)
			_, _, err = a.check(authRequest("u", "other"))
			assert.Equal(t, errAuthWrong, err)
		})
	}
	wg.Wait()
	assert.EqualValues(t, 5, a.comparisons(), "30 concurrent requests with one new header: one comparison")

	_, _, err = a.check(httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, errAuthMissing, err)
}

// TestAuthCacheBounded: the cache never holds more than CacheSize entries of
// each kind.
func TestAuthCacheBounded(t *testing.T) {
	a, clk := newTestAuthenticator(t, AuthConfig{CacheSize: 3})
	for i := range 10 {
		_, _, err := a.check(authRequest("u", string(rune('a'+i))))
		assert.Equal(t, errAuthWrong, err)
		clk.advance(time.Second)
	}
	_, _, err := a.check(authRequest("u", "pw"))
	require.NoError(t, err)
	a.mu.Lock()
	defer a.mu.Unlock()
	assert.LessOrEqual(t, len(a.bad), 3)
	assert.Len(t, a.good, 1, "wrong headers do not push out right ones")
}

func TestRequiredRoles(t *testing.T) {
	a, _ := newTestAuthenticator(t, AuthConfig{})
	pub, _ := newTestAuthenticator(t, AuthConfig{MetricsPublic: true})
	for _, tc := range []struct {
		method, path string
		want, public Roles
	}{
		{"GET", "/healthz", 0, 0},
		{"GET", "/readyz", 0, 0},
		{"GET", "/metrics", RoleRead, 0},
		{"GET", "/healthz/", RoleRead, RoleRead},
		{"GET", "/eureka/apps", RoleRead, RoleRead},
		{"HEAD", "/", RoleRead, RoleRead},
		{"GET", "/", RoleRead, RoleRead},
		{"GET", "/admin/self-preservation", RoleRead, RoleRead},
		{"PUT", "/admin/self-preservation", RoleWrite, RoleWrite},
		{"POST", "/eureka/apps/A", RoleWrite, RoleWrite},
		{"PUT", "/eureka/apps/A/1", RoleWrite, RoleWrite},
		{"DELETE", "/eureka/apps/A/1", RoleWrite, RoleWrite},
		{"POST", "/eureka/peerreplication/batch/", RoleWrite, RoleWrite},
		{"POST", "/eureka/stream", RoleRead, RoleRead}, // a repair digest: a read
		{"POST", "/eureka/v2/stream", RoleRead, RoleRead},
		{"POST", "/eureka/stream/x", RoleWrite, RoleWrite},
		{"PATCH", "/healthzz", RoleWrite, RoleWrite},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		assert.Equal(t, tc.want, a.requiredRoles(r), "%s %s", tc.method, tc.path)
		assert.Equal(t, tc.public, pub.requiredRoles(r), "%s %s (metrics public)", tc.method, tc.path)
	}
}
