package simulations

// Who uses the WAN: every datacenter node's federation sends its requests
// through a dcWANTracker (its Config.HTTPClient), which records each
// request to a WAN link (a pull, or a change stream for as long as it
// stays open) as a DCWANUse; relay requests, to a local member, are not
// recorded. region-wan-links (invariant_regionlinks.go) counts, from
// these, the nodes of a region that hold the WAN link to each remote.

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// DCWANUse is one request a node sent over the WAN to a remote region:
// from its start to the end of its answer (the stream's end, for a change
// stream).
type DCWANUse struct {
	Region, Node, Remote string
	From                 time.Time
	// To is when the answer ended; zero: still open when the run ended.
	To time.Time
}

// dcWANTracker is a node's federation transport: it records what crosses
// the WAN.
type dcWANTracker struct {
	w            *dcWorld
	region, node string
	base         http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *dcWANTracker) RoundTrip(req *http.Request) (*http.Response, error) {
	w := t.w
	w.mu.Lock()
	remote := w.linkRegion[req.URL.Host]
	i := -1
	if remote != "" {
		i = len(w.obs.WAN)
		w.obs.WAN = append(w.obs.WAN, DCWANUse{Region: t.region, Node: t.node, Remote: remote, From: time.Now()})
	}
	w.mu.Unlock()
	res, err := t.base.RoundTrip(req)
	if i < 0 {
		return res, err
	}
	end := sync.OnceFunc(func() {
		w.mu.Lock()
		w.obs.WAN[i].To = time.Now()
		w.mu.Unlock()
	})
	if err != nil {
		end()
		return res, err
	}
	res.Body = &wanBody{ReadCloser: res.Body, end: end}
	return res, nil
}

// wanBody ends its use when the answer is read to its end or closed.
type wanBody struct {
	io.ReadCloser
	end func()
}

func (b *wanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *wanBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}
