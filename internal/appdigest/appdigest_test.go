package appdigest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

func inst(app, id string, status actors.Status, dirty int64) *actors.Instance {
	return &actors.Instance{App: app, InstanceID: id, HostName: id + ".host", Status: status,
		LastDirtyTimestamp: dirty, LastUpdatedTimestamp: dirty + 1}
}

// An application's digest does not depend on the order its instances are
// added in, changes with every field a change is made of, and ignores the
// fields a follower adds (metadata: the region marker and zone).
func TestDigestFields(t *testing.T) {
	a, b := inst("A", "1", actors.StatusUp, 100), inst("A", "2", actors.StatusUp, 200)
	fwd, rev := Digest{}, Digest{}
	fwd.Add(a)
	fwd.Add(b)
	rev.Add(b)
	rev.Add(a)
	assert.Equal(t, fwd, rev, "order of instances")

	base := Instance(a)
	for name, change := range map[string]func(*actors.Instance){
		"status":               func(i *actors.Instance) { i.Status = actors.StatusDown },
		"overriddenStatus":     func(i *actors.Instance) { i.OverriddenStatus = actors.StatusOutOfService },
		"lastDirtyTimestamp":   func(i *actors.Instance) { i.LastDirtyTimestamp++ },
		"lastUpdatedTimestamp": func(i *actors.Instance) { i.LastUpdatedTimestamp++ },
		"instance id":          func(i *actors.Instance) { i.InstanceID = "3" },
	} {
		c := *a
		change(&c)
		assert.NotEqual(t, base, Instance(&c), name)
	}
	c := *a
	c.Metadata = map[string]string{"zone": "dc2", "heureka.region": "dc2"}
	assert.Equal(t, base, Instance(&c), "metadata a follower adds")
	c = *a
	c.OverriddenStatus = actors.StatusUnknown
	assert.Equal(t, base, Instance(&c), "an empty overriddenStatus is UNKNOWN, as both decoders read Java's null")
	// The id and a field's value are separated: "1" then "UP..." is not "1U" then "P...".
	x, y := *a, *a
	x.InstanceID, y.InstanceID = "ab", "a"
	assert.NotEqual(t, Instance(&x), Instance(&y))
}

// Encode and Decode round-trip, sorted by name; Decode refuses what is not
// the wire form and more than MaxApps applications.
func TestDigestWireForm(t *testing.T) {
	d := Digest{"BETA": 0xff, "ALPHA": 1 << 63}
	wire := d.Encode()
	assert.Equal(t, "ALPHA 8000000000000000\nBETA 00000000000000ff\n", string(wire))
	back, err := Decode(bytes.NewReader(wire))
	require.NoError(t, err)
	assert.Equal(t, d, back)

	empty, err := Decode(strings.NewReader("\n\n"))
	require.NoError(t, err)
	assert.Empty(t, empty)

	for _, bad := range []string{"ALPHA\n", " 0000000000000001\n", "ALPHA 1\n", "ALPHA 000000000000000g\n", "ALPHA 00000000000000001\n"} {
		_, err := Decode(strings.NewReader(bad))
		assert.ErrorIs(t, err, errMalformed, "%q", bad)
	}

	var many strings.Builder
	for i := range MaxApps + 1 {
		fmt.Fprintf(&many, "A%d 0000000000000001\n", i)
	}
	_, err = Decode(strings.NewReader(many.String()))
	assert.ErrorContains(t, err, "more than")
}
