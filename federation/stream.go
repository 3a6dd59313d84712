package federation

// Following a Heureka region's change stream
//
// A Heureka remote serves GET {url}stream (docs/push.md): Server-Sent
// Events, a snapshot (the full registry) on connect, then one delta event
// per batch of changes, each with the remote's apps__hashcode after it, and
// a keep-alive comment while nothing changes. With Config.Stream, a region
// is followed through it: a change crosses in the remote's coalescing time
// (25 ms) plus the WAN's latency, instead of up to a pull interval.
//
// The stream reader (one goroutine per region) only reads and decodes;
// everything it learns goes to the puller's goroutine over a channel, so the
// region's state keeps one writer. While the stream is up the puller does
// not poll: a poll's delta and the stream's events could then be applied
// out of order (a poll answered before a change but applied after it would
// undo it). Liveness is the stream's activity: any line, keep-alives
// included, counts as a successful pull for staleness; the reader asks the
// remote for keep-alives every third of StaleAfter (keepalive=), and a
// stream silent for StreamIdleTimeout is cut and reconnected.
//
// Repair: a delta event after which the region's apps__hashcode differs
// from the event's cuts the stream and reconnects without Last-Event-ID.
// After a break the reader reconnects with the last event id (the remote
// replays what was missed), unless the puller polled meanwhile. Either
// way, a reader whose puller holds a copy sends its digest (POST, asked of
// the puller in line with the events: "digest"), and the remote that
// cannot replay answers with a "repair" event, the applications that
// differ and the names of those removed, instead of a snapshot
// (httpapi's stream_repair.go); a remote of the previous release answers
// the POST with something other than an event stream, and the reader
// takes the snapshot by GET at once. A repair whose hashcode still
// differs takes a snapshot (no digest) next. A relay's stream is on the
// local network and starts with a snapshot. A remote without a stream (a
// Java Eureka server answers 404) is polled, as before.
//
// The reader follows a target the puller sets (streamTarget): the remote's
// stream, or a local member's relay of the region (relay.go), which serves
// the same events plus "state" events. A new target cuts the connection
// and starts from a snapshot; each message carries its target's
// generation. A relay that answers 404 is an error, not a remote without
// a stream.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/internal/streamzip"
)

// streamMsg is what the reader tells the puller.
type streamMsg struct {
	// gen is the generation of the target the message came from: the
	// puller ignores what a former target still delivers.
	gen   uint64
	kind  string // "up", "down", "unsupported", "snapshot", "delta", "repair", "state", "digest"
	doc   *document
	state *relayState // "state" (a relay's)
	err   error
	// unreachable ("down"): the last attempt failed on the connection, not
	// with an answer, so a poll would fail the same way.
	unreachable bool
	// reply ("digest") takes the digest of the copy to send, nil for none
	// (then a snapshot): asked in line with the events, so that it covers
	// every event decoded before.
	reply chan []byte
}

// streamTarget is what the reader follows: the remote's stream over the
// WAN, or a local member's relay of the region (relay.go).
type streamTarget struct {
	gen    uint64
	url    string // without query
	relay  bool
	member string // the relay's member name
}

// streamReader follows one region's stream.
type streamReader struct {
	p      *puller
	client *http.Client // no overall timeout: the stream is long-lived
	msgs   chan streamMsg
	target atomic.Pointer[streamTarget]
	// wake is signalled when the target changes.
	wake chan struct{}
	// noStream: the WAN remote answered that it has no stream (a Java
	// Eureka server); the WAN is then polled, and the reader only follows
	// relays.
	noStream atomic.Bool
	// lastActivity is when the stream last delivered anything (unix nano).
	lastActivity atomic.Int64
	// resume says whether the next connection may send Last-Event-ID;
	// the puller clears it when it polls.
	resume atomic.Bool

	mu     sync.Mutex
	cut    context.CancelFunc // cancels the current connection
	lastID string             // reader goroutine only
}

// errStreamUnsupported: the remote has no stream.
var errStreamUnsupported = errors.New("federation: the remote serves no change stream")

// errRelayNotYet: the member asked for a relay answered 503, it relays no
// copy of the region yet (in its own view it holds no link, or it has not
// loaded the region): views that disagree while a member joins or a link
// moves, or a link still loading. The follower tries it again after a
// pull interval, not after the set-aside of a broken relay.
var errRelayNotYet = errors.New("not relaying the region yet")

func newStreamReader(p *puller) *streamReader {
	tr := p.f.client.Transport
	s := &streamReader{p: p, client: &http.Client{Transport: tr}, msgs: make(chan streamMsg, 16), wake: make(chan struct{}, 1)}
	s.target.Store(&streamTarget{url: p.base + "stream"})
	return s
}

// retarget makes the reader follow t (a new generation) from a snapshot:
// the current connection is cut.
func (s *streamReader) retarget(t *streamTarget) {
	s.target.Store(t)
	s.kick(false)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// kick cuts the current connection; resume false makes the next one start
// with a snapshot.
func (s *streamReader) kick(resume bool) {
	if !resume {
		s.resume.Store(false)
	}
	s.mu.Lock()
	if s.cut != nil {
		s.cut()
	}
	s.mu.Unlock()
}

// run connects and reconnects until ctx ends. The first reconnection
// after an established stream broke is tried at once, so that it can
// resume (before the puller polls); later ones every PullInterval, or at
// once when the target changes. While the target is the WAN and the WAN is
// not to be streamed (Config.Stream off, or a remote without a stream),
// the reader waits for another target.
func (s *streamReader) run(ctx context.Context) {
	for ctx.Err() == nil {
		t := s.target.Load()
		if !t.relay && (!s.p.f.cfg.Stream || s.noStream.Load()) {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			}
			continue
		}
		established, err := s.connect(ctx, t)
		if established && s.target.Load() == t {
			established, err = s.connect(ctx, t)
		}
		if errors.Is(err, errStreamUnsupported) {
			s.noStream.Store(true)
			s.send(ctx, streamMsg{gen: t.gen, kind: "unsupported", err: err})
			continue
		}
		s.send(ctx, streamMsg{gen: t.gen, kind: "down", err: err, unreachable: errors.Is(err, errUnreachable)})
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-time.After(s.p.f.cfg.PullInterval):
		}
	}
}

// send hands m to the puller unless ctx ended.
func (s *streamReader) send(ctx context.Context, m streamMsg) {
	select {
	case s.msgs <- m:
	case <-ctx.Done():
	}
}

// connect follows one connection until it breaks; established reports
// that the stream was up.
func (s *streamReader) connect(parent context.Context, t *streamTarget) (established bool, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	s.mu.Lock()
	s.cut = cancel
	s.mu.Unlock()
	// Keep-alives at least three times per stale bound, so that a quiet,
	// healthy region never looks stale (a remote of the previous release
	// ignores the parameter and sends one every 15 s: see StaleAfter).
	ka := max(s.p.f.cfg.StaleAfter/3, time.Millisecond)
	if !s.resume.Swap(true) {
		s.lastID = ""
	}
	var digest []byte
	if !t.relay { // a relay is on the local network: its snapshots stay
		digest = s.digest(ctx, t)
	}
	res, err := s.open(ctx, cancel, t, ka, digest)
	if err == nil && digest != nil && (res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream")) {
		// A remote of the previous release (405, or 403 under basic
		// auth: a POST is a write there): a snapshot, as before.
		res.Body.Close()
		s.p.f.log.Debug("remote refused a repair: snapshot", "region", s.p.remote.Name, "status", res.Status)
		res, err = s.open(ctx, cancel, t, ka, nil)
	}
	if err != nil {
		return false, err
	}
	defer res.Body.Close()
	sse := strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream")
	req := res.Request
	switch {
	case !t.relay && (res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed):
		return false, errStreamUnsupported
	case res.StatusCode != http.StatusOK && t.relay:
		// The relay says why (a refused signature, no link): keep its first line.
		b, _ := io.ReadAll(io.LimitReader(res.Body, 300))
		msg, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		if res.StatusCode == http.StatusServiceUnavailable {
			return false, fmt.Errorf("federation: GET %s: %s: %s (%w)", req.URL.Redacted(), res.Status, msg, errRelayNotYet)
		}
		return false, fmt.Errorf("federation: GET %s: %s: %s", req.URL.Redacted(), res.Status, msg)
	case res.StatusCode != http.StatusOK:
		return false, fmt.Errorf("federation: GET %s: %s", req.URL.Redacted(), res.Status)
	case !sse && !t.relay:
		return false, errStreamUnsupported
	case !sse:
		return false, fmt.Errorf("federation: GET %s: not an event stream", req.URL.Redacted())
	}
	s.touch()
	s.send(ctx, streamMsg{gen: t.gen, kind: "up"})
	from := fromWAN
	if t.relay {
		from = fromRelay
	}
	res.Body = s.p.metrics.counted(from, res.Body) // the bytes as they came, compressed or not
	return true, s.read(ctx, t, streamzip.Body(res))
}

// digest asks the puller for the digest of its copy, gzip-compressed; nil
// when it has none to send (not loaded, dropped, or a repair that just
// failed: then a snapshot).
func (s *streamReader) digest(ctx context.Context, t *streamTarget) []byte {
	reply := make(chan []byte, 1)
	s.send(ctx, streamMsg{gen: t.gen, kind: "digest", reply: reply})
	var plain []byte
	select {
	case plain = <-reply:
	case <-ctx.Done():
		return nil
	}
	if plain == nil {
		return nil
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	return b.Bytes()
}

// errUnreachable marks a connection that failed before any answer.
var errUnreachable = errors.New("no answer")

// open sends the stream's request: GET, or POST with digest (a
// gzip-compressed appdigest body) for a repair (docs/push.md).
func (s *streamReader) open(ctx context.Context, cancel context.CancelFunc, t *streamTarget, ka time.Duration, digest []byte) (*http.Response, error) {
	method := http.MethodGet
	var body io.Reader
	if digest != nil {
		method, body = http.MethodPost, bytes.NewReader(digest)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url+"?keepalive="+ka.String(), body)
	if err != nil {
		return nil, fmt.Errorf("federation: %w", err)
	}
	if digest != nil {
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
		req.Header.Set("Content-Encoding", "gzip")
	}
	if !sabotage.On(sabotage.StreamUncompressed) {
		streamzip.SetRequest(req) // a remote or relay of the previous release ignores it: plain
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("DiscoveryIdentity-Name", "DefaultServer")
	req.Header.Set("DiscoveryIdentity-Version", "1.0")
	if s.lastID != "" {
		req.Header.Set("Last-Event-ID", s.lastID)
	}
	if t.relay && !sabotage.On(sabotage.RelayUnsigned) {
		s.p.f.relayAuth.sign(req) // relayauth.go: passes the relay route under basic auth
	}
	// The response headers must come within the request timeout; the body
	// may then last.
	timer := time.AfterFunc(s.p.f.cfg.RequestTimeout, cancel)
	res, err := s.client.Do(req)
	timer.Stop()
	if err != nil {
		return nil, fmt.Errorf("federation: %s %s: %w (%w)", method, req.URL.Redacted(), err, errUnreachable)
	}
	return res, nil
}

func (s *streamReader) touch() { s.lastActivity.Store(s.p.f.cfg.Now().UnixNano()) }

// read parses Server-Sent Events until the body ends.
func (s *streamReader) read(ctx context.Context, t *streamTarget, body io.Reader) error {
	br := bufio.NewReaderSize(body, 64<<10)
	var id, event string
	var data strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("federation: stream cut: %w", context.Cause(ctx))
			}
			return fmt.Errorf("federation: stream: %w (%w)", err, errUnreachable)
		}
		s.touch()
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			switch {
			case data.Len() > 0 && (event == "snapshot" || event == "delta" || (event == "repair" && !t.relay)):
				doc, err := decodeApps([]byte(data.String()))
				if err != nil {
					return err
				}
				s.lastID = id
				s.send(ctx, streamMsg{gen: t.gen, kind: event, doc: doc})
			case data.Len() > 0 && event == "state" && t.relay:
				var st relayState
				if err := json.Unmarshal([]byte(data.String()), &st); err != nil {
					return fmt.Errorf("federation: decoding a relay's state: %w", err)
				}
				s.send(ctx, streamMsg{gen: t.gen, kind: "state", state: &st})
			}
			event = ""
			data.Reset()
		case strings.HasPrefix(line, ":"):
			// a comment: keep-alive
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[5:], " "))
		}
	}
}
