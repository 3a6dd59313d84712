package federation

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eureka"
)

// sseInstance is an instance element of an applications document.
func sseInstance(id, status, action string) string {
	return fmt.Sprintf(`{"instanceId":%q,"hostName":%q,"app":"A","ipAddr":"10.0.0.1","status":%q,"actionType":%q,`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$MyDataCenterInfo","name":"MyOwn"}}`, id, id, status, action)
}

// sseDoc is an applications document with the instances of app A.
func sseDoc(hash string, insts ...string) string {
	list := ""
	for i, in := range insts {
		if i > 0 {
			list += ","
		}
		list += in
	}
	return fmt.Sprintf(`{"applications":{"versions__delta":"1","apps__hashcode":%q,"application":[{"name":"A","instance":[%s]}]}}`, hash, list)
}

// TestStreamFollowsAndResumes runs a fake Heureka stream: the first
// connection sends a snapshot and a delta and breaks; the reader must
// reconnect with the last event id and apply the replayed change, without
// polling.
func TestStreamFollowsAndResumes(t *testing.T) {
	var (
		mu      sync.Mutex
		lastIDs []string
		polls   int
	)
	second := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/eureka/stream":
			mu.Lock()
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
			n := len(lastIDs)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fl := w.(http.Flusher)
			if n == 1 {
				fmt.Fprintf(w, "id: p-1\nevent: snapshot\ndata: %s\n\n", sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
				fmt.Fprintf(w, ": keep-alive\n\nid: p-2\nevent: delta\ndata: %s\n\n", sseDoc("UP_2_", sseInstance("a2", "UP", "ADDED")))
				fl.Flush()
				return // the connection breaks
			}
			fmt.Fprintf(w, "id: p-3\nevent: delta\ndata: %s\n\n", sseDoc("UP_1_", sseInstance("a1", "UP", "DELETED")))
			fl.Flush()
			close(second)
			for {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
					fmt.Fprint(w, ": keep-alive\n\n")
					fl.Flush()
				}
			}
		default:
			mu.Lock()
			polls++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
		}
	}))
	defer srv.Close()

	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.PullInterval = time.Second // a poll would come late: the stream must do it all
	c.StaleAfter = 5 * time.Second
	c.DropAfter = 10 * time.Second
	c.Remotes = []Remote{{Name: "dc2", URL: srv.URL + "/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	f.Start()
	defer f.Stop()

	<-second
	require.Eventually(t, func() bool {
		s := f.regions["dc2"].Load()
		return s.total == 1 && s.apps["A"].instances[0].InstanceID == "a2"
	}, 2*time.Second, 5*time.Millisecond, "the replayed delete applies")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, lastIDs, 2)
	assert.Equal(t, "", lastIDs[0])
	assert.Equal(t, "p-2", lastIDs[1], "the reconnection resumes from the last event")
	assert.LessOrEqual(t, polls, 1, "at most the first full poll: the stream carried the rest")
	assert.Equal(t, StateOK, f.Status()[0].State)
}
