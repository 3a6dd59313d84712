package httpapi

// Blocking reads
//
// GET …/apps/delta, …/apps/{app}, …/vips/{vip} and …/svips/{svip} answer
// with an ETag, a hash of the document they return (watch_etag.go). A
// client that sends that tag back in If-None-Match with a wait query
// parameter (wait=30s, or wait=30 for seconds) is held until the document
// differs, then answered 200 with it and its new tag, or until the wait
// ends, then answered 304 Not Modified. Requests without wait are served
// as before, byte for byte, with the ETag header added; one whose
// If-None-Match matches gets 304 at once, as HTTP caches expect (no stock
// Eureka client sends If-None-Match, so none sees a 304).
//
// The wait is capped at PushConfig.MaxWait and shortened by a random
// jitter (WaitJitter). The readiness gate, authentication and the rate
// limit run before a read waits, like for any read; a node that stops
// being ready while a read waits answers it 403.
//
// Over HTTP/1.1 a read that must wait is parked (watch_park.go): its
// handler hijacks the connection and returns, and the parker holds the
// read without a goroutine of its own but one small reader that sees its
// client leave. On a change one goroutine compares each watched
// document's tag once, renders each changed document once, and shared
// writers send those bytes, byte for byte what the handler below writes,
// to every read whose tag is stale; the end of the wait answers 304. The
// client's next request on the connection, when it is another blocking
// read, is read and served there, through the same handler
// (watch_direct.go); anything else goes back to the server
// (watch_handoff.go). An idle parked read costs about 6–7 KB, not 27 KB
// (BENCHMARKS.md, "Push to applications").
//
// Otherwise (HTTP/2, HTTP/1.0, a request with a body or "Connection:
// close", PushConfig.BlockingHijack off) the handler waits itself
// (block). It holds no goroutine but its own and checks nothing on a
// timer: it sleeps on the shared change channel (watch_changes.go), its
// wait timer, its context (the client went away) and the server's
// shutdown (watch_shutdown.go), and on each change compares the tag of
// what it would serve now with the client's. It clears the server's read
// deadline (http.Server's ReadTimeout would otherwise cancel it mid-wait)
// and sets its write deadline to the wait plus blockingWriteAllowance.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heureka/heureka/actors/view"
)

// blockingWriteAllowance is how long a blocking read may take to write its
// answer once its wait is over (node's default WriteTimeout).
const blockingWriteAllowance = 2 * time.Minute

// push is a Server's shared state of blocking reads and the stream.
type push struct {
	cfg       PushConfig
	changes   *changes
	etags     etags
	shutdowns shutdowns
	hub       *hub
	streamer  *streamer
	parker    *parker
	metrics   *pushMetrics
}

// newPush validates cfg (nil: DefaultPushConfig) and builds the push side
// over the view; it panics on an invalid config, like New does for Auth
// and RateLimit.
func newPush(cfg *PushConfig, v Snapshots, reg *prometheus.Registry) *push {
	c := DefaultPushConfig()
	if cfg != nil {
		c = *cfg
	}
	if err := c.Validate(); err != nil {
		panic(err)
	}
	p := &push{cfg: c, changes: newChanges(v, c.ChangeCheckInterval), metrics: newPushMetrics(reg)}
	p.hub = newHub(p, v)
	p.streamer = newStreamer(p)
	p.parker = newParker(p)
	return p
}

// serveWatched serves a watchable read: plain, 304, or held (see the file
// comment).
func (s *Server) serveWatched(w http.ResponseWriter, r *http.Request, res resource) {
	f, gz := negotiate(r)
	wait, err := s.push.waitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	snap := s.cfg.View.Snapshot()
	tag, ok := s.push.etags.of(snap, res, f)
	inm := headerValue(r.Header, "If-None-Match")
	switch {
	case !ok || inm == "" || !matchETag(inm, tag):
		writeResource(w, snap, res, f, gz, tag, ok)
	case wait <= 0:
		writeNotModified(w, tag)
	case s.push.cfg.BlockingHijack && s.push.parker.park(s, w, r, res, f, gz, inm, wait):
		// parked: the parker answers it (watch_park.go)
	default:
		s.block(w, r, res, f, gz, inm, wait)
	}
}

// block holds a read whose If-None-Match matches until what it serves
// changes, its wait ends, the client leaves or the server shuts down.
func (s *Server) block(w http.ResponseWriter, r *http.Request, res resource, f view.Format, gz bool,
	inm string, wait time.Duration) {
	p := s.push
	p.metrics.blockingWaiting.Inc()
	defer p.metrics.blockingWaiting.Dec()
	p.changes.acquire()
	defer p.changes.release()
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // ErrNotSupported: no deadline to clear
	_ = rc.SetWriteDeadline(time.Now().Add(wait + blockingWriteAllowance))
	timer := time.NewTimer(wait)
	defer timer.Stop()
	shutdown := p.shutdowns.of(r)
	for {
		changed := p.changes.wait() // before reading the snapshot: see watch_changes.go
		if s.cfg.Ready != nil && !s.cfg.Ready() {
			s.fail(w, r, errNotReady)
			return
		}
		snap := s.cfg.View.Snapshot()
		tag, ok := p.etags.of(snap, res, f)
		if !ok || !matchETag(inm, tag) {
			p.metrics.changed.Inc()
			writeResource(w, snap, res, f, gz, tag, ok)
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			p.metrics.notModified.Inc()
			writeNotModified(w, tag)
			return
		case <-shutdown:
			p.metrics.notModified.Inc()
			writeNotModified(w, tag)
			return
		case <-r.Context().Done():
			return // nobody reads the answer
		}
	}
}

// writeResource writes what res serves in snap, with its tag; ok false is
// an unknown application: Eureka's empty 404, without a tag.
func writeResource(w http.ResponseWriter, snap *view.Snapshot, res resource, f view.Format, gz bool, tag string, ok bool) {
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header()["Etag"] = []string{tag}
	switch res.kind {
	case resDelta:
		writeBody(w, f, gz, snap.DeltaBody(f, gz))
	case resApp:
		doc, _ := snap.AppDocument(res.name, f, gz) // it exists: ok
		writeDoc(w, f, gz, doc)
	case resVIP:
		writeDoc(w, f, gz, snap.VIP(res.name, f, gz))
	default:
		writeDoc(w, f, gz, snap.SVIP(res.name, f, gz))
	}
}

// writeNotModified answers 304 with the tag and the Vary of a cached read.
func writeNotModified(w http.ResponseWriter, tag string) {
	h := w.Header()
	h["Etag"] = []string{tag}
	h["Vary"] = varyValue
	w.WriteHeader(http.StatusNotModified)
}

// waitParam reads the wait query parameter: 0 when absent, else capped at
// MaxWait and shortened by the jitter; a 400 error when it is not a
// duration or is negative.
func (p *push) waitParam(r *http.Request) (time.Duration, error) {
	if r.URL.RawQuery == "" {
		return 0, nil
	}
	v, ok := queryValue(r.URL.RawQuery, "wait")
	if !ok {
		return 0, nil
	}
	d, err := parseWait(v, p.cfg.MaxWait)
	if err != nil {
		return 0, err
	}
	if j := min(p.cfg.WaitJitter, d/8); j > 0 {
		d -= rand.N(j)
	}
	return d, nil
}

// queryValue is url.Values' Get of what URL.Query parses from raw, for
// one key, whether it is there: pairs split at "&", one with a ";"
// dropped, keys and values unescaped (a pair that does not unescape
// dropped). It builds no map: a blocking read asks for one key on every
// request.
func queryValue(raw, key string) (string, bool) {
	if strings.Count(raw, "&") >= 1000 { // URL.Query's own limits apply
		v, ok := (url.Values)(queryOf(raw))[key]
		if !ok {
			return "", false
		}
		return v[0], true
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.IndexByte(pair, ';') >= 0 {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			var err error
			if k, err = url.QueryUnescape(k); err != nil {
				continue
			}
		}
		if strings.ContainsAny(v, "%+") {
			var err error
			if v, err = url.QueryUnescape(v); err != nil {
				continue
			}
		}
		if k == key {
			return v, true
		}
	}
	return "", false
}

// queryOf is URL.Query of a raw query.
func queryOf(raw string) url.Values {
	u := url.URL{RawQuery: raw}
	return u.Query()
}

// parseWait parses a wait value, whole seconds ("30") or a Go duration
// ("30s", "1m", "1500ms"), and caps it at maxWait.
func parseWait(s string, maxWait time.Duration) (time.Duration, error) {
	var d time.Duration
	n, err := int64(0), errNotInteger
	if isInteger(s) { // else ParseInt's error would be an allocation per read
		n, err = strconv.ParseInt(s, 10, 64)
	}
	if err == nil {
		if n > int64(maxWait/time.Second)+1 {
			n = int64(maxWait/time.Second) + 1 // capped below; no overflow
		}
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, badRequest(fmt.Sprintf("wait %s is not a duration: give whole seconds (wait=30) or a duration with its unit (wait=30s, wait=1m, wait=1500ms)",
			strconv.Quote(s)))
	}
	if d < 0 {
		return 0, badRequest(fmt.Sprintf("wait %s must not be negative", strconv.Quote(s)))
	}
	return min(d, maxWait), nil
}

// errNotInteger stands for ParseInt's error on what isInteger refuses.
var errNotInteger = errors.New("not an integer")

// isInteger reports whether s has the form strconv.ParseInt takes in base
// 10: an optional sign, then digits.
func isInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
