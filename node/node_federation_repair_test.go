package node_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/node"
)

// regionPulls reads heureka_region_pulls_total{region} of n by
// "kind/result".
func regionPulls(t *testing.T, n *node.Node, region string) map[string]float64 {
	t.Helper()
	mfs, err := n.Metrics().Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "heureka_region_pulls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["region"] == region {
				out[labels["kind"]+"/"+labels["result"]] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// hashcodeOf is Eureka's apps__hashcode of instances.
func hashcodeOf(insts map[string]fedInstance) string {
	counts := map[string]int{}
	for _, in := range insts {
		counts[in.Status]++
	}
	var names []string
	for s := range counts {
		names = append(names, s)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, s := range names {
		fmt.Fprintf(&b, "%s_%d_", s, counts[s])
	}
	return b.String()
}

// repairResult is what repairRun saw.
type repairResult struct {
	snapshotBytes, repairBytes int64
	pulls                      map[string]float64
}

// repairRun runs a remote region dc1 of 30 applications of 20 instances,
// followed by dc2 over its change stream through a WAN link that it cuts
// once dc2 holds dc1. Meanwhile dc1 registers 5 instances in APP03 and
// cancels every instance of APP05, one event each, far past its stream
// window (2 events; another watcher keeps dc1's hub numbering events).
// Then it heals the link, waits until dc2's copy of dc1 is dc1's
// registry exactly (ids, statuses and apps__hashcode), and returns the
// bytes of the initial load and of the repair on the WAN.
func repairRun(t *testing.T) repairResult {
	cfg := fedConfig(t, "dc1")
	cfg.Push.StreamWindow = 2
	dc1 := startFed(t, cfg)
	for a := range 30 {
		for i := range 20 {
			fedRegister(t, dc1.URL(), fmt.Sprintf("APP%02d", a), fmt.Sprintf("app%02d-%02d", a, i), "UP", nil)
		}
	}
	// Another follower keeps dc1's hub publishing while dc2 is cut off.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, dc1.URL()+"/stream", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
		}
	}()

	wan := newWANLink(t, dc1.Addr())
	fc := fedConfig(t, "dc2", federation.Remote{Name: "dc1", URL: "http://" + wan.Addr() + "/eureka/"})
	fc.Federation.PullInterval = 100 * time.Millisecond
	fc.Federation.StaleAfter = 10 * time.Second // the cut stays within it: the copy is kept
	fc.Federation.DropAfter = 30 * time.Second
	fc.Federation.StreamIdleTimeout = 5 * time.Second
	dc2 := startFed(t, fc)

	local := func() map[string]fedInstance {
		_, a := fedGet(t, dc1.URL(), "/apps")
		return a.ids(t)
	}
	region := func() map[string]fedInstance {
		code, a := fedGet(t, dc2.URL(), "/apps?regions=dc1")
		if code != http.StatusOK {
			return nil
		}
		out := map[string]fedInstance{}
		for k, in := range a.ids(t) {
			if in.Metadata[federation.MarkerKey] == "dc1" {
				out[k] = in
			}
		}
		return out
	}
	same := func() bool {
		want, got := local(), region()
		if len(want) != len(got) {
			return false
		}
		for k, in := range want {
			if g, ok := got[k]; !ok || g.Status != in.Status {
				return false
			}
		}
		return true
	}
	require.Eventually(t, same, 10*time.Second, 10*time.Millisecond, "dc2 loads dc1")
	time.Sleep(300 * time.Millisecond) // the snapshot's last bytes
	r := repairResult{snapshotBytes: wan.Down.Load()}

	wan.Cut()
	for i := range 5 {
		fedRegister(t, dc1.URL(), "APP03", fmt.Sprintf("new-%d", i), "UP", nil)
		time.Sleep(60 * time.Millisecond) // one event each
	}
	for i := range 20 {
		fedCancel(t, dc1.URL(), "APP05", fmt.Sprintf("app05-%02d", i))
		time.Sleep(60 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	before := wan.Down.Load()
	wan.Heal()
	require.Eventually(t, same, 10*time.Second, 10*time.Millisecond, "dc2's copy is dc1's again")
	time.Sleep(500 * time.Millisecond) // a fallback snapshot's bytes, if any
	require.True(t, same())
	_, full := fedGet(t, dc1.URL(), "/apps")
	assert.Equal(t, full.Applications.Hashcode, hashcodeOf(region()), "dc2's apps__hashcode is dc1's")
	assert.NotContains(t, region(), "APP05/app05-00", "a cancelled instance never comes back")
	r.repairBytes = wan.Down.Load() - before
	r.pulls = regionPulls(t, dc2, "dc1")
	t.Logf("initial load %d bytes on the WAN, repair %d; pulls %v", r.snapshotBytes, r.repairBytes, r.pulls)
	return r
}

// A follower that comes back after a break its remote's stream window
// cannot replay sends the digest of its copy (POST …/stream) and gets
// only the applications that differ and the names of those removed: its
// copy is the remote's again (ids, statuses, apps__hashcode), the
// cancelled instances stay gone, and the repair costs a fraction of the
// initial load on the WAN. The initial load is the stream's snapshot
// alone: no full poll beside it, and no poll while the remote does not
// answer.
func TestFederationRepairByDigest(t *testing.T) {
	r := repairRun(t)
	assert.Equal(t, 1.0, r.pulls["stream-repair/ok"], "one repair")
	assert.Zero(t, r.pulls["stream-repair/mismatch"])
	assert.Equal(t, 1.0, r.pulls["stream-snapshot/ok"], "the initial snapshot only")
	assert.Zero(t, r.pulls["full/ok"]+r.pulls["full/error"], "no full poll")
	assert.Less(t, r.repairBytes, r.snapshotBytes/repairShare, "a repair costs what changed, not the registry")
}

// repairShare: a repair here costs less than this share of the initial
// load (2 applications of 30 differ).
const repairShare = 4
