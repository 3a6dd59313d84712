package httpapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/heureka/heureka/actors"
)

func TestSelfPreservationDecision(t *testing.T) {
	tests := []struct {
		st   *actors.SelfPreservationStatus
		want string
	}{
		{nil, ""},
		{&actors.SelfPreservationStatus{Enabled: true, Engaged: true, Reason: "engaged: 3 renewals"}, "engaged: 3 renewals"},
		{&actors.SelfPreservationStatus{Enabled: true, Engaged: true}, "engaged"},
		{&actors.SelfPreservationStatus{Enabled: true}, "not engaged"},
		{&actors.SelfPreservationStatus{Enabled: false, ExpirationEnabled: true}, "disabled"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, selfPreservationDecision(tt.st))
	}
}

func TestSelfPreservationView(t *testing.T) {
	assert.Equal(t, SelfPreservation{}, NewSelfPreservation(nil))
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	v := NewSelfPreservation(&actors.SelfPreservationStatus{Engaged: true, EngagedSince: since, Window: 250 * time.Millisecond})
	if assert.NotNil(t, v.EngagedSince) {
		assert.Equal(t, time.UTC, v.EngagedSince.Location())
		assert.True(t, since.Equal(*v.EngagedSince))
	}
	assert.Equal(t, 0.25, v.WindowSeconds)
	assert.Equal(t, `{"enabled":false,"engaged":false,"engagedSince":null,"reason":"<&>","expected":0,"threshold":0,`+
		`"renewsLastWindow":0,"localRenewals":0,"peerRenewals":0,"members":0,"expirationEnabled":false,"windowSeconds":0,"protected":0,"recoveryThreshold":0}`,
		string(marshalJSON(SelfPreservation{Reason: "<&>"})))
}
