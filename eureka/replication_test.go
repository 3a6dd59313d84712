package eureka

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors/view"
)

// codecReplicationBody is the spec §5.3 batch with a complete instanceInfo.
var codecReplicationBody = `{"replicationList":[
 {"appName":"ORDER-SERVICE","id":"10.0.0.11:order-service:8080","lastDirtyTimestamp":1754499999870,"status":"UP","action":"Heartbeat"},
 {"appName":"ORDER-SERVICE","id":"10.0.0.12:order-service:8080","lastDirtyTimestamp":1754500000950,"overriddenStatus":"OUT_OF_SERVICE","status":"OUT_OF_SERVICE","action":"Heartbeat"},
 {"appName":"USER-SERVICE","id":"10.0.0.21:user-service:9090","lastDirtyTimestamp":1754500001500,"status":"UP","instanceInfo":` +
	strings.TrimSuffix(strings.TrimPrefix(string(codecUserInstanceDoc()), `{"instance":`), "}") + `,"action":"Register"},
 {"appName":"USER-SERVICE","id":"10.0.0.23:user-service:9090","action":"Cancel"}]}`

func codecUserInstanceDoc() []byte {
	_, _, i21 := codecSpecInstances()
	return AppendInstanceDocument(nil, view.FormatJSON, i21)
}

// codecReplicationSeeds seed FuzzDecodeReplicationList and its committed
// corpus.
var codecReplicationSeeds = []codecSeed{
	{"spec", codecReplicationBody},
	{"lenient", `{"replicationList":{"appName":"A","id":"i","action":"StatusUpdate","status":"DOWN","lastDirtyTimestamp":"12","overriddenstatus":"UP","instanceInfo":null}}`},
	{"empty", `{"replicationList":[]}`},
	{"bad-item", `{"replicationList":[1]}`},
	{"bad-instance", `{"replicationList":[{"action":"Register","instanceInfo":{"port":[1]}}]}`},
	{"garbage", `{"replicationList":`},
}

func TestDecodeReplicationList(t *testing.T) {
	ts := func(n int64) *int64 { return &n }
	_, _, i21 := codecSpecInstances()
	tests := []struct {
		name    string
		body    string
		want    []ReplicationItem
		wantErr bool
	}{
		{name: "spec batch", body: codecReplicationBody, want: []ReplicationItem{
			{AppName: "ORDER-SERVICE", ID: "10.0.0.11:order-service:8080", Action: ReplicationHeartbeat,
				LastDirtyTimestamp: ts(1754499999870), Status: "UP"},
			{AppName: "ORDER-SERVICE", ID: "10.0.0.12:order-service:8080", Action: ReplicationHeartbeat,
				LastDirtyTimestamp: ts(1754500000950), Status: "OUT_OF_SERVICE", OverriddenStatus: "OUT_OF_SERVICE"},
			{AppName: "USER-SERVICE", ID: "10.0.0.21:user-service:9090", Action: ReplicationRegister,
				LastDirtyTimestamp: ts(1754500001500), Status: "UP", Instance: i21},
			{AppName: "USER-SERVICE", ID: "10.0.0.23:user-service:9090", Action: ReplicationCancel},
		}},
		{name: "single item, string timestamp, legacy key", body: codecReplicationSeeds[1].body, want: []ReplicationItem{
			{AppName: "A", ID: "i", Action: ReplicationStatusUpdate, Status: "DOWN", LastDirtyTimestamp: ts(12), OverriddenStatus: "UP"},
		}},
		{name: "raw status kept", body: `{"replicationList":[{"action":"DeleteStatusOverride","status":"up","lastDirtyTimestamp":null}]}`,
			want: []ReplicationItem{{Action: ReplicationDeleteStatusOverride, Status: "up"}}},
		{name: "empty list", body: `{"replicationList":[]}`, want: []ReplicationItem{}},
		{name: "no list", body: `{}`, want: nil},
		{name: "garbage", body: `{"replicationList":`, wantErr: true},
		{name: "not an object", body: `[]`, wantErr: true},
		{name: "list is a string", body: `{"replicationList":"x"}`, wantErr: true},
		{name: "item not an object", body: `{"replicationList":[1]}`, wantErr: true},
		{name: "id number", body: `{"replicationList":[{"id":5}]}`, wantErr: true},
		{name: "bad timestamp", body: `{"replicationList":[{"lastDirtyTimestamp":"soon"}]}`, wantErr: true},
		{name: "bad instance", body: codecReplicationSeeds[4].body, wantErr: true},
		{name: "instance not an object", body: `{"replicationList":[{"instanceInfo":"x"}]}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeReplicationList([]byte(tt.body))
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrBadBody)
				assert.NotContains(t, strings.TrimPrefix(err.Error(), ErrBadBody.Error()), ErrBadBody.Error(), "prefix once")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAppendReplicationResponses(t *testing.T) {
	_, i12, _ := codecSpecInstances()
	got := AppendReplicationResponses(nil, []ReplicationResponse{
		{StatusCode: 200}, {StatusCode: 409, Entity: i12}, {StatusCode: 404},
	})
	want := `{"responseList":[{"statusCode":200},{"statusCode":409,"responseEntity":` +
		strings.TrimSuffix(strings.TrimPrefix(string(AppendInstanceDocument(nil, view.FormatJSON, i12)), `{"instance":`), "}") +
		`},{"statusCode":404}]}`
	assert.Equal(t, want, string(got))

	var doc struct {
		ResponseList []struct {
			StatusCode     int             `json:"statusCode"`
			ResponseEntity json.RawMessage `json:"responseEntity"`
		} `json:"responseList"`
	}
	require.NoError(t, json.Unmarshal(got, &doc))
	require.Len(t, doc.ResponseList, 3)
	assert.Equal(t, 409, doc.ResponseList[1].StatusCode)
	entity, err := DecodeInstance("application/json", doc.ResponseList[1].ResponseEntity)
	require.NoError(t, err)
	assert.Equal(t, i12, entity)

	assert.Equal(t, `{"responseList":[]}`, string(AppendReplicationResponses(nil, nil)))
}

func FuzzDecodeReplicationList(f *testing.F) {
	for _, s := range codecReplicationSeeds {
		f.Add([]byte(s.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := DecodeReplicationList(body)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody)
			require.Nil(t, items)
			return
		}
		rs := make([]ReplicationResponse, len(items))
		for i, it := range items {
			rs[i] = ReplicationResponse{StatusCode: 200, Entity: it.Instance}
			if it.Instance != nil {
				it.Instance.Normalize()
			}
		}
		out := AppendReplicationResponses(nil, rs)
		require.True(t, json.Valid(out), "%s", out)
		for _, it := range items {
			if it.Instance != nil {
				codecCheckInstance(t, it.Instance)
			}
		}
	})
}
