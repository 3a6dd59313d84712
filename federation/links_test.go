package federation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
)

// The choice of links depends on the set of live members only, and losing
// a member moves only the links it held.
func TestChooseLinks(t *testing.T) {
	members := []string{"n0", "n1", "n2", "n3", "n4"}
	for _, region := range []string{"dc1", "dc2", "eu-west-1"} {
		links := chooseLinks(region, members, 2)
		require.Len(t, links, 2)
		shuffled := slices.Clone(members)
		slices.Reverse(shuffled)
		assert.Equal(t, links, chooseLinks(region, append(shuffled, "n0"), 2), "order and repeats do not matter")
		assert.Equal(t, links[:1], chooseLinks(region, members, 1), "the first link is the best-ranked member")
		assert.Len(t, chooseLinks(region, members[:1], 2), 1, "never more links than members")

		// The best link leaves: the second stays, the next in rank joins.
		rest := slices.DeleteFunc(slices.Clone(members), func(m string) bool { return m == links[0] })
		after := chooseLinks(region, rest, 2)
		assert.Equal(t, links[1], after[0])
		assert.NotContains(t, after, links[0])
		// A member that is not a link leaves: nothing moves.
		for _, m := range members {
			if !slices.Contains(links, m) {
				rest := slices.DeleteFunc(slices.Clone(members), func(x string) bool { return x == m })
				assert.Equal(t, links, chooseLinks(region, rest, 2))
			}
		}
	}
	// Regions spread over the members.
	first := map[string]bool{}
	for i := range 20 {
		first[chooseLinks(fmt.Sprintf("r%d", i), members, 1)[0]] = true
	}
	assert.Greater(t, len(first), 2, "20 regions' first links fall on more than two of five members")
	// Followers spread over the links.
	links := chooseLinks("dc1", members, 2)
	firstRelay := map[string]bool{}
	for _, m := range members {
		firstRelay[relayOrder("dc1", m, links)[0]] = true
	}
	assert.Len(t, firstRelay, 2)
}

// A relay's delta event carries what changed between two published copies,
// and the follower that applies it ends with the relay's copy and
// hashcode.
func TestRelayDelta(t *testing.T) {
	f, err := New(func() Config {
		c := DefaultLocalConfig()
		c.Region = "dc1"
		c.Remotes = []Remote{{Name: "dc2", URL: "http://dc2.invalid/eureka/"}}
		return c
	}(), eureka.Encoders())
	require.NoError(t, err)
	h := f.pullers[0].hub
	r := newRegionState("dc2", "dc1")
	r.loaded, r.state = true, StateOK
	now := f.cfg.Now()
	r.replace(nil, now)
	h.update(r.snapshot(), true)
	sub, _ := h.subscribe()
	require.NotNil(t, sub)

	follower := newRegionState("dc2", "dc1")
	p := &puller{f: f, remote: f.cfg.Remotes[0]}
	apply := func() {
		for {
			select {
			case fr := <-sub.ch:
				ev, data := parseFrame(t, fr)
				if ev == "state" {
					continue
				}
				d, err := decodeApps(data)
				require.NoError(t, err)
				if ev == "snapshot" {
					follower.replace(p.fromRelay(d.instances), now)
				} else {
					follower.apply(p.fromRelay(d.instances), now)
				}
				assert.Equal(t, d.hashcode, follower.hashcode(), ev)
			default:
				return
			}
		}
	}
	apply()
	r.replace([]*actors.Instance{inst("A", "a1", actors.StatusUp, 1), inst("A", "a2", actors.StatusUp, 1), inst("B", "b1", actors.StatusDown, 1)}, now)
	h.update(r.snapshot(), true)
	apply()
	r.replace([]*actors.Instance{inst("A", "a1", actors.StatusDown, 2), inst("B", "b1", actors.StatusDown, 1), inst("C", "c1", actors.StatusUp, 1)}, now)
	h.update(r.snapshot(), true)
	apply()
	want, got := r.snapshot(), follower.snapshot()
	assert.Equal(t, want.names, got.names)
	assert.Equal(t, want.counts, got.counts)
	for _, n := range want.names {
		require.Len(t, got.apps[n].instances, len(want.apps[n].instances))
		for i, in := range want.apps[n].instances {
			assert.Equal(t, in.ID(), got.apps[n].instances[i].ID())
			assert.Equal(t, in.Status, got.apps[n].instances[i].Status)
			assert.Equal(t, "dc2", got.apps[n].instances[i].Metadata[MarkerKey])
		}
	}
}

// parseFrame reads one Server-Sent Event back: its name and data.
func parseFrame(t *testing.T, fr []byte) (string, []byte) {
	t.Helper()
	var ev string
	var data []string
	for _, line := range strings.Split(strings.TrimSpace(string(fr)), "\n") {
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	return ev, []byte(strings.Join(data, "\n"))
}
