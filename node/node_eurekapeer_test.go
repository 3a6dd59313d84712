package node_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eurekapeer"
	"github.com/heureka/heureka/node"
)

// A node with Eureka peers sends its own clients' changes to them, and
// never what reached it from a Eureka peer: neither a peer batch nor a
// request carrying the replication header is echoed back.
func TestEurekaPeersGetOnlyThisNodesClientChanges(t *testing.T) {
	var (
		mu    sync.Mutex
		items []map[string]any
	)
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var list struct {
			ReplicationList []map[string]any `json:"replicationList"`
		}
		require.NoError(t, json.Unmarshal(body, &list))
		mu.Lock()
		items = append(items, list.ReplicationList...)
		mu.Unlock()
		out := make([]string, len(list.ReplicationList))
		for i := range out {
			out[i] = `{"statusCode":200}`
		}
		_, _ = io.WriteString(w, `{"responseList":[`+strings.Join(out, ",")+`]}`)
	}))
	defer peer.Close()
	seen := func(app string) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, it := range items {
			if it["appName"] == app {
				n++
			}
		}
		return n
	}

	cfg := node.DefaultConfig("solo")
	cfg.HTTPAddr = "127.0.0.1:0"
	ep := eurekapeer.DefaultConfig(peer.URL + "/eureka/")
	ep.FlushInterval = 20 * time.Millisecond
	cfg.EurekaPeers = &ep
	nd, err := node.Start(cfg)
	require.NoError(t, err)
	defer func() { _ = nd.Stop(context.Background()) }()

	// From a Eureka peer: a batch, and a register with the replication header.
	reg := strings.TrimSuffix(strings.TrimPrefix(registerBody("FROMJAVA", "j-1", 30), `{"instance":`), "}")
	code, body := do(t, "POST", nd.URL()+"/peerreplication/batch",
		`{"replicationList":[{"appName":"FROMJAVA","id":"j-1","action":"Register","instanceInfo":`+reg+`},`+
			`{"appName":"FROMJAVA","id":"j-1","status":"UP","action":"Heartbeat"}]}`)
	require.Equal(t, http.StatusOK, code, body)
	req, err := http.NewRequest("POST", nd.URL()+"/apps/FROMJAVA", strings.NewReader(registerBody("FROMJAVA", "j-2", 30)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-netflix-discovery-replication", "true")
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.True(t, hasInstance(t, nd, "FROMJAVA", "j-2"))

	// From a client: register, renew, cancel.
	code, body = do(t, "POST", nd.URL()+"/apps/LOCAL", registerBody("LOCAL", "l-1", 30))
	require.Equal(t, http.StatusNoContent, code, body)
	code, body = do(t, "PUT", nd.URL()+"/apps/LOCAL/l-1", "")
	require.Equal(t, http.StatusOK, code, body)
	code, body = do(t, "DELETE", nd.URL()+"/apps/LOCAL/l-1", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, it := range items {
			if it["appName"] == "LOCAL" && it["action"] == "Cancel" {
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "the client's changes reached the Eureka peer")
	require.NoError(t, nd.Stop(context.Background()))
	assert.Zero(t, seen("FROMJAVA"), "a Eureka peer's change was echoed back")
	assert.Positive(t, seen("LOCAL"))
}
