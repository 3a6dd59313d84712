package federation

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// mergeFixture is a local registry and two regions: applications only
// local, only remote, in both, in both regions, and ids that collide with
// a local instance and between the regions.
func mergeFixture(t *testing.T) (*Federation, *view.View) {
	t.Helper()
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	rc := actors.DefaultConfig("merge")
	rc.Sinks = []actors.Sink{v}
	reg, err := actors.NewRegistry(rc)
	require.NoError(t, err)
	t.Cleanup(reg.Close)
	mk := func(app, id string, st actors.Status) *actors.Instance {
		in := &actors.Instance{InstanceID: id, HostName: id + ".host", App: app, IPAddr: "10.0.0.1", Status: st,
			VIPAddress: "shared", Port: actors.Port{Number: 8080, Enabled: true}, LastDirtyTimestamp: 1,
			Metadata:       map[string]string{"k": "v"},
			DataCenterInfo: actors.DataCenterInfo{Class: "com.netflix.appinfo.InstanceInfo$MyDataCenterInfo", Name: "MyOwn"}}
		in.Normalize()
		return in
	}
	for _, in := range []*actors.Instance{mk("LOCAL-ONLY", "l1", actors.StatusUp), mk("BOTH", "b-local", actors.StatusUp),
		mk("BOTH", "same-id", actors.StatusUp), mk("ZZ-LOCAL", "z1", actors.StatusDown)} {
		require.NoError(t, reg.Register(context.Background(), in, false))
	}
	c := DefaultConfig()
	c.Region = "dc1"
	c.Remotes = []Remote{{Name: "dc2", URL: "http://dc2.invalid/eureka/"}, {Name: "dc3", URL: "http://dc3.invalid/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	now := time.Now()
	for name, insts := range map[string][]*actors.Instance{
		"dc2": {mk("BOTH", "b-dc2", actors.StatusUp), mk("BOTH", "same-id", actors.StatusDown),
			mk("REMOTE-ONLY", "r1", actors.StatusStarting), mk("TWO-REGIONS", "t1", actors.StatusUp)},
		"dc3": {mk("TWO-REGIONS", "t1", actors.StatusOutOfService), mk("TWO-REGIONS", "t3", actors.StatusUp),
			mk("AAA-FIRST", "a1", actors.StatusUp)},
	} {
		st := newRegionState(name, "dc1")
		st.replace(insts, now)
		st.loaded, st.state = true, StateOK
		f.publish(name, st.snapshot(), true)
	}
	require.Eventually(t, func() bool { return v.Snapshot().Count() == 4 }, time.Second, time.Millisecond)
	return f, v
}

// slowFull is the union's full document built the obvious way, from
// instances.
func slowFull(f *Federation, local *view.Snapshot, regions []string, format view.Format) []byte {
	m := &merged{apps: map[string][]*actors.Instance{}}
	seen := map[actors.Key]bool{}
	local.Apps(func(a *view.App) bool {
		for in := range a.All() {
			m.add(in, seen)
		}
		return true
	})
	for _, r := range f.snaps(regions) {
		for _, n := range r.names {
			for _, in := range r.apps[n].instances {
				m.add(in, seen)
			}
		}
	}
	slices.Sort(m.names)
	return finish(f.enc[format], m, view.FullVersionDelta, m.counts.String(), false)
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	return out
}

// TestFullDocumentSplicedEqualsEncoded: the spliced document is byte for
// byte the one encoded from instances, in every format, with collisions.
func TestFullDocumentSplicedEqualsEncoded(t *testing.T) {
	f, v := mergeFixture(t)
	snap := v.Snapshot()
	for _, regions := range [][]string{{"dc2"}, {"dc3"}, {"dc2", "dc3"}, nil} {
		all := regions
		if all == nil {
			all = f.names
		}
		for format := view.Format(0); format < view.NumFormats; format++ {
			want := slowFull(f, snap, all, format)
			got := f.Apps(snap, regions, format, false)
			assert.Equal(t, string(want), string(got), "regions %v format %d", regions, format)
			assert.Equal(t, string(want), string(gunzip(t, f.Apps(snap, regions, format, true))), "gzip, regions %v format %d", regions, format)
		}
	}
	// The hashcode: 4 local, dc2 adds 3 (same-id collides), dc3 adds 2
	// (t1 collides with dc2's): DOWN 1, OUT_OF_SERVICE 0, STARTING 1, UP 7.
	doc := string(f.Apps(snap, []string{"dc2", "dc3"}, view.FormatJSON, false))
	assert.Contains(t, doc, `"apps__hashcode":"DOWN_1_STARTING_1_UP_7_"`)
	assert.Equal(t, "DOWN_1_STARTING_1_UP_7_", func() string { c := unionCounts(snap, f.snaps([]string{"dc2", "dc3"})); return c.String() }())
}

// localWins says what is wrong with the way a ?regions= full read serves
// an instance that a remote region holds too: the local copy must be
// served, once ("" when it is).
func localWins(f *Federation, snap *view.Snapshot) string {
	d, err := decodeApps(f.Apps(snap, []string{"dc2"}, view.FormatJSON, false))
	if err != nil {
		return err.Error()
	}
	n := 0
	for _, in := range d.instances {
		if in.App != "BOTH" || in.InstanceID != "same-id" {
			continue
		}
		n++
		if in.Metadata[MarkerKey] != "" || in.Status != actors.StatusUp {
			return "the remote copy of BOTH/same-id replaced the local one"
		}
	}
	if n != 1 {
		return fmt.Sprintf("BOTH/same-id served %d times", n)
	}
	return ""
}

func TestLocalWinsOverRemote(t *testing.T) {
	f, v := mergeFixture(t)
	assert.Empty(t, localWins(f, v.Snapshot()))
}

// TestAppIsLocalElseFirstRegion: a one-application read with transparent
// fallback serves the local application when it has instances, else the
// first region that holds it, as Eureka's getApplication does; never a
// union.
func TestAppIsLocalElseFirstRegion(t *testing.T) {
	f, v := mergeFixture(t)
	snap := v.Snapshot()
	ids := func(name string) []string {
		doc, ok := f.App(snap, name, view.FormatJSON, false)
		if !ok {
			return nil
		}
		d, err := decodeApps([]byte(`{"applications":{"application":` +
			string(bytes.TrimSuffix(bytes.TrimPrefix(doc, []byte(`{"application":`)), []byte("}"))) + `}}`))
		require.NoError(t, err, string(doc))
		var out []string
		for _, in := range d.instances {
			out = append(out, in.InstanceID+"@"+in.Metadata[MarkerKey])
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, []string{"b-local@", "same-id@"}, ids("BOTH"), "local has it: dc2's b-dc2 is not added")
	assert.Equal(t, []string{"r1@dc2"}, ids("REMOTE-ONLY"))
	assert.Equal(t, []string{"t1@dc2"}, ids("TWO-REGIONS"), "the first region holding it, not dc2 and dc3")
	assert.Equal(t, []string{"l1@"}, ids("LOCAL-ONLY"))
	assert.Nil(t, ids("NO-SUCH-APP"))
	_, ok := f.App(snap, "NO-SUCH-APP", view.FormatJSON, false)
	assert.False(t, ok)
}
