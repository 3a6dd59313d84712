package federation

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eureka"
)

// pulled is what a remote saw of one full pull: its query and identity
// headers.
type pulled struct {
	query, agent, identity string
}

// onePull makes one full pull of a test remote directly (no puller
// goroutine, no timing) and returns what the remote saw.
func onePull(t *testing.T) pulled {
	t.Helper()
	seen := make(chan pulled, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- pulled{query: r.URL.RawQuery, agent: r.Header.Get("User-Agent"), identity: r.Header.Get("DiscoveryIdentity-Name")}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"applications":{"versions__delta":"1","apps__hashcode":"","application":[]}}`)
	}))
	defer srv.Close()
	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.Remotes = []Remote{{Name: "dc2", URL: srv.URL + "/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	_, err = f.pullers[0].get(context.Background(), "apps/"+localOnlyQuery)
	require.NoError(t, err)
	return <-seen
}

// TestPullIdentifiesAsRegionServer: a pull says it is another region's
// server (so a Heureka remote answers it with local data only) and asks a
// Java remote for its local instances only; the sabotaged pull of
// remote-echo-overwrites-local does neither (pull_echo_sabotage_test.go).
func TestPullIdentifiesAsRegionServer(t *testing.T) {
	p := onePull(t)
	assert.Equal(t, "regions=heureka-local-only", p.query)
	assert.Equal(t, UserAgent, p.agent)
	assert.Equal(t, "DefaultServer", p.identity)
}
