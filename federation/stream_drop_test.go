package federation

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eureka"
)

// TestStreamDroppedRegionReloads: a stream that stays connected but goes
// silent past DropAfter (a WAN cut shorter than the stream's idle timeout:
// TCP keeps the connection) gets the region dropped, its copy emptied. When
// the same connection comes back to life with keep-alives only (nothing
// changed remotely), the region must be loaded again from a snapshot, not
// declared ok with an empty copy. Found by the datacenter runs of
// simulations/netns (a WAN cut of 31 s, drop after 30 s, stream idle
// timeout 45 s).
func TestStreamDroppedRegionReloads(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/eureka/stream" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
			return
		}
		n := conns.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprintf(w, "id: p-%d\nevent: snapshot\ndata: %s\n\n", n, sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
		fl.Flush()
		if n == 1 { // the cut: silent past DropAfter, the connection kept
			select {
			case <-r.Context().Done():
				return
			case <-time.After(1500 * time.Millisecond):
			}
		}
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				fmt.Fprint(w, ": keep-alive\n\n")
				fl.Flush()
			}
		}
	}))
	defer srv.Close()

	c := DefaultLocalConfig() // stale 300 ms, dropped 900 ms
	c.Region = "dc1"
	c.StreamIdleTimeout = 10 * time.Second // longer than DropAfter, as 45 s is in the lab
	c.Remotes = []Remote{{Name: "dc2", URL: srv.URL + "/eureka/"}}
	logs := &lockedBuffer{}
	c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	f.Start()
	defer f.Stop()

	require.Eventually(t, func() bool { return conns.Load() >= 2 }, 3*time.Second, 5*time.Millisecond,
		"the dropped region's stream is reconnected (for a snapshot), well before its idle timeout")
	require.Eventually(t, func() bool {
		s := f.regions["dc2"].Load()
		return f.Status()[0].State == StateOK && s.total == 1
	}, 3*time.Second, 5*time.Millisecond, "the region is loaded again, not ok and empty")
	require.Never(t, func() bool { return f.regions["dc2"].Load().total != 1 }, 300*time.Millisecond, 10*time.Millisecond)
	// Every change of state is logged, the way back to ok too (it is set
	// where a pull or an event succeeds, and logged by the next judge).
	for _, step := range []string{"from=loading to=ok", "from=ok to=stale", "from=stale to=dropped", "from=dropped to=ok"} {
		assert.Regexp(t, `msg="region state" .*region=dc2 `+step, logs.String(), "the log says %s", step)
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
