package httpapi

// The change stream
//
// GET …/stream (under every base path) is a Server-Sent Events stream of
// the registry's changes (text/event-stream):
//
//	id: 5f1c…-41
//	event: snapshot
//	data: {"applications":{"versions__delta":"1","apps__hashcode":"UP_3_",…}}
//
//	id: 5f1c…-42
//	event: delta
//	data: {"applications":{"versions__delta":"42","apps__hashcode":"UP_4_",…}}
//
//	: keep-alive
//
// A snapshot event carries the /apps document (JSON); a delta event a
// Eureka delta document of the changes since the previous event
// (stream_event.go). Query parameters app= and vip= (each repeatable, or
// a comma-separated list) restrict the stream to those applications and
// the instances of those VIPs. Last-Event-ID resumes (stream_hub.go).
// A comment line is written every PushConfig.StreamKeepAlive while
// nothing else is; a watcher that judges the stream's liveness on a
// shorter clock asks for keep-alives at least every keepalive= (a Go
// duration such as 5s): it gets min(keepalive, StreamKeepAlive), but not
// more often than once a second (or StreamKeepAlive, if shorter), so that
// no watcher can make the node write for nothing at will. A federated
// region's follower asks for a third of its stale bound, so that a quiet
// healthy region never looks stale.
//
// A watcher that asks for it (encoding=gzip, and an Accept-Encoding that
// takes gzip; package streamzip says why Accept-Encoding alone does not
// do) gets the stream gzip-compressed for its connection alone
// (Content-Encoding: gzip), each write ended by a sync flush, so that no
// event waits for the next; every other watcher gets the plain frames the
// hub encodes once and shares. A federated region's follower asks.
//
// Over HTTP/1.x the handler hijacks the connection and returns; shared
// writers serve the stream from then on (stream_conn.go). Otherwise (HTTP/2,
// or PushConfig.StreamHijack off) the handler is the watcher's only
// goroutine: it sleeps on its
// watcher's notification, its keep-alive ticker, its context and the
// server's shutdown, and writes what the hub queued. Every write has a
// deadline of StreamWriteTimeout (http.ResponseController), so a client
// that stops reading loses its connection instead of holding the handler;
// the server's read deadline is cleared (http.Server's ReadTimeout would
// otherwise cancel the request after a minute).
//
// POST …/stream with a digest of the watcher's copy as its body is the
// same stream, whose first event repairs that copy instead of replacing
// it (stream_repair.go).
//
// Authentication and the readiness gate run before the handler, as for
// every read; a connection takes a full fetch's tokens from the rate
// limiter (Config.RateLimit). A HEAD gets the headers and no stream.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heureka/heureka/internal/appdigest"
	"github.com/heureka/heureka/internal/streamzip"
)

// maxFilterValues bounds the app and vip values of one stream.
const maxFilterValues = 256

var (
	eventStreamValue = []string{"text/event-stream"}
	noCacheValue     = []string{"no-cache"}
	noBufferingValue = []string{"no"}
	keepAliveComment = []byte(": keep-alive\n\n")
)

// stream serves GET …/stream.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := parseFilter(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	keepAlive, err := streamKeepAlive(q, s.push.cfg.StreamKeepAlive)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// A connection costs what a full fetch does (it starts with a
	// snapshot, and a reconnecting crowd is what the limit is for), so it
	// takes the tokens of one; the rate limiter's own pattern, Eureka's,
	// does not know this path.
	if s.limiter != nil && !s.limiter.allow(r, fullFetch) {
		w.Header().Set("Retry-After", "1")
		s.fail(w, r, errThrottled)
		return
	}
	if r.Method == http.MethodHead {
		h := w.Header()
		h["Content-Type"] = eventStreamValue
		h["Cache-Control"] = noCacheValue
		if streamzip.Asked(r) {
			streamzip.SetResponse(h)
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	var digest appdigest.Digest
	if r.Method == http.MethodPost {
		if digest, err = readDigest(r); err != nil { // stream_repair.go
			s.fail(w, r, err)
			return
		}
	}
	p := s.push
	wt, err := p.hub.join(f, headerValue(r.Header, "Last-Event-Id"), digest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if wt.repairBase != nil {
		// Nothing takes from wt before its handler hands it over (to the
		// streamer, or to the loop below): the repair goes first.
		frame := repairFrame(wt.repairBase, wt.filter, p.hub.enc, wt.digest)
		p.hub.mu.Lock()
		wt.repair = frame
		p.hub.mu.Unlock()
	}
	h := w.Header()
	h["Content-Type"] = eventStreamValue
	h["Cache-Control"] = noCacheValue
	h["X-Accel-Buffering"] = noBufferingValue // nginx: pass events on at once
	// Compressed for its own connection when the reader asks for it
	// (encoding=gzip, and Accept-Encoding): see package streamzip for why
	// Accept-Encoding alone does not do.
	var zip *streamzip.Writer
	if streamzip.Asked(r) {
		zip = streamzip.NewWriter() // nil beyond streamzip.MaxStreams: plain
	}
	if zip != nil {
		streamzip.SetResponse(h)
	}
	if p.cfg.StreamHijack && p.streamer.hijack(w, r, wt, keepAlive, zip) {
		return // the streamer serves it (stream_conn.go)
	}
	defer zip.Close()
	defer p.hub.leave(wt)
	p.metrics.streamsOpen.Inc()
	defer p.metrics.streamsOpen.Dec()

	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // ErrNotSupported: no deadline to clear
	if !s.streamWrite(rc, func() error {
		w.WriteHeader(http.StatusOK)
		return nil
	}) {
		return
	}
	var out io.Writer = w
	if zip != nil {
		out = zip // each batch then ends with flushZip
	}
	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	shutdown := p.shutdowns.of(r)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-shutdown:
			return
		case <-ka.C:
			if !s.streamWrite(rc, func() error {
				if _, err := out.Write(keepAliveComment); err != nil {
					return err
				}
				return flushZip(zip, w)
			}) {
				return
			}
		case <-wt.notify:
			snap, repair, evs := p.hub.take(wt)
			ok := s.streamWrite(rc, func() error {
				if repair != nil {
					if _, err := out.Write(repair); err != nil {
						return err
					}
				}
				if err := s.writeEvents(out, wt.filter, snap, evs); err != nil {
					return err
				}
				return flushZip(zip, w)
			})
			doneWithAll(evs, p.metrics.streamFanout)
			if !ok {
				return
			}
			ka.Reset(keepAlive)
		}
	}
}

// writeEvents writes a snapshot (if any) and the events after it.
func (s *Server) writeEvents(w io.Writer, f *filter, snap *snapshotFrames, evs []*event) error {
	p := s.push
	if snap != nil {
		if _, err := w.Write(snap.frame(f, p.hub.enc)); err != nil {
			return err
		}
		p.metrics.snapshots.Inc()
	}
	for _, e := range evs {
		b := e.frame(f, p.hub.enc)
		if b == nil {
			continue
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		p.metrics.events.Inc()
	}
	return nil
}

// flushZip ends a compressed stream's batch and writes it to w (zip nil:
// a plain stream, written already).
func flushZip(zip *streamzip.Writer, w io.Writer) error {
	if zip == nil {
		return nil
	}
	return zip.FlushTo(w)
}

// streamWrite runs write under a write deadline and flushes; false means
// the stream is over (the client left or did not read in time).
func (s *Server) streamWrite(rc *http.ResponseController, write func() error) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(s.push.cfg.StreamWriteTimeout))
	err := write()
	if err == nil {
		err = rc.Flush()
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.push.metrics.cutWrite.Inc()
		}
		return false
	}
	return true
}

// parseFilter reads the app and vip parameters of a stream.
func parseFilter(q url.Values) (*filter, error) {
	f := &filter{}
	var err error
	if f.apps, err = filterValues(q["app"], "app", strings.ToUpper); err != nil {
		return nil, err
	}
	if f.vips, err = filterValues(q["vip"], "vip", func(s string) string { return s }); err != nil {
		return nil, err
	}
	if len(f.apps)+len(f.vips) > maxFilterValues {
		return nil, badRequest(fmt.Sprintf("at most %d app and vip values in all", maxFilterValues))
	}
	f.key = "a:" + strings.Join(f.apps, ",") + "|v:" + strings.Join(f.vips, ",")
	return f, nil
}

// minStreamKeepAlive is the shortest keep-alive interval a watcher can ask
// for (unless StreamKeepAlive itself is shorter).
const minStreamKeepAlive = time.Second

// streamKeepAlive is the keep-alive interval of one stream: configured, or
// the watcher's keepalive= if shorter, within minStreamKeepAlive.
func streamKeepAlive(q url.Values, configured time.Duration) (time.Duration, error) {
	v := q.Get("keepalive")
	if v == "" {
		return configured, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, badRequest(fmt.Sprintf("keepalive %s: must be a positive duration such as 5s", strconv.Quote(v)))
	}
	return min(configured, max(d, min(minStreamKeepAlive, configured))), nil
}

// filterValues splits, trims, normalizes, sorts and deduplicates the
// values of one filter parameter.
func filterValues(raw []string, name string, norm func(string) string) ([]string, error) {
	var out []string
	for _, v := range raw {
		for item := range strings.SplitSeq(v, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				return nil, badRequest(fmt.Sprintf("%s %s: empty value in the list", name, strconv.Quote(v)))
			}
			out = append(out, norm(item))
			if len(out) > maxFilterValues {
				return nil, badRequest(fmt.Sprintf("at most %d %s values", maxFilterValues, name))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
