package client

// Watching an application
//
// A watch reads GET /apps/{app} (or /vips/{vip}) with Accept:
// application/json and keeps the ETag of the answer. Each next read sends
// it back in If-None-Match with wait=WatchWait: Heureka holds the read
// until the document differs (200, with the new document and tag) or the
// wait ends (304, ask again). The tag is a hash of the content, the same
// on every Heureka node, so it survives a failover.
//
// A server without blocking reads (stock Eureka) sends no ETag: the watch
// then reads every PollInterval and delivers only documents that differ
// from the last one delivered. It does the same after a 304 that came
// back in less than half the wait (something in between answers from a
// cache without waiting) and after a 404 (the application has no
// instances yet, and a missing document has no tag to wait on). Errors
// (every server failed) back off from RetryInitial to RetryMax.
//
// Delivery keeps only the newest list: the channel holds one value, and a
// list the receiver has not taken yet is replaced by a newer one, so a
// slow receiver never holds the watch back and never sees a stale list
// after a fresh one.

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Watch watches the instances of application app and sends its instance
// list on the returned channel: once at the start (an empty list when the
// application does not exist) and again after every change. The channel is
// closed after ctx ends. See the file comment for how it reads.
func (c *Client) Watch(ctx context.Context, app string) <-chan []Instance {
	return c.watch(ctx, "/apps/"+url.PathEscape(strings.ToUpper(app)), decodeApp)
}

// WatchVIP is Watch for the instances of every application registered
// under the virtual address vip (GET /vips/{vip}).
func (c *Client) WatchVIP(ctx context.Context, vip string) <-chan []Instance {
	return c.watch(ctx, "/vips/"+url.PathEscape(vip), decodeApps)
}

// watch starts the loop of one watch.
func (c *Client) watch(ctx context.Context, path string, decode func([]byte) ([]Instance, error)) <-chan []Instance {
	ch := make(chan []Instance, 1)
	w := &watcher{c: c, path: path, decode: decode, out: ch, log: c.log.With("watch", path)}
	go w.run(ctx)
	return ch
}

// watcher is the state of one watch; only its goroutine touches it.
type watcher struct {
	c      *Client
	path   string
	decode func([]byte) ([]Instance, error)
	out    chan []Instance
	log    *slog.Logger

	tag       string // ETag of the last 200; "" when the server sent none
	last      []byte // body of the last list delivered
	delivered bool   // whether a list was delivered yet
}

// run reads until ctx ends, then closes the channel.
func (w *watcher) run(ctx context.Context) {
	defer close(w.out)
	b := w.c.backoff()
	for ctx.Err() == nil {
		pause, err := w.step(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := b.next()
			w.log.Warn("watch read failed; backing off", "err", err, "delay", d)
			sleep(ctx, d)
			continue
		}
		b.reset()
		if pause > 0 {
			sleep(ctx, pause)
		}
	}
}

// step makes one read and handles its answer; it returns how long to wait
// before the next read.
func (w *watcher) step(ctx context.Context) (time.Duration, error) {
	r := &request{method: http.MethodGet, path: w.path, header: http.Header{"Accept": {"application/json"}}}
	wait := w.c.cfg.WatchWait
	if w.tag != "" {
		r.header.Set("If-None-Match", w.tag)
		r.query = url.Values{"wait": {wait.String()}}
		r.wait = wait
	}
	start := time.Now()
	res, err := w.c.servers.do(ctx, r)
	if err != nil {
		return 0, err
	}
	switch res.code {
	case http.StatusOK:
		list, err := w.decode(res.body)
		if err != nil {
			w.tag = "" // read the whole document again
			return 0, &StatusError{Method: http.MethodGet, URL: res.server + w.path, Code: res.code, Body: "undecodable: " + err.Error()}
		}
		w.tag = res.header.Get("ETag")
		w.deliver(list, res.body)
		if w.tag == "" {
			return w.c.cfg.PollInterval, nil // no blocking reads here: poll
		}
		return 0, nil
	case http.StatusNotModified:
		if r.wait > 0 && time.Since(start) < r.wait/2 {
			w.log.Debug("304 without waiting; polling")
			return w.c.cfg.PollInterval, nil
		}
		return 0, nil
	case http.StatusNotFound:
		w.tag = ""
		w.deliver([]Instance{}, nil)
		return w.c.cfg.PollInterval, nil
	}
	return 0, &StatusError{Method: http.MethodGet, URL: res.server + w.path, Code: res.code, Body: string(res.body)}
}

// deliver sends list unless it is the document delivered last, replacing
// a list the receiver has not taken yet.
func (w *watcher) deliver(list []Instance, body []byte) {
	if w.delivered && bytes.Equal(body, w.last) {
		return
	}
	w.delivered, w.last = true, body
	select {
	case w.out <- list:
		return
	default:
	}
	select {
	case <-w.out: // the receiver has not taken the older list: drop it
	default:
	}
	w.out <- list // only this goroutine sends, and the buffer is now free
}
