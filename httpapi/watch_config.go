package httpapi

import (
	"fmt"
	"time"
)

// PushConfig configures the push side of the API: blocking reads
// (watch.go) and the change stream (stream.go). Start from
// DefaultPushConfig; Validate rejects every value it cannot honour rather
// than replacing it with a default.
type PushConfig struct {
	// MaxWait caps the wait of a blocking read: a longer wait parameter is
	// cut to it (not refused). Default 60s; must be positive and at most
	// 10m. Keep it below the HTTP server's write timeout (node's
	// WriteTimeout, 2m by default) and below the idle timeouts of the
	// proxies in front of the servers.
	MaxWait time.Duration
	// WaitJitter spreads the ends of blocking reads that time out: each
	// wait is shortened by a random amount up to WaitJitter (and never by
	// more than an eighth of the wait), so that clients that started
	// together do not all come back in the same millisecond. Default 1s;
	// must be at least 0 and below MaxWait.
	WaitJitter time.Duration
	// ChangeCheckInterval is how often the server looks for a new registry
	// snapshot while at least one blocking read or stream is open, when
	// its Snapshots cannot notify changes itself (view.View does, and then
	// waiters wake at the change and this is unused): one check for all
	// waiters, which wakes every one at once. Nothing runs while nobody
	// waits. Default 10ms; must be positive and at most 1s.
	ChangeCheckInterval time.Duration
	// StreamCoalesce is the change stream's shortest spacing of events: a
	// change after a quiet spell this long goes out at once, and the
	// changes that follow an event sooner are gathered into one event this
	// long after it, so that a burst of registrations costs one document
	// per watcher per StreamCoalesce rather than one per change. Default
	// 25ms; must be at least 0 and at most 1s.
	StreamCoalesce time.Duration
	// StreamKeepAlive is how often an idle stream gets an SSE comment, so
	// that proxies and clients do not take it for dead. Default 15s; must
	// be positive.
	StreamKeepAlive time.Duration
	// StreamWindow is how many recent events this node keeps for clients
	// that resume with Last-Event-ID; an older id gets a snapshot. Default
	// 1024; must be at least 1.
	StreamWindow int
	// StreamBacklog is how many events may wait for one stream client
	// that has not taken them yet. Past it the client's queued events are
	// dropped and it gets a snapshot instead (it is "cut" to a snapshot),
	// so a slow client costs a bounded amount of memory. Default 256;
	// must be at least 1.
	StreamBacklog int
	// StreamWriteTimeout bounds one write to a stream client (an event, a
	// snapshot, a keep-alive): a client that does not read for that long
	// loses its connection. Default 30s; must be positive.
	StreamWriteTimeout time.Duration
	// MaxStreams caps the streams open at once on this server; one more
	// is answered 503 (a client should try another server). Default
	// 10000; must be at least 1.
	MaxStreams int
	// StreamHijack serves HTTP/1.x streams from shared writers on the
	// hijacked connection instead of a handler sleeping per stream
	// (stream_conn.go): about a tenth of the memory per idle watcher.
	// Default true.
	StreamHijack bool
	// BlockingHijack parks HTTP/1.1 blocking reads that must wait on their
	// hijacked connections instead of a handler sleeping per read
	// (watch_park.go): no goroutine but a small reader per waiting read,
	// each changed document rendered once for all the reads that wait on
	// it, and the connection handed back to the server for the client's
	// next request (keep-alive). Off, every blocking read waits in its
	// handler (as HTTP/2 reads always do). Default true.
	BlockingHijack bool
	// BlockingDirect serves the next request on an answered parked
	// connection on that connection when it is another blocking read
	// (watch_direct.go): the read is parked again without going back
	// through the HTTP server, which saves 28–45% of the node's CPU per
	// watcher and change (BENCHMARKS.md). Off (or for any other request),
	// the connection is handed back to the server. Used only with
	// BlockingHijack. The reads served so go to the Server's handler
	// directly, not through middleware the http.Server's Handler wraps
	// around it: turn it off if such a wrapper must see every request.
	// Default true.
	BlockingDirect bool
}

// DefaultPushConfig returns the defaults documented on PushConfig's fields.
func DefaultPushConfig() PushConfig {
	return PushConfig{
		MaxWait:             60 * time.Second,
		WaitJitter:          time.Second,
		ChangeCheckInterval: 10 * time.Millisecond,
		StreamCoalesce:      25 * time.Millisecond,
		StreamKeepAlive:     15 * time.Second,
		StreamWindow:        1024,
		StreamBacklog:       256,
		StreamWriteTimeout:  30 * time.Second,
		MaxStreams:          10000,
		StreamHijack:        true,
		BlockingHijack:      true,
		BlockingDirect:      true,
	}
}

// maxMaxWait is the largest MaxWait Validate accepts.
const maxMaxWait = 10 * time.Minute

// Validate reports the first problem with c; a nil c is valid (the
// defaults).
func (c *PushConfig) Validate() error {
	switch {
	case c == nil:
		return nil
	case c.MaxWait <= 0 || c.MaxWait > maxMaxWait:
		return fmt.Errorf("httpapi: push MaxWait %v must be positive and at most %v", c.MaxWait, maxMaxWait)
	case c.WaitJitter < 0 || c.WaitJitter >= c.MaxWait:
		return fmt.Errorf("httpapi: push WaitJitter %v must be at least 0 and below MaxWait %v", c.WaitJitter, c.MaxWait)
	case c.ChangeCheckInterval <= 0 || c.ChangeCheckInterval > time.Second:
		return fmt.Errorf("httpapi: push ChangeCheckInterval %v must be positive and at most 1s", c.ChangeCheckInterval)
	case c.StreamCoalesce < 0 || c.StreamCoalesce > time.Second:
		return fmt.Errorf("httpapi: push StreamCoalesce %v must be at least 0 and at most 1s", c.StreamCoalesce)
	case c.StreamKeepAlive <= 0:
		return fmt.Errorf("httpapi: push StreamKeepAlive %v must be positive", c.StreamKeepAlive)
	case c.StreamWindow < 1:
		return fmt.Errorf("httpapi: push StreamWindow %d must be at least 1", c.StreamWindow)
	case c.StreamBacklog < 1:
		return fmt.Errorf("httpapi: push StreamBacklog %d must be at least 1", c.StreamBacklog)
	case c.StreamWriteTimeout <= 0:
		return fmt.Errorf("httpapi: push StreamWriteTimeout %v must be positive", c.StreamWriteTimeout)
	case c.MaxStreams < 1:
		return fmt.Errorf("httpapi: push MaxStreams %d must be at least 1", c.MaxStreams)
	}
	return nil
}
