package streamzip

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stream is compressed only when its reader asks with the parameter and
// accepts gzip: Accept-Encoding alone (what Go's transport and browsers
// send by themselves) gets the plain stream.
func TestAsked(t *testing.T) {
	for _, c := range []struct {
		query, accept string
		want          bool
	}{
		{"encoding=gzip", "gzip", true},
		{"keepalive=5s&encoding=gzip", "gzip, deflate, br", true},
		{"encoding=zstd,gzip", "br;q=1.0, gzip;q=0.8", true},
		{"encoding=GZIP", "*", true},
		{"encoding=gzip", "x-gzip", true},
		{"", "gzip", false},                     // Go's transport, a follower of the previous release
		{"", "gzip, deflate, br, zstd", false},  // a browser's EventSource
		{"encoding=gzip", "", false},            // no coding accepted
		{"encoding=gzip", "identity", false},    // only identity
		{"encoding=gzip", "gzip;q=0", false},    // gzip refused
		{"encoding=gzip", "*;q=0", false},       // everything refused
		{"encoding=gzip", "*, gzip;q=0", false}, // gzip refused by name
		{"encoding=br", "gzip", false},          // a coding this server does not have
		{"encoding=", "gzip", false},            // empty
		{"encodings=gzip", "gzip", false},       // another parameter
		{"encoding=gzip", "gzip;q=0.001", true}, // any weight above zero
		{"encoding=gzip", "deflate, gzip ; q=1", true},
	} {
		r := httptest.NewRequest(http.MethodGet, "/eureka/stream?"+c.query, nil)
		if c.accept != "" {
			r.Header.Set("Accept-Encoding", c.accept)
		}
		assert.Equal(t, c.want, Asked(r), "?%s, Accept-Encoding: %s", c.query, c.accept)
	}
}

// SetRequest asks: what it sets, Asked accepts, and the other parameters
// stay.
func TestSetRequest(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "http://dc2:8761/eureka/stream?keepalive=20s", nil)
	require.NoError(t, err)
	SetRequest(req)
	assert.Equal(t, "20s", req.URL.Query().Get("keepalive"))
	assert.Equal(t, "gzip", req.URL.Query().Get(Query))
	assert.Equal(t, "gzip", req.Header.Get("Accept-Encoding"))
	assert.True(t, Asked(req))
}

// chunkReader hands out only what was written so far, as a connection
// does: a Read past it is an error, where a real reader would block.
type chunkReader struct{ buf bytes.Buffer }

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.buf.Len() == 0 {
		return 0, io.ErrNoProgress
	}
	return c.buf.Read(p)
}

// Every batch decodes whole from the bytes written so far (the sync
// flush): a reader never waits for the next batch to see this one. Both
// ways of writing (Compress, Write and FlushTo) make one stream.
func TestBatchesDecodeAsTheyCome(t *testing.T) {
	w := NewWriter()
	require.NotNil(t, w)
	defer w.Close()
	conn := &chunkReader{}
	res := &http.Response{Header: http.Header{"Content-Encoding": {"gzip"}}, Body: io.NopCloser(conn)}
	body := Body(res)

	frame := func(i int) []byte {
		return []byte("id: x-" + strings.Repeat("1", i+1) + "\nevent: delta\ndata: {\"applications\":{}}\n\n")
	}
	read := func(want []byte) {
		t.Helper()
		got := make([]byte, len(want))
		_, err := io.ReadFull(body, got)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	for i := range 20 {
		var want []byte
		if i%2 == 0 {
			batch := [][]byte{frame(i), frame(i + 1)}
			conn.buf.Write(w.Compress(batch))
			want = bytes.Join(batch, nil)
		} else {
			_, _ = w.Write(frame(i))
			var out bytes.Buffer
			require.NoError(t, w.FlushTo(&out))
			conn.buf.Write(out.Bytes())
			want = frame(i)
		}
		read(want)
		assert.Zero(t, conn.buf.Len(), "batch %d: every byte written was needed to decode it", i)
	}
}

// A plain response is read as it is.
func TestBodyPlain(t *testing.T) {
	res := &http.Response{Header: http.Header{}, Body: io.NopCloser(strings.NewReader(": keep-alive\n\n"))}
	b, err := io.ReadAll(Body(res))
	require.NoError(t, err)
	assert.Equal(t, ": keep-alive\n\n", string(b))
}

// The deltas of a stream compress against the ones before them: a batch
// like the last costs a fraction of its size.
func TestDeltasCompressAgainstTheWindow(t *testing.T) {
	w := NewWriter()
	require.NotNil(t, w)
	defer w.Close()
	delta := func(i int) []byte {
		return []byte(`id: 5f1c0e9a2b7d4c11-` + strings.Repeat("1", i%7+1) + "\nevent: delta\ndata: " +
			`{"applications":{"versions__delta":"42","apps__hashcode":"UP_4_","application":[{"name":"ORDERS","instance":[` +
			`{"instanceId":"orders-` + strings.Repeat("7", i%5+1) + `","hostName":"orders.example","app":"ORDERS","ipAddr":"10.1.2.3",` +
			`"status":"UP","port":{"$":8080,"@enabled":"true"},"vipAddress":"orders","actionType":"ADDED",` +
			`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}]}]}}` + "\n\n")
	}
	first := len(w.Compress([][]byte{delta(0)}))
	var later int
	for i := 1; i <= 10; i++ {
		later = len(w.Compress([][]byte{delta(i)}))
	}
	t.Logf("a delta of %d bytes: %d compressed first, %d after ten like it", len(delta(10)), first, later)
	assert.Less(t, later*4, len(delta(10)), "a delta like the ones before costs under a quarter of its size")

	// And the whole stream is one valid gzip member.
	var all bytes.Buffer
	w2 := NewWriter()
	defer w2.Close()
	for i := range 3 {
		all.Write(w2.Compress([][]byte{delta(i)}))
	}
	zr, err := gzip.NewReader(&all)
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "no trailer: the stream ends with its connection")
	assert.Equal(t, string(delta(0))+string(delta(1))+string(delta(2)), string(got))
}

// At most MaxStreams writers are open at once; a closed one gives its
// place back, once however often it is closed.
func TestMaxStreams(t *testing.T) {
	var ws []*Writer
	for range MaxStreams - int(open.Load()) {
		w := NewWriter()
		require.NotNil(t, w)
		ws = append(ws, w)
	}
	assert.Nil(t, NewWriter(), "one more is served plain")
	ws[0].Close()
	ws[0].Close()
	w := NewWriter()
	require.NotNil(t, w, "a closed writer's place is free again")
	assert.Nil(t, NewWriter(), "and only one place")
	w.Close()
	for _, w := range ws[1:] {
		w.Close()
	}
	var none *Writer
	none.Close() // a plain stream's: nothing to give back
}
