package eureka

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

// The view assembles application elements from per-instance pieces: in every
// format, open + instance (separator instance)* + close must be exactly
// AppendApplication.
func TestEncoderPiecesMakeTheApplication(t *testing.T) {
	a := &actors.Instance{InstanceID: "a", HostName: "a.example.org", App: "APP", IPAddr: "10.0.0.1",
		Status: actors.StatusUp, OverriddenStatus: actors.StatusUnknown, Metadata: map[string]string{"k": "v"},
		VIPAddress: "app", ActionType: actors.ActionAdded}
	b := a.Clone()
	b.InstanceID, b.Status, b.ActionType = "b", actors.StatusDown, actors.ActionModified
	for f, enc := range Encoders() {
		for _, insts := range [][]*actors.Instance{nil, {a}, {a, b}, {b, a, b}} {
			want := enc.AppendApplication(nil, "APP", insts)
			got := enc.AppendApplicationOpen(nil, "APP")
			for i, in := range insts {
				if i > 0 {
					got = enc.AppendInstanceSeparator(got)
				}
				got = enc.AppendInstance(got, in)
			}
			got = enc.AppendApplicationClose(got)
			assert.Equal(t, string(want), string(got), "format %d, %d instances", view.Format(f), len(insts))
		}
	}
}
