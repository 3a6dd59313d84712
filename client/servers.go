package client

// Failover across servers
//
// Like the Java client's RetryableEurekaHttpClient, the client sticks to
// one server while it answers and moves on, in the configured order, when
// it does not: a connection error, a timeout or a 5xx (the server is
// failing or refusing writes, as Heureka does when its clock is behind its
// peers'), and, for reads, a 403 (Eureka and Heureka refuse reads with 403
// until they are ready). Any other answer, 404 included, is the server's
// word on the request and is returned to the caller. One request tries
// each server at most once, starting with the current one; the server that
// answered becomes the current one for the next request.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// server is one of Config.ServerURLs.
type server struct {
	base       string // scheme://host/path, without the trailing slash
	user, pass string // basic auth; user "" sends none
}

// servers sends requests with failover.
type servers struct {
	list    []server
	http    *http.Client
	timeout time.Duration // Config.RequestTimeout

	mu  sync.Mutex
	cur int // index into list of the server that answered last
}

// newServers builds the server list of a validated cfg.
func newServers(cfg *Config) *servers {
	s := &servers{http: cfg.HTTPClient, timeout: cfg.RequestTimeout}
	if s.http == nil {
		s.http = &http.Client{}
	}
	for _, raw := range cfg.ServerURLs {
		u, _ := parseServerURL(raw) // validated
		sv := server{user: cfg.Username, pass: cfg.Password}
		if u.User != nil {
			sv.user = u.User.Username()
			sv.pass, _ = u.User.Password()
			u.User = nil
		}
		sv.base = strings.TrimSuffix(u.String(), "/")
		s.list = append(s.list, sv)
	}
	return s
}

// request is one request, replayable on each server.
type request struct {
	method string
	path   string // below the base URL, starting with "/": "/apps/ORDERS"
	query  url.Values
	header http.Header
	body   []byte
	wait   time.Duration // added to the per-server timeout (blocking reads)
}

// read reports whether r is a read, which fails over on 403 too.
func (r *request) read() bool { return r.method == http.MethodGet }

// response is a server's answer, its body read.
type response struct {
	code   int
	header http.Header
	body   []byte
	server string // the base URL that answered
}

// maxBody bounds the body of an answer the client reads (a registry
// document for one application or VIP is far smaller).
const maxBody = 64 << 20

// do sends r to the current server and, on failure, to the next ones in
// order; it returns the first answer that is not a failure, or an error
// that wraps the last failure.
func (s *servers) do(ctx context.Context, r *request) (*response, error) {
	s.mu.Lock()
	start := s.cur
	s.mu.Unlock()
	var last error
	for i := range s.list {
		idx := (start + i) % len(s.list)
		res, err := s.send(ctx, &s.list[idx], r)
		if err == nil && !failed(r, res.code) {
			s.mu.Lock()
			s.cur = idx
			s.mu.Unlock()
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			err = &StatusError{Method: r.method, URL: s.list[idx].base + r.path, Code: res.code, Body: string(res.body)}
		}
		last = err
	}
	return nil, fmt.Errorf("client: %s %s: no server answered (%d tried): %w", r.method, r.path, len(s.list), last)
}

// failed reports whether code sends r on to the next server.
func failed(r *request, code int) bool {
	return code >= 500 || (code == http.StatusForbidden && r.read())
}

// send sends r to one server, within the request timeout.
func (s *servers) send(ctx context.Context, sv *server, r *request) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout+r.wait)
	defer cancel()
	u := sv.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, u, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if sv.user != "" {
		req.SetBasicAuth(sv.user, sv.pass)
	}
	res, err := s.http.Do(req)
	if err != nil {
		return nil, err // *url.Error names the method and URL
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: reading the answer: %w", r.method, u, err)
	}
	return &response{code: res.StatusCode, header: res.Header, body: b, server: sv.base}, nil
}

// StatusError is an answer with a status code the operation did not
// expect.
type StatusError struct {
	Method, URL string
	Code        int
	Body        string // the start of the answer's body
}

func (e *StatusError) Error() string {
	b := e.Body
	if len(b) > 200 {
		b = b[:200] + "…"
	}
	return fmt.Sprintf("client: %s %s: status %d %s", e.Method, e.URL, e.Code, strings.TrimSpace(b))
}

// Sentinel errors.
var (
	// ErrNotRegistered is returned by Renew, Cancel and SetStatus when the
	// server does not know the instance (404): register it again.
	ErrNotRegistered = errors.New("client: instance not registered")
	// ErrRunning is returned by Run when it is already running.
	ErrRunning = errors.New("client: Run is already running")
)
