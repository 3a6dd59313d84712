package federation

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eureka"
)

// twoMembers is a cluster of two, seen from self.
type twoMembers struct{ self, other, url string }

func (m twoMembers) LocalName() string            { return m.self }
func (m twoMembers) AliveMembers() []string       { return []string{m.self, m.other} }
func (m twoMembers) MemberURL(name string) string { return m.url }

// A relay that answers 503 (it holds no link in its own view yet, or has
// not loaded the region) is tried again after a pull interval, not set
// aside for the stale bound as a broken one: in the datacenter runs every
// follower asked the link before it had loaded, and followed the WAN for
// the next 20 s.
func TestRelayNotYetIsRetriedSoon(t *testing.T) {
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
	}))
	defer remote.Close()
	var asked atomic.Int32
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "federation: this node holds the region's WAN link but has not loaded it yet", http.StatusServiceUnavailable)
	}))
	defer relay.Close()

	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.Stream = false
	c.Remotes = []Remote{{Name: "dc2", URL: remote.URL + "/eureka/"}}
	c.Links = 1
	link := chooseLinks("dc2", []string{"n1", "n2"}, 1)[0]
	self := map[string]string{"n1": "n2", "n2": "n1"}[link]
	c.Members = twoMembers{self: self, other: link, url: relay.URL}
	require.Less(t, 4*c.PullInterval, c.StaleAfter, "a set-aside for the stale bound would be told apart")
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	f.Start()
	defer f.Stop()

	require.Eventually(t, func() bool {
		s := f.Status()[0]
		return s.Via == ViaFallback && s.Instances == 1
	}, 2*time.Second, 5*time.Millisecond, "the region is followed over the WAN meanwhile")
	st := f.Status()[0]
	assert.Contains(t, st.ViaReason, "has not loaded it yet", "the reason says what the relay answered")
	assert.True(t, strings.HasPrefix(st.ViaReason, "relay "+link+" set aside for "), st.ViaReason)

	n := asked.Load()
	time.Sleep(c.StaleAfter)
	assert.GreaterOrEqual(t, asked.Load()-n, int32(3),
		"asked again every pull interval or so (%v), not once per stale bound (%v)", c.PullInterval, c.StaleAfter)
}
