package federation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// benchFederation returns a federation whose region dc2 holds n instances
// (20 per application) and a local view with n instances of its own, half
// of them in the same applications.
func benchFederation(b *testing.B, n int) (*Federation, *view.View) {
	f, v, _ := benchFederationState(b, n)
	return f, v
}

// benchFederationState is benchFederation with the region's state.
func benchFederationState(b *testing.B, n int) (*Federation, *view.View, *regionState) {
	b.Helper()
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	rc := actors.DefaultConfig("bench")
	rc.Sinks = []actors.Sink{v}
	reg, err := actors.NewRegistry(rc)
	require.NoError(b, err)
	b.Cleanup(reg.Close)
	mk := func(app, id string) *actors.Instance {
		in := &actors.Instance{InstanceID: id, HostName: id, App: app, IPAddr: "10.0.0.1", Status: actors.StatusUp,
			VIPAddress: app, Port: actors.Port{Number: 8080, Enabled: true}, LastDirtyTimestamp: 1,
			DataCenterInfo: actors.DataCenterInfo{Class: "com.netflix.appinfo.InstanceInfo$MyDataCenterInfo", Name: "MyOwn"}}
		in.Normalize()
		return in
	}
	for i := 0; i < n; i++ {
		require.NoError(b, reg.Register(context.Background(), mk(fmt.Sprintf("APP-%04d", i/20), fmt.Sprintf("local-%d", i)), false))
	}
	c := DefaultConfig()
	c.Region = "dc1"
	c.Remotes = []Remote{{Name: "dc2", URL: "http://dc2.invalid/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(b, err)
	st := newRegionState("dc2", "dc1")
	remote := make([]*actors.Instance, n)
	for i := range remote {
		remote[i] = mk(fmt.Sprintf("APP-%04d", n/40+i/20), fmt.Sprintf("remote-%d", i))
	}
	st.replace(remote, time.Now())
	st.loaded, st.state = true, StateOK
	f.publish("dc2", st.snapshot(), true)
	return f, v, st
}

// BenchmarkRegionsFullBuild is what a ?regions= full read costs the first
// time after a change (JSON, gzip): the union encoded from instances.
func BenchmarkRegionsFullBuild(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("instances=%d+%d", n, n), func(b *testing.B) {
			f, v := benchFederation(b, n)
			snap := v.Snapshot()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f.gen.Add(1) // as if a region changed: no cache
				_ = f.Apps(snap, []string{"dc2"}, view.FormatJSON, true)
			}
		})
	}
}

// BenchmarkRegionsFullBuildPlain is BenchmarkRegionsFullBuild without
// gzip: the splicing alone.
func BenchmarkRegionsFullBuildPlain(b *testing.B) {
	f, v := benchFederation(b, 10000)
	snap := v.Snapshot()
	_ = f.Apps(snap, []string{"dc2"}, view.FormatJSON, false) // the parts are encoded once
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.gen.Add(1)
		_ = f.Apps(snap, []string{"dc2"}, view.FormatJSON, false)
	}
}

// BenchmarkRegionsFullCached is a ?regions= full read while nothing
// changes: the cached document.
func BenchmarkRegionsFullCached(b *testing.B) {
	f, v := benchFederation(b, 10000)
	snap := v.Snapshot()
	regions := []string{"dc2"}
	_ = f.Apps(snap, regions, view.FormatJSON, true)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = f.Apps(snap, regions, view.FormatJSON, true)
		}
	})
}

// BenchmarkRegionsDeltaBuild is a ?regions= delta after a change, in a
// steady state (both deltas empty but for the change): the union's
// hashcode comes from the counts, checked for collisions.
func BenchmarkRegionsDeltaBuild(b *testing.B) {
	f, v, st := benchFederationState(b, 10000)
	v.ClearDelta()
	st.prune(time.Now().Add(time.Hour), time.Minute)
	f.publish("dc2", st.snapshot(), true)
	require.Eventually(b, func() bool { return v.Snapshot().DeltaLen() == 0 }, time.Second, time.Millisecond)
	snap := v.Snapshot()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.gen.Add(1)
		_ = f.Delta(snap, []string{"dc2"}, view.FormatJSON, true)
	}
}
