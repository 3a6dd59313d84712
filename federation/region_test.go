package federation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

func inst(app, id string, st actors.Status, dirty int64) *actors.Instance {
	return &actors.Instance{App: app, InstanceID: id, HostName: id, Status: st, LastDirtyTimestamp: dirty}
}

func TestCountsRoundTrip(t *testing.T) {
	for _, h := range []string{"", "UP_3_", "DOWN_1_UP_3_", "DOWN_2_OUT_OF_SERVICE_1_STARTING_4_UNKNOWN_5_UP_10_"} {
		c := parseCounts(h)
		assert.Equal(t, h, c.String())
	}
}

func TestRegionStateReplaceAndApply(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRegionState("dc2", "dc1")
	assert.True(t, r.replace([]*actors.Instance{inst("A", "a1", actors.StatusUp, 1), inst("A", "a2", actors.StatusDown, 1)}, now))
	assert.Equal(t, "DOWN_1_UP_1_", r.hashcode())
	assert.False(t, r.replace([]*actors.Instance{inst("A", "a1", actors.StatusUp, 1), inst("A", "a2", actors.StatusDown, 1)}, now),
		"the same full fetch changes nothing")

	// A delta repeats changes for its whole retention: applying one twice
	// changes nothing the second time.
	up := inst("A", "a2", actors.StatusUp, 2)
	up.ActionType = actors.ActionModified
	assert.True(t, r.apply([]*actors.Instance{up}, now))
	assert.False(t, r.apply([]*actors.Instance{up}, now))
	gone := inst("A", "a1", actors.StatusUp, 3)
	gone.ActionType = actors.ActionDeleted
	assert.True(t, r.apply([]*actors.Instance{gone}, now))
	assert.Equal(t, "UP_1_", r.hashcode())

	s := r.snapshot()
	require.Len(t, s.apps["A"].instances, 1)
	assert.Equal(t, "dc2", s.apps["A"].instances[0].Metadata[MarkerKey])
	assert.Equal(t, "dc2", s.apps["A"].instances[0].Metadata[ZoneKey])
	delta, _ := group(s.window)
	require.Len(t, delta["A"], 2)
	assert.Equal(t, actors.ActionDeleted, delta["A"][0].ActionType) // a1
	assert.Equal(t, actors.ActionModified, delta["A"][1].ActionType)

	assert.True(t, r.prune(now.Add(time.Hour), time.Minute))
	assert.Empty(t, r.snapshot().window)
}

func TestRegionStateDoesNotServeMarkedInstances(t *testing.T) {
	r := newRegionState("dc2", "dc1")
	echo := inst("A", "a1", actors.StatusUp, 1)
	echo.Metadata = map[string]string{MarkerKey: "dc1"} // re-exported by someone
	r.replace([]*actors.Instance{echo, inst("A", "a2", actors.StatusUp, 1)}, time.Unix(1, 0))
	assert.Equal(t, "UP_2_", r.hashcode(), "the hashcode compares with the remote's: raw")
	s := r.snapshot()
	require.Len(t, s.apps["A"].instances, 1)
	assert.Equal(t, "a2", s.apps["A"].instances[0].InstanceID)
}

func TestDecodeAppsSingleObjects(t *testing.T) {
	d, err := decodeApps([]byte(`{"applications":{"versions__delta":1,"apps__hashcode":"UP_1_","application":` +
		`{"name":"A","instance":{"instanceId":"a1","hostName":"h","app":"a","status":"UP","actionType":"ADDED",` +
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$MyDataCenterInfo","name":"MyOwn"}}}}}`))
	require.NoError(t, err)
	assert.Equal(t, "1", d.versionDelta)
	assert.Equal(t, "UP_1_", d.hashcode)
	require.Len(t, d.instances, 1)
	assert.Equal(t, "A", d.instances[0].App)
	assert.Equal(t, actors.ActionAdded, d.instances[0].ActionType)
}

func TestRegionStateWhitelist(t *testing.T) {
	r := newRegionState("dc2", "dc1")
	r.apps = map[string]bool{"A": true}
	r.replace([]*actors.Instance{inst("A", "a1", actors.StatusUp, 1), inst("B", "b1", actors.StatusUp, 1)}, time.Unix(1, 0))
	assert.Equal(t, "UP_2_", r.hashcode(), "the whole registry is pulled and checked")
	s := r.snapshot()
	assert.Equal(t, []string{"A"}, s.names, "only whitelisted applications are served")
	assert.Equal(t, 1, s.total)
	assert.Len(t, s.window, 1, "nor are their changes")
}

// TestRegionDeltaCarriesTheRemotesDeletedEntry: a DELETED entry of a
// remote delta enters the region delta as the remote sent it (the
// instance as cancelled, its evictionTimestamp set), as the reference
// server's region delta does, not as the copy held before.
func TestRegionDeltaCarriesTheRemotesDeletedEntry(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRegionState("dc2", "dc1")
	r.replace([]*actors.Instance{inst("A", "a1", actors.StatusUp, 1)}, now)
	gone := inst("A", "a1", actors.StatusUp, 1)
	gone.ActionType = actors.ActionDeleted
	gone.LeaseInfo.EvictionTimestamp = 1234
	require.True(t, r.apply([]*actors.Instance{gone}, now))
	w := r.snapshot().window
	require.Len(t, w, 1)
	assert.Equal(t, actors.ActionDeleted, w[0].ActionType)
	assert.Equal(t, int64(1234), w[0].LeaseInfo.EvictionTimestamp)
	assert.Equal(t, "dc2", w[0].Metadata[MarkerKey], "marked like every served remote instance")

	// An entry without one (a Heureka stream's delta event), and an
	// instance a full fetch no longer has: cancelled now.
	later := now.Add(time.Second)
	r.replace([]*actors.Instance{inst("A", "a2", actors.StatusUp, 1), inst("A", "a3", actors.StatusUp, 1)}, now)
	gone = inst("A", "a2", actors.StatusUp, 1)
	gone.ActionType = actors.ActionDeleted
	require.True(t, r.apply([]*actors.Instance{gone}, later))
	require.True(t, r.replace(nil, later))
	byID := map[string]*actors.Instance{}
	for _, in := range r.snapshot().window {
		byID[in.InstanceID] = in
	}
	for _, id := range []string{"a2", "a3"} {
		require.Contains(t, byID, id)
		assert.Equal(t, actors.ActionDeleted, byID[id].ActionType, id)
		assert.Equal(t, later.UnixMilli(), byID[id].LeaseInfo.EvictionTimestamp, id)
	}
	assert.Zero(t, gone.LeaseInfo.EvictionTimestamp, "the remote's entry is not changed in place")
}
