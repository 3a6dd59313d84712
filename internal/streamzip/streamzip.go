// Package streamzip is the gzip coding of Heureka's event streams, the
// change stream (GET …/stream, served by httpapi) and a region's relay
// (GET /admin/regions/{region}/relay, served by federation), shared by
// their servers and by their reader, federation's follower of a region.
//
// # Negotiation
//
// A reader asks for a compressed stream explicitly: the query parameter
// encoding=gzip, and an Accept-Encoding that accepts gzip. The server then
// answers Content-Encoding: gzip; otherwise, or when it does not know the
// parameter (a server of the previous release), it answers the plain
// stream, which the reader tells by the missing Content-Encoding. A reader
// that does not ask (a follower of the previous release, any watcher)
// gets the plain stream whatever its Accept-Encoding says.
//
// Accept-Encoding alone is not enough on purpose. A stream's plain frames
// are encoded once and shared by every watcher; a gzip stream is
// compressed for its own connection, and holds a DEFLATE writer's state
// (about 800 KB at Level) for as long as it is open, and its CPU on every
// write. Go's http.Transport adds Accept-Encoding: gzip to
// every request by itself, and a browser's EventSource always sends it:
// negotiated on the header, 10,000 dashboards or Go watchers on a local
// network would cost a node some 8 GB and a compression per event and
// watcher, for bytes that cost little there. The WAN, where bytes cost,
// is crossed by a few federation links per region, which ask.
//
// # Writing
//
// A writer compresses each batch it writes (everything due for the
// connection at that moment: a snapshot, the events queued since the last
// write, or a keep-alive) and ends it with a sync flush, so the reader can
// decode every frame of the batch as soon as its bytes arrive: compression
// adds no latency. The DEFLATE window (32 KB) runs across batches, so a
// delta compresses against the events before it. A stream is never
// finished with a gzip trailer (it ends when its connection does), which
// a reader takes as the break it is.
package streamzip

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// Query is the query parameter by which a reader asks for a coding, and
// Gzip the one value understood.
const (
	Query = "encoding"
	Gzip  = "gzip"
)

// Level is the DEFLATE level of a compressed stream. Measured on the
// stream of a node holding 10,000 instances like bench/cmd/wanbytes's
// (a 7.5 MB snapshot, then 100 deltas of 911 B each, a sync flush after
// each): level 3 compresses the snapshot to 330 KB in 13 ms and a delta
// to 78 B; level 6 to 265 KB in 31 ms and 73 B; level 1, Go's fastest,
// to 352 KB in 12 ms but 158 B a delta (it matches only within the
// previous block, not the whole window), and its writer holds 1.2 MB
// against 0.8 MB at the other levels. Level 3 is also the view's gzip
// level (actors/view's pieceLevel).
const Level = 3

// Asked reports whether r asks for a gzip stream (see the package
// comment).
func Asked(r *http.Request) bool {
	asked := false
	for _, v := range r.URL.Query()[Query] {
		for c := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(c), Gzip) {
				asked = true
			}
		}
	}
	return asked && AcceptsGzip(r.Header.Values("Accept-Encoding"))
}

// AcceptsGzip reports whether Accept-Encoding values accept gzip: they
// name gzip or * with a weight above zero.
func AcceptsGzip(values []string) bool {
	star := false
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(item, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != Gzip && coding != "x-gzip" && coding != "*" {
				continue
			}
			ok := true
			for p := range strings.SplitSeq(params, ";") {
				k, w, _ := strings.Cut(p, "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					q, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
					ok = err == nil && q > 0
				}
			}
			if coding == "*" {
				star = star || ok
				continue
			}
			return ok
		}
	}
	return star
}

// SetRequest makes req ask for a gzip stream: the query parameter and
// Accept-Encoding (which also keeps Go's transport from inflating the
// body itself, so that the reader sees the bytes as they came).
func SetRequest(req *http.Request) {
	q := req.URL.Query()
	q.Set(Query, Gzip)
	req.URL.RawQuery = q.Encode()
	req.Header.Set("Accept-Encoding", Gzip)
}

// SetResponse sets the response headers of a gzip stream.
func SetResponse(h http.Header) {
	h.Set("Content-Encoding", Gzip)
	h.Add("Vary", "Accept-Encoding")
}

// MaxStreams bounds the compressed streams one process serves at once,
// change streams and relays together: each holds a DEFLATE writer (about
// 800 KB). A stream asked for beyond it is served plain, which its reader
// follows all the same: a crowd that asks cannot make a node hold
// gigabytes.
const MaxStreams = 256

// open counts the Writers not closed.
var open atomic.Int32

// Writer compresses one stream's batches into a buffer of its own: a
// batch is written (Write, or Compress for a writer that sends the bytes
// itself, httpapi's hijacked streams), then flushed (FlushTo, Compress).
// A Writer is used by one goroutine at a time.
type Writer struct {
	zw      *gzip.Writer
	buf     bytes.Buffer
	writing bool // a batch is being written (buf holds only its bytes)
	closed  atomic.Bool
}

// NewWriter returns the Writer of one stream; nil when MaxStreams are
// open: serve the stream plain. Close it when the stream ends.
func NewWriter() *Writer {
	if open.Add(1) > MaxStreams {
		open.Add(-1)
		return nil
	}
	w := &Writer{}
	w.zw, _ = gzip.NewWriterLevel(&w.buf, Level)
	return w
}

// Close gives the Writer's place back (see MaxStreams); it is idempotent
// and does not end the gzip stream (see the package comment).
func (w *Writer) Close() {
	if w != nil && w.closed.CompareAndSwap(false, true) {
		open.Add(-1)
	}
}

// bigBatch is the buffer capacity a Writer lets go of after a batch (a
// snapshot), so that a stream does not keep its largest batch's size.
const bigBatch = 256 << 10

// begin empties the buffer of the last batch for the next.
func (w *Writer) begin() {
	if w.writing {
		return
	}
	w.writing = true
	if w.buf.Cap() > bigBatch {
		w.buf = bytes.Buffer{} // zw writes into &w.buf, which stays
		return
	}
	w.buf.Reset()
}

// end ends the batch with a sync flush and returns its bytes.
func (w *Writer) end() []byte {
	w.begin()        // an empty batch is a sync flush alone
	_ = w.zw.Flush() // into a bytes.Buffer: no error
	w.writing = false
	return w.buf.Bytes()
}

// Write compresses p into the batch being written.
func (w *Writer) Write(p []byte) (int, error) {
	w.begin()
	return w.zw.Write(p)
}

// FlushTo ends the batch with a sync flush and writes its bytes to dst.
func (w *Writer) FlushTo(dst io.Writer) error {
	_, err := dst.Write(w.end())
	return err
}

// Compress compresses one batch of frames and returns its bytes, ended by
// a sync flush; they are valid until the next call.
func (w *Writer) Compress(frames [][]byte) []byte {
	for _, f := range frames {
		_, _ = w.Write(f) // into a bytes.Buffer: no error
	}
	return w.end()
}

// Body returns what a reader reads of a response body: body itself, or,
// when the response is gzip-coded, its inflated bytes. The gzip header is
// read on the first Read, not here: a server may send nothing until its
// first event or keep-alive.
func Body(res *http.Response) io.Reader {
	if !strings.EqualFold(strings.TrimSpace(res.Header.Get("Content-Encoding")), Gzip) {
		return res.Body
	}
	return &lazyGzip{src: res.Body}
}

// lazyGzip inflates src from its first Read on.
type lazyGzip struct {
	src io.Reader
	zr  *gzip.Reader
}

func (l *lazyGzip) Read(p []byte) (int, error) {
	if l.zr == nil {
		zr, err := gzip.NewReader(l.src)
		if err != nil {
			return 0, err
		}
		zr.Multistream(false)
		l.zr = zr
	}
	return l.zr.Read(p)
}
