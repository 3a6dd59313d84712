package simulations

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linksHistory is a dcHistory of two regions of three nodes, read for
// 30 s, with Links 2: in each region n0 follows the other region's stream
// and n1 polls it every pull interval all along; n2 follows a relay
// (nothing on the WAN) unless the case adds its uses. Timers: pull 200ms,
// stale 2s, so a request holds the link 0.3s and a fallback window lasts
// 4.4s past its cause.
func linksHistory() *dcHistory {
	h := newDCHistory()
	h.d.Nodes = map[string][]string{"dc1": {"dc1-n0", "dc1-n1", "dc1-n2"}, "dc2": {"dc2-n0", "dc2-n1", "dc2-n2"}}
	h.d.Links = 2
	h.reads(0, 30, func(float64, *DCRead) {})
	for _, region := range []string{"dc1", "dc2"} {
		remote := map[string]string{"dc1": "dc2", "dc2": "dc1"}[region]
		h.d.WAN = append(h.d.WAN, DCWANUse{Region: region, Node: region + "-n0", Remote: remote, From: h.at(0)})
		h.polls(region, "n1", 0, 30)
	}
	return h
}

// polls adds node's polls of the other region every 200ms in [from, to).
func (h *dcHistory) polls(region, node string, from, to float64) {
	remote := map[string]string{"dc1": "dc2", "dc2": "dc1"}[region]
	for ms := int(from * 1000); ms < int(to*1000); ms += 200 {
		sec := float64(ms) / 1000
		h.d.WAN = append(h.d.WAN, DCWANUse{Region: region, Node: region + "-" + node, Remote: remote, From: h.at(sec), To: h.at(sec + 0.01)})
	}
}

func TestCheckRegionWANLinks(t *testing.T) {
	t.Run("links only, fallbacks in their windows", func(t *testing.T) {
		h := linksHistory()
		h.polls("dc1", "n2", 0, 3) // before the cluster formed (start window to 4.4s)
		h.d.Cuts = []Span{{From: h.at(10), To: h.at(15)}}
		h.polls("dc1", "n2", 12, 19) // fallback in the cut, back on its relay 4s after the heal
		h.d.Restarts = []DCRestart{{Region: "dc2", Node: "dc2-n0", Stopped: h.at(22), Ready: h.at(23)}}
		h.polls("dc2", "n2", 22.5, 26) // the links moved while dc2-n0 restarted
		v := CheckRegionWANLinks(h.o, Thresholds{})
		assert.True(t, v.Pass, "%s %v", v.Measured, v.Details)
		assert.Contains(t, v.Measured, "at most 2 nodes")
		assert.Contains(t, v.Measured, "3 spans of more than 2 inside them")
	})
	t.Run("a third node on the WAN in a steady run", func(t *testing.T) {
		h := linksHistory()
		h.polls("dc2", "n2", 8, 9) // one second, no cut, no restart
		v := CheckRegionWANLinks(h.o, Thresholds{})
		require.False(t, v.Pass, v.Measured)
		assert.Contains(t, v.Details[1], "3 nodes of dc2 on the WAN to dc1 from +8.0s")
		assert.Contains(t, v.Details[1], "dc2-n0, dc2-n1, dc2-n2")
		assert.EqualValues(t, 3, v.Key.Value)
	})
	t.Run("every node on the WAN all along", func(t *testing.T) {
		h := linksHistory()
		h.d.WAN = append(h.d.WAN, DCWANUse{Region: "dc1", Node: "dc1-n2", Remote: "dc2", From: h.at(0.5)})
		v := CheckRegionWANLinks(h.o, Thresholds{})
		require.False(t, v.Pass, v.Measured)
		assert.Contains(t, v.Details[1], "dc1-n0, dc1-n1, dc1-n2")
	})
	t.Run("a fallback that outlasts its window", func(t *testing.T) {
		h := linksHistory()
		h.d.Cuts = []Span{{From: h.at(10), To: h.at(15)}}
		h.polls("dc1", "n2", 12, 21) // still on the WAN 6s after the heal (the bound is 4.4s)
		v := CheckRegionWANLinks(h.o, Thresholds{})
		require.False(t, v.Pass, v.Measured)
		assert.Contains(t, v.Details[1], "from +12.0s to +21.")
	})
	t.Run("a restart excuses its own region only", func(t *testing.T) {
		h := linksHistory()
		h.d.Restarts = []DCRestart{{Region: "dc1", Node: "dc1-n0", Stopped: h.at(22), Ready: h.at(23)}}
		h.polls("dc2", "n2", 22.5, 24)
		v := CheckRegionWANLinks(h.o, Thresholds{})
		assert.False(t, v.Pass, v.Measured)
	})
}
