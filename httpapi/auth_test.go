package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// Test users: one per role set. The passwords are long and distinctive so
// that the log check below finds any trace of them.
const (
	readerPass = "reader-Secret-7d1f"
	writerPass = "writer-Secret-93ac"
	adminPass  = "admin-Secret-4b2e"
)

// hashPassword is bcrypt at its minimum cost: the tests need the format,
// not the slowness.
func hashPassword(t testing.TB, pass string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

// testAuth returns users reader (read), writer (write) and admin (both).
func testAuth(t testing.TB) *httpapi.AuthConfig {
	return &httpapi.AuthConfig{Users: []httpapi.User{
		{Name: "reader", PasswordHash: hashPassword(t, readerPass), Roles: httpapi.RoleRead},
		{Name: "writer", PasswordHash: hashPassword(t, writerPass), Roles: httpapi.RoleWrite},
		{Name: "admin", PasswordHash: hashPassword(t, adminPass), Roles: httpapi.RoleRead | httpapi.RoleWrite},
	}}
}

// basic is the Authorization header value for user and pass.
func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestAuth(t *testing.T) {
	h, _ := startAPI(t, nil, func(c *httpapi.Config) { c.Auth = testAuth(t) })
	inst := javaInstance("auth-app", 1)
	body := inst.json()
	regPath := "/eureka/apps/" + inst.app()
	instPath := regPath + "/" + inst.id()
	json := []string{"Content-Type", ctJSON, "Accept", ctJSON}
	as := func(user, pass string, hdr ...string) []string {
		return append([]string{"Authorization", basic(user, pass)}, hdr...)
	}

	t.Run("no credentials: 401 with a challenge and a message", func(t *testing.T) {
		for _, p := range []string{"/eureka/apps", "/eureka/v2/apps/delta", "/cluster/members", "/eureka/status", "/metrics", "/admin/self-preservation", "/admin/eviction"} {
			res := h.get(p, "")
			assert.Equal(t, http.StatusUnauthorized, res.code, p)
			assert.Equal(t, `Basic realm="heureka", charset="UTF-8"`, res.header.Get("WWW-Authenticate"), p)
			assert.Contains(t, string(res.body), "requires HTTP basic credentials", p)
			assert.Contains(t, string(res.body), "http://user:password@host:8761/eureka/", p)
		}
		res := h.do(http.MethodPost, regPath, body, json...)
		assert.Equal(t, http.StatusUnauthorized, res.code)
	})

	t.Run("probes stay open", func(t *testing.T) {
		assert.Equal(t, http.StatusOK, h.get("/healthz", "").code)
		assert.Equal(t, http.StatusOK, h.get("/readyz", "").code)
	})

	t.Run("wrong password, unknown user, not basic: 401", func(t *testing.T) {
		for _, hdr := range []string{basic("admin", "wrong"), basic("nobody", adminPass), basic("admin", ""),
			"Bearer abc", "Basic !!!"} {
			res := h.do(http.MethodGet, "/eureka/apps", nil, "Authorization", hdr)
			assert.Equal(t, http.StatusUnauthorized, res.code, hdr)
			assert.NotEmpty(t, res.header.Get("WWW-Authenticate"), hdr)
			if strings.HasPrefix(hdr, "Basic ") && hdr != "Basic !!!" {
				assert.Equal(t, "unauthorized: wrong user name or password", string(res.body), hdr)
			} else {
				assert.Contains(t, string(res.body), "does not hold HTTP basic credentials", hdr)
			}
		}
	})

	t.Run("read role reads, cannot write", func(t *testing.T) {
		assert.Equal(t, http.StatusOK, h.do(http.MethodGet, "/eureka/apps", nil, as("reader", readerPass, json...)...).code)
		assert.Equal(t, http.StatusOK, h.do(http.MethodGet, "/metrics", nil, as("reader", readerPass)...).code)
		res := h.do(http.MethodPost, regPath, body, as("reader", readerPass, json...)...)
		assert.Equal(t, http.StatusForbidden, res.code)
		assert.Equal(t, `forbidden: user "reader" lacks the write role, which POST /eureka/apps/AUTH-APP needs (it has: read)`, string(res.body))
		assert.Empty(t, res.header.Get("WWW-Authenticate"), "a 403 is not a challenge")
		res = h.do(http.MethodPut, "/admin/self-preservation?enabled=false", nil, as("reader", readerPass)...)
		assert.Equal(t, http.StatusForbidden, res.code, "admin changes need write")
	})

	t.Run("write role writes, cannot read", func(t *testing.T) {
		res := h.do(http.MethodPost, regPath, body, as("writer", writerPass, json...)...)
		require.Equal(t, http.StatusNoContent, res.code, "%s", res)
		assert.Equal(t, http.StatusOK, h.do(http.MethodPut, instPath, nil, as("writer", writerPass)...).code, "renew")
		res = h.do(http.MethodGet, instPath, nil, as("writer", writerPass, json...)...)
		assert.Equal(t, http.StatusForbidden, res.code)
		assert.Contains(t, string(res.body), "lacks the read role")
	})

	t.Run("both roles: the whole client lifecycle", func(t *testing.T) {
		a := func(hdr ...string) []string { return as("admin", adminPass, hdr...) }
		assert.Equal(t, http.StatusOK, h.do(http.MethodGet, instPath, nil, a(json...)...).code)
		assert.Equal(t, http.StatusOK, h.do(http.MethodPut, instPath+"/status?value=OUT_OF_SERVICE", nil, a()...).code)
		assert.Equal(t, http.StatusOK, h.do(http.MethodPut, "/admin/self-preservation?enabled=true", nil, a()...).code)
		assert.Equal(t, http.StatusOK, h.do(http.MethodDelete, instPath, nil, a()...).code)
	})

	t.Run("credentials in the service URL", func(t *testing.T) {
		// net/http sends the URL's user info as basic credentials, which is
		// what fargo and Spring users rely on.
		u, err := url.Parse(h.base + "/eureka/apps")
		require.NoError(t, err)
		u.User = url.UserPassword("admin", adminPass)
		res, err := h.client.Get(u.String())
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode)
		u.User = url.UserPassword("admin", "nope")
		res, err = h.client.Get(u.String())
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	})
}

func TestAuthMetricsPublic(t *testing.T) {
	h, _ := startAPI(t, nil, func(c *httpapi.Config) {
		c.Auth = testAuth(t)
		c.Auth.MetricsPublic = true
	})
	assert.Equal(t, http.StatusOK, h.get("/metrics", "").code)
	assert.Equal(t, http.StatusUnauthorized, h.get("/eureka/apps", "").code)
}

func TestAuthOff(t *testing.T) {
	for name, auth := range map[string]*httpapi.AuthConfig{"nil": nil, "no users": {}} {
		t.Run(name, func(t *testing.T) {
			h, _ := startAPI(t, nil, func(c *httpapi.Config) { c.Auth = auth })
			h.register(javaInstance("open-app", 1))
			assert.Equal(t, http.StatusOK, h.get("/eureka/apps", ctJSON).code)
			// Credentials nobody checks do no harm.
			assert.Equal(t, http.StatusOK, h.do(http.MethodGet, "/eureka/apps", nil, "Authorization", basic("x", "y")).code)
		})
	}
}

// TestAuthNeverLogsSecrets runs a node with auth at debug level through
// successes, failures, a password typed in the user field and a bad node
// config, and looks for any trace of the secrets in the log.
func TestAuthNeverLogsSecrets(t *testing.T) {
	auth := testAuth(t)
	h := startNode(t, func(c *node.Config) { c.Auth = auth })
	json := []string{"Content-Type", ctJSON, "Accept", ctJSON}
	inst := javaInstance("secret-app", 1)
	headers := []string{
		basic("admin", adminPass), basic("reader", readerPass), basic("writer", writerPass),
		basic("admin", "wrong-Secret-55aa"), basic(adminPass, adminPass), basic("nobody", "other-Secret-77bb"),
	}
	for _, hdr := range headers {
		h.do(http.MethodPost, "/eureka/apps/"+inst.app(), inst.json(), append([]string{"Authorization", hdr}, json...)...)
		h.do(http.MethodGet, "/eureka/apps/"+inst.app(), nil, append([]string{"Authorization", hdr}, json...)...)
		h.do(http.MethodDelete, "/eureka/apps/"+inst.app()+"/"+inst.id(), nil, "Authorization", hdr)
	}
	logs := h.logs.String()
	require.Contains(t, logs, "request refused", "the failures were logged (at debug)")
	secrets := []string{adminPass, readerPass, writerPass, "wrong-Secret-55aa", "other-Secret-77bb", "nobody"}
	for _, hdr := range headers {
		secrets = append(secrets, strings.TrimPrefix(hdr, "Basic "))
	}
	for _, u := range auth.Users {
		secrets = append(secrets, u.PasswordHash, u.PasswordHash[7:29]) // the hash and its salt
	}
	for _, s := range secrets {
		assert.NotContains(t, logs, s)
	}

	// A bad configuration is refused without quoting the hash.
	bad := node.DefaultConfig("bad")
	bad.HTTPAddr = "127.0.0.1:0"
	var buf bytes.Buffer
	bad.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bad.Auth = &httpapi.AuthConfig{Users: []httpapi.User{{Name: "x", PasswordHash: "$2a$10$notAHash" + adminPass, Roles: httpapi.RoleRead}}}
	_, err := node.Start(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `user "x": password hash is not a bcrypt hash`)
	assert.NotContains(t, err.Error(), adminPass)
	assert.NotContains(t, buf.String(), adminPass)
}

func TestParseUser(t *testing.T) {
	hash := hashPassword(t, "pw")
	// htpasswd -B writes $2y$; bcrypt reads it as $2a$/$2b$.
	hashY := "$2y$" + hash[4:]
	for _, tc := range []struct {
		in    string
		name  string
		roles httpapi.Roles
		err   string
	}{
		{in: "alice:" + hash + ":read,write", name: "alice", roles: httpapi.RoleRead | httpapi.RoleWrite},
		{in: " bob:" + hash + ":read ", name: "bob", roles: httpapi.RoleRead},
		{in: "carl:" + hash + ":WRITE", name: "carl", roles: httpapi.RoleWrite},
		{in: "dora:" + hashY, name: "dora", roles: httpapi.RoleRead | httpapi.RoleWrite},
		{in: "eve", err: "name:bcrypthash:roles"},
		{in: ":" + hash, err: "name:bcrypthash:roles"},
		{in: "fay:" + hash + ":admin", err: `unknown role "admin"`},
		{in: "gus:" + hash + ":", err: "no role"},
		{in: "hal:plaintext:read", err: `user "hal": password hash is not a bcrypt hash`},
	} {
		u, err := httpapi.ParseUser(tc.in)
		if tc.err != "" {
			if assert.Error(t, err, tc.in) {
				assert.Contains(t, err.Error(), tc.err, tc.in)
				assert.NotContains(t, err.Error(), "plaintext", "the hash is never quoted")
			}
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.name, u.Name)
		assert.Equal(t, tc.roles, u.Roles)
	}

	// A $2y$ hash verifies like the $2a$ one it was made from.
	u, err := httpapi.ParseUser("dora:" + hashY)
	require.NoError(t, err)
	h, _ := startAPI(t, nil, func(c *httpapi.Config) { c.Auth = &httpapi.AuthConfig{Users: []httpapi.User{u}} })
	assert.Equal(t, http.StatusOK, h.do(http.MethodGet, "/eureka/apps", nil, "Authorization", basic("dora", "pw")).code)

	users, err := httpapi.ParseUsers([]byte("# heureka users\n\nalice:" + hash + ":read\n  bob:" + hash + "\n"))
	require.NoError(t, err)
	require.Len(t, users, 2)
	assert.Equal(t, httpapi.RoleRead, users[0].Roles)
	assert.Equal(t, httpapi.RoleRead|httpapi.RoleWrite, users[1].Roles)
	_, err = httpapi.ParseUsers([]byte("alice:" + hash + "\n#\nbob:x:read\n"))
	assert.ErrorContains(t, err, "line 3:")

	cfg := &httpapi.AuthConfig{Users: []httpapi.User{users[0], users[0]}}
	assert.ErrorContains(t, cfg.Validate(), `user "alice" is configured twice`)
	assert.Equal(t, "read,write", (httpapi.RoleRead | httpapi.RoleWrite).String())
}
