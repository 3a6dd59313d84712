package federation

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eureka"
)

// relayDropConfig is the configuration of the relay drop tests: stale
// after 1 s, dropped after 1.2 s, so that a drop comes before a follower
// sets its relay aside for staying other than ok for the stale bound (as
// in production: 1 m and 10 m by default, 20 s and 30 s in the datacenter
// runs).
func relayDropConfig(remoteURL string) Config {
	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.Stream = false // the relay polls the remote
	c.StaleAfter = time.Second
	c.DropAfter = 1200 * time.Millisecond
	c.StreamIdleTimeout = 2 * time.Second
	c.Remotes = []Remote{{Name: "dc2", URL: remoteURL}}
	return c
}

// startRelayFollower starts a follower of region dc2 in a cluster of two
// whose other member, the region's link, serves its relay at relayURL.
func startRelayFollower(t *testing.T, c Config, relayURL string) *Federation {
	t.Helper()
	c.Links = 1
	link := chooseLinks("dc2", []string{"n1", "n2"}, 1)[0]
	self := map[string]string{"n1": "n2", "n2": "n1"}[link]
	c.Members = twoMembers{self: self, other: link, url: relayURL}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	f.Start()
	t.Cleanup(f.Stop)
	return f
}

// watchVia records, until stop is closed, the first moment f follows its
// region from anywhere but a relay, and whether it ever shows the region
// dropped; done is closed when it has stopped.
func watchVia(f *Federation, stop <-chan struct{}) (left, dropped *atomic.Value, done <-chan struct{}) {
	left, dropped = &atomic.Value{}, &atomic.Value{}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			s := f.Status()[0]
			if s.Via != ViaRelay && left.Load() == nil {
				left.Store(fmt.Sprintf("via %s (%s)", s.Via, s.ViaReason))
			}
			if s.State == StateDropped && dropped.Load() == nil {
				dropped.Store(true)
			}
		}
	}()
	return left, dropped, ch
}

// relayDropAndHeal runs a WAN cut past the drop bound under a relay and
// its follower, then heals it, and says what went wrong ("" if nothing):
// the follower must drop the region with its relay, keep its relay's
// stream (no new connection, never another source), serve the region
// again after the heal, and keep it ok on the relay's keep-alives
// alone, the remote region quiet, for longer than the drop bound.
//
// Real parts: the relay is a Federation of its own that polls a remote
// over loopback HTTP and serves its relay route (ServeRelay) on loopback;
// the follower follows it through that route. The WAN cut is the remote
// answering 503.
func relayDropAndHeal(t *testing.T) string {
	var cut atomic.Bool
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cut.Load() {
			http.Error(w, "the WAN is cut", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
	}))
	defer remote.Close()
	c := relayDropConfig(remote.URL + "/eureka/")

	relay, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	relay.Start()
	defer relay.Stop()
	var relayed atomic.Int32
	relaySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		relayed.Add(1)
		relay.ServeRelay(w, r, "dc2")
	}))
	defer relaySrv.Close()
	defer relay.CloseRelays() // before relaySrv.Close: ends the relay's handler
	require.Eventually(t, func() bool { return relay.Status()[0].State == StateOK }, 3*time.Second, 5*time.Millisecond)

	follower := startRelayFollower(t, c, relaySrv.URL)
	require.Eventually(t, func() bool {
		s := follower.Status()[0]
		return s.Via == ViaRelay && s.State == StateOK && s.Instances == 1
	}, 3*time.Second, 5*time.Millisecond, "the follower loads the region from its relay")
	conns := relayed.Load() // 1, unless the follower came before the relay's route was up

	stop := make(chan struct{})
	left, _, watched := watchVia(follower, stop)
	defer func() { close(stop); <-watched }()
	cut.Store(true)
	require.Eventually(t, func() bool { return follower.Status()[0].State == StateDropped }, 3*time.Second, 2*time.Millisecond,
		"the follower drops the region")
	var problems []string
	if st := relay.Status()[0].State; st != StateDropped {
		problems = append(problems, "the follower dropped its copy while its relay's was "+string(st))
	}
	cut.Store(false)
	if !assert.Eventually(t, func() bool {
		s := follower.Status()[0]
		return s.State == StateOK && s.Instances == 1
	}, 3*time.Second, 2*time.Millisecond) {
		problems = append(problems, "after the heal the follower does not serve the region again")
	}
	time.Sleep(c.DropAfter + 300*time.Millisecond) // the remote quiet, keep-alives only
	if s := follower.Status()[0]; s.State != StateOK || s.Instances != 1 {
		problems = append(problems, fmt.Sprintf("%v after the heal, on the relay's keep-alives alone, the region is %s with %d instances",
			c.DropAfter+300*time.Millisecond, s.State, s.Instances))
	}
	if l := left.Load(); l != nil {
		problems = append(problems, "the follower left its relay: "+l.(string))
	}
	if n := relayed.Load(); n != conns {
		problems = append(problems, fmt.Sprintf("the relay's stream was cut: %d new connections", n-conns))
	}
	return strings.Join(problems, "; ")
}

// A relayed node whose region drops (on its relay's age, so at the moment
// the relay's own copy drops) keeps its relay's stream: the relay sends
// what it loads again on it once the WAN heals. Cutting it there, as a WAN
// follower cuts its stream, made the reconnection fail in the datacenter
// runs of simulations/netns and set the relay aside: every relayed node
// then followed the WAN on fallback for the stale bound after each WAN cut
// (switch relay-stream-cut-on-drop puts that back). The copy the relay's
// deltas rebuild is the relay's: its keep-alives keep it fresh
// afterwards (switch relay-heal-not-revived: a quiet region went stale
// and dropped again).
func TestRelayedRegionDropKeepsTheRelayStream(t *testing.T) {
	assert.Empty(t, relayDropAndHeal(t))
}

// relayStaleThenHeal serves a fake relay of the relay protocol on loopback:
// ok and a snapshot of one instance, then, its age growing, stale and past
// the drop bound for 300 ms without ever saying dropped (the relay's own
// tick has not come yet), then ok again with the copy it kept: no delta,
// as a real relay sends when its next pull succeeds. Like a real relay it
// sends a snapshot to a connection only while ok, once. It says what went
// wrong at the follower ("" if nothing): it must not drop ahead of its
// relay, and must serve the region at the end.
func relayStaleThenHeal(t *testing.T) string {
	c := relayDropConfig("http://dc2.invalid/eureka/") // the WAN is never needed
	healed := make(chan struct{})
	var (
		once  sync.Once
		start time.Time
	)
	cutFor := c.DropAfter + 300*time.Millisecond // 15 of the follower's ticks past the drop bound
	phase := func() (State, time.Duration) {
		switch age := time.Since(start); {
		case age >= cutFor:
			return StateOK, 0
		case age > c.StaleAfter:
			return StateStale, age
		default:
			return StateOK, age
		}
	}
	relaySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			start = time.Now()
			time.AfterFunc(cutFor, func() { close(healed) })
		})
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		sent := false
		for {
			st, age := phase()
			fmt.Fprintf(w, "event: state\ndata: {\"state\":%q,\"loaded\":true,\"ageMs\":%d}\n\n", st, age.Milliseconds())
			if st == StateOK && !sent {
				fmt.Fprintf(w, "event: snapshot\nid: 1\ndata: %s\n\n", sseDoc("UP_1_", sseInstance("a1", "UP", "ADDED")))
				sent = true
			}
			fl.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}))
	defer relaySrv.Close()

	follower := startRelayFollower(t, c, relaySrv.URL)
	defer follower.Stop() // before relaySrv.Close: ends the relay's handler
	require.Eventually(t, func() bool {
		s := follower.Status()[0]
		return s.Via == ViaRelay && s.State == StateOK && s.Instances == 1
	}, 3*time.Second, 5*time.Millisecond, "the follower loads the region from its relay")
	stop := make(chan struct{})
	left, dropped, watched := watchVia(follower, stop)
	<-healed
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-watched
	var problems []string
	if dropped.Load() != nil {
		problems = append(problems, "the follower dropped the region while its relay held it")
	}
	if s := follower.Status()[0]; s.State != StateOK || s.Instances != 1 {
		problems = append(problems, fmt.Sprintf("after the heal the region is %s with %d instances", s.State, s.Instances))
	}
	if l := left.Load(); l != nil {
		problems = append(problems, "the follower left its relay: "+l.(string))
	}
	return strings.Join(problems, "; ")
}

// A relayed node drops its copy when its relay says it dropped, not on its
// own tick a moment before: a heal in between brings the relay back to ok
// with the copy it kept, which it does not send again, and the node stayed
// empty until the next remote change (switch relay-follower-drops-ahead).
func TestRelayedRegionDoesNotDropAheadOfItsRelay(t *testing.T) {
	assert.Empty(t, relayStaleThenHeal(t))
}
