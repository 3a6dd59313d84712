package httpapi

// Authentication: optional HTTP basic auth, as Spring Cloud users configure
// it for a Eureka server.
//
// Clients put the credentials in the service URL
// (http://user:password@host:8761/eureka/); fargo (through net/http), the
// Java client and eureka-js-client (through request) turn them into an
// "Authorization: Basic …" header on every request. Users are configured
// with bcrypt hashes, never passwords, and one or both roles: read (GET and
// HEAD: registry reads, /eureka/status, /cluster/members, the dashboard) and
// write (every other method: register, renew, cancel, status and metadata
// changes, the peer batch endpoint, /admin/ changes, dashboard actions). A
// Eureka client needs both. /healthz and /readyz stay open for probes;
// /metrics needs read unless AuthConfig.MetricsPublic.
//
// Cost. bcrypt is slow on purpose (~50 ms at cost 10), and a client sends
// the same header every 30 s. A header that was verified is remembered, by
// its SHA-256, for AuthConfig.CacheTTL, and so is one that failed (a
// misconfigured fleet would otherwise cost 50 ms of CPU per renewal). While
// one request verifies a header, others with the same header wait for its
// answer instead of verifying it again, and at most half the CPUs run bcrypt
// at once, so a flood of wrong passwords slows new logins, not the registry.
// An unknown user name costs a comparison too, so that timing does not tell
// which names exist.
//
// Secrets. Nothing here logs the Authorization header, a password or a hash;
// a failure is logged at debug with its reason and the user name only when
// the name is a configured one (so a password typed into the name field is
// never logged). The cache holds SHA-256 digests of headers, not headers.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Roles is a set of permissions a user has.
type Roles uint8

// The roles.
const (
	// RoleRead allows GET and HEAD requests: registry reads, /eureka/status,
	// /cluster/members, /admin/ reads, the dashboard and (unless
	// AuthConfig.MetricsPublic) /metrics.
	RoleRead Roles = 1 << iota
	// RoleWrite allows every other method: register, renew, cancel, status
	// overrides, metadata, the peer batch endpoint and /admin/ changes.
	RoleWrite
)

// Has reports whether r holds every role in want.
func (r Roles) Has(want Roles) bool { return r&want == want }

// String returns the roles as ParseRoles reads them: "read", "write",
// "read,write" or "" for none.
func (r Roles) String() string {
	var names []string
	if r.Has(RoleRead) {
		names = append(names, "read")
	}
	if r.Has(RoleWrite) {
		names = append(names, "write")
	}
	return strings.Join(names, ",")
}

// ParseRoles reads a comma-separated list of roles: "read", "write",
// "read,write" (spaces allowed). It is an error to name no role.
func ParseRoles(s string) (Roles, error) {
	var r Roles
	for _, name := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "read":
			r |= RoleRead
		case "write":
			r |= RoleWrite
		case "":
		default:
			return 0, fmt.Errorf("httpapi: unknown role %q (want read or write)", strings.TrimSpace(name))
		}
	}
	if r == 0 {
		return 0, fmt.Errorf("httpapi: no role in %q (want read, write or read,write)", s)
	}
	return r, nil
}

// User is one account allowed to call the API.
type User struct {
	// Name is the user name of the basic credentials. It must not contain
	// ':' (basic auth splits name and password at the first one).
	Name string
	// PasswordHash is the bcrypt hash of the password ("$2a$…", "$2b$…" or
	// "$2y$…", as htpasswd -B writes it). Cost 10 verifies in about 50 ms;
	// verified headers are cached (AuthConfig.CacheTTL), so a higher cost
	// slows only the first request of each client.
	PasswordHash string
	// Roles are what the user may do; at least one.
	Roles Roles
}

// ParseUser reads a user from "name:bcrypthash:roles", the form of the
// --auth-users flag and of the lines of an auth file. Roles is a
// comma-separated list (read, write); when absent ("name:bcrypthash", an
// htpasswd line) the user gets read,write.
func ParseUser(s string) (User, error) {
	s = strings.TrimSpace(s)
	name, rest, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return User{}, errors.New("httpapi: user must be name:bcrypthash:roles")
	}
	u := User{Name: name, PasswordHash: rest, Roles: RoleRead | RoleWrite}
	if hash, roles, ok := strings.Cut(rest, ":"); ok {
		r, err := ParseRoles(roles)
		if err != nil {
			return User{}, fmt.Errorf("httpapi: user %q: %s", name, strings.TrimPrefix(err.Error(), "httpapi: "))
		}
		u.PasswordHash, u.Roles = hash, r
	}
	if err := u.validate(); err != nil {
		return User{}, err
	}
	return u, nil
}

// ParseUsers reads an auth file: one ParseUser line per user; blank lines and
// lines starting with '#' are skipped. An htpasswd file made with
// `htpasswd -B` is one (its users get read,write). Errors name the line.
func ParseUsers(data []byte) ([]User, error) {
	var users []User
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		u, err := ParseUser(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		users = append(users, u)
	}
	return users, sc.Err()
}

// validate checks one user; the message never quotes the hash.
func (u User) validate() error {
	switch {
	case u.Name == "":
		return errors.New("httpapi: a user has an empty name")
	case strings.Contains(u.Name, ":"):
		return fmt.Errorf("httpapi: user name %q contains ':'", u.Name)
	case u.Roles == 0 || u.Roles&^(RoleRead|RoleWrite) != 0:
		return fmt.Errorf("httpapi: user %q has no valid role (want read, write or both)", u.Name)
	}
	if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
		return fmt.Errorf("httpapi: user %q: password hash is not a bcrypt hash (make one with "+
			"`htpasswd -nBC 10 %s`): %v", u.Name, u.Name, bcryptReason(err))
	}
	return nil
}

// bcryptReason describes a bcrypt parse error without echoing the input
// (bcrypt's own messages may quote bytes of the hash).
func bcryptReason(err error) string {
	switch {
	case errors.Is(err, bcrypt.ErrHashTooShort):
		return "too short"
	case errors.As(err, new(bcrypt.HashVersionTooNewError)):
		return "unsupported version"
	case errors.As(err, new(bcrypt.InvalidHashPrefixError)):
		return "does not start with $2"
	case errors.As(err, new(bcrypt.InvalidCostError)):
		return "invalid cost"
	}
	return "malformed"
}

// AuthConfig turns HTTP basic authentication on (Config.Auth). A nil
// AuthConfig, or one with no users, leaves the API open.
type AuthConfig struct {
	// Users may call the API; names are unique.
	Users []User
	// MetricsPublic serves /metrics without credentials, for scrapers that
	// cannot send any. Default false: /metrics needs the read role.
	MetricsPublic bool
	// CacheTTL is how long the answer for one Authorization header (right or
	// wrong) is remembered, so that a client's renewals do not pay bcrypt
	// every time. Default 5m; must not be negative.
	CacheTTL time.Duration
	// CacheSize bounds how many verified headers are remembered (and, apart,
	// how many wrong ones). Default 10000.
	CacheSize int
}

// Enabled reports whether c turns authentication on.
func (c *AuthConfig) Enabled() bool { return c != nil && len(c.Users) > 0 }

// Validate reports the first problem with c; a nil c is valid (auth off).
func (c *AuthConfig) Validate() error {
	if c == nil {
		return nil
	}
	seen := make(map[string]bool, len(c.Users))
	for _, u := range c.Users {
		if err := u.validate(); err != nil {
			return err
		}
		if seen[u.Name] {
			return fmt.Errorf("httpapi: user %q is configured twice", u.Name)
		}
		seen[u.Name] = true
	}
	switch {
	case c.CacheTTL < 0:
		return fmt.Errorf("httpapi: auth CacheTTL %v must not be negative", c.CacheTTL)
	case c.CacheSize < 0:
		return fmt.Errorf("httpapi: auth CacheSize %d must not be negative", c.CacheSize)
	}
	return nil
}

// Authentication failures, as the client is told.
var (
	errAuthMissing = &httpError{code: http.StatusUnauthorized,
		msg: "unauthorized: this server requires HTTP basic credentials; put them in the service URL " +
			"(http://user:password@host:8761/eureka/)"}
	errAuthMalformed = &httpError{code: http.StatusUnauthorized,
		msg: "unauthorized: the Authorization header does not hold HTTP basic credentials"}
	errAuthWrong = &httpError{code: http.StatusUnauthorized,
		msg: "unauthorized: wrong user name or password"}
)

// authRealm is the WWW-Authenticate challenge of every 401.
const authRealm = `Basic realm="heureka", charset="UTF-8"`

// authenticator checks credentials against an AuthConfig, with a cache.
type authenticator struct {
	users     map[string]*User
	decoy     []byte // a configured hash, compared for unknown names
	ttl       time.Duration
	size      int
	metricsOK bool          // /metrics is public
	sem       chan struct{} // bounds concurrent bcrypt comparisons
	now       func() time.Time

	mu       sync.Mutex // guards the maps
	good     map[[sha256.Size]byte]authEntry
	bad      map[[sha256.Size]byte]authEntry
	inflight map[[sha256.Size]byte]*authCall

	compares int64 // bcrypt comparisons made (under mu; for tests)
}

// authEntry is one remembered answer: user is nil for wrong credentials.
type authEntry struct {
	user    *User
	name    string // the name sent, when it is a configured user
	expires time.Time
}

// authCall is one verification in progress; waiters read the answer once
// done is closed.
type authCall struct {
	done  chan struct{}
	entry authEntry
}

// newAuthenticator returns nil when c turns auth off.
func newAuthenticator(c *AuthConfig) (*authenticator, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	a := &authenticator{
		users:     make(map[string]*User, len(c.Users)),
		ttl:       c.CacheTTL,
		size:      c.CacheSize,
		metricsOK: c.MetricsPublic,
		sem:       make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
		now:       time.Now,
		good:      make(map[[sha256.Size]byte]authEntry),
		bad:       make(map[[sha256.Size]byte]authEntry),
		inflight:  make(map[[sha256.Size]byte]*authCall),
	}
	if a.ttl == 0 {
		a.ttl = 5 * time.Minute
	}
	if a.size == 0 {
		a.size = 10000
	}
	for i := range c.Users {
		u := c.Users[i]
		a.users[u.Name] = &u
	}
	a.decoy = []byte(c.Users[0].PasswordHash)
	return a, nil
}

// requiredRoles is what r needs: nothing for the probes (and /metrics when
// public), read for GET, HEAD and OPTIONS and for the change stream's
// POST form, write for everything else.
func (a *authenticator) requiredRoles(r *http.Request) Roles {
	switch r.URL.Path {
	case "/healthz", "/readyz":
		return 0
	case "/metrics":
		if a.metricsOK {
			return 0
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return RoleRead
	case http.MethodPost:
		if isStreamPath(r.URL.Path) {
			return RoleRead // a stream with a repair digest: a read (stream_repair.go)
		}
	}
	return RoleWrite
}

// check returns the user the request's credentials name, or the error the
// client gets (401).
func (a *authenticator) check(r *http.Request) (*User, string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, "", errAuthMissing
	}
	if _, _, ok := r.BasicAuth(); !ok {
		return nil, "", errAuthMalformed
	}
	e := a.lookup(h, r)
	if e.user == nil {
		return nil, e.name, errAuthWrong
	}
	return e.user, e.name, nil
}

// lookup answers for header h from the cache, from a verification already
// under way, or by verifying it.
func (a *authenticator) lookup(h string, r *http.Request) authEntry {
	key := sha256.Sum256([]byte(h))
	now := a.now()
	a.mu.Lock()
	if e, ok := a.good[key]; ok && now.Before(e.expires) {
		a.mu.Unlock()
		return e
	}
	if e, ok := a.bad[key]; ok && now.Before(e.expires) {
		a.mu.Unlock()
		return e
	}
	if c, ok := a.inflight[key]; ok {
		a.mu.Unlock()
		<-c.done
		return c.entry
	}
	c := &authCall{done: make(chan struct{})}
	a.inflight[key] = c
	a.mu.Unlock()

	c.entry = a.verify(r)

	a.mu.Lock()
	delete(a.inflight, key)
	a.compares++
	c.entry.expires = a.now().Add(a.ttl)
	if c.entry.user != nil {
		remember(a.good, key, c.entry, a.size, now)
	} else {
		remember(a.bad, key, c.entry, a.size, now)
	}
	a.mu.Unlock()
	close(c.done)
	return c.entry
}

// verify compares the request's password with its user's hash; an unknown
// user is compared with a decoy hash so that both take as long.
func (a *authenticator) verify(r *http.Request) authEntry {
	name, pass, _ := r.BasicAuth()
	a.sem <- struct{}{}
	defer func() { <-a.sem }()
	u, known := a.users[name]
	hash := a.decoy
	if known {
		hash = []byte(u.PasswordHash)
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(pass))
	switch {
	case !known:
		return authEntry{}
	case err != nil:
		return authEntry{name: name}
	}
	return authEntry{user: u, name: name}
}

// remember stores e under key in m, making room when m is full: expired
// entries go first, then arbitrary ones (map order).
func remember(m map[[sha256.Size]byte]authEntry, key [sha256.Size]byte, e authEntry, size int, now time.Time) {
	if len(m) >= size {
		for k, old := range m {
			if !now.Before(old.expires) {
				delete(m, k)
			}
		}
		for k := range m {
			if len(m) < size {
				break
			}
			delete(m, k)
		}
	}
	m[key] = e
}

// protect wraps next with authentication and authorisation (a nil
// authenticator lets everything through).
func (s *Server) protect(next http.Handler) http.Handler {
	a := s.auth
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := a.requiredRoles(r)
		if need == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if ra, ok := s.cfg.Regions.(RelayAuthenticator); ok && isRelayPath(r) {
			// A node's relay request (regions_relay.go): its signature
			// alone decides.
			signed, err := ra.AuthenticateRelay(r)
			switch {
			case signed && err == nil:
				next.ServeHTTP(w, r)
				return
			case signed:
				s.log.Warn("relay request refused", "path", r.URL.Path, "remote", r.RemoteAddr, "reason", err.Error())
				w.Header().Set("WWW-Authenticate", authRealm)
				s.fail(w, r, &httpError{code: http.StatusUnauthorized, msg: "unauthorized: " + err.Error()})
				return
			case r.Header.Get("Authorization") == "":
				w.Header().Set("WWW-Authenticate", authRealm)
				s.fail(w, r, errRelayUnsigned)
				return
			}
		}
		u, name, err := a.check(r)
		if err != nil {
			var attrs []any
			if name != "" {
				attrs = append(attrs, "user", name)
			}
			s.log.Debug("request refused", append(attrs, "method", r.Method, "path", r.URL.Path,
				"remote", r.RemoteAddr, "reason", err.Error())...)
			w.Header().Set("WWW-Authenticate", authRealm)
			s.fail(w, r, err)
			return
		}
		if !u.Roles.Has(need) {
			s.log.Debug("request forbidden", "user", u.Name, "method", r.Method, "path", r.URL.Path,
				"remote", r.RemoteAddr, "has", u.Roles.String(), "needs", need.String())
			s.fail(w, r, &httpError{code: http.StatusForbidden, msg: fmt.Sprintf(
				"forbidden: user %q lacks the %s role, which %s %s needs (it has: %s)",
				u.Name, need.String(), r.Method, r.URL.Path, u.Roles.String())})
			return
		}
		next.ServeHTTP(w, r)
	})
}
