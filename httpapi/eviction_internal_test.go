package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/heureka/heureka/actors"
)

type holdList []EvictionHold

func (l holdList) EvictionHolds() []EvictionHold { return l }

func TestNewEviction(t *testing.T) {
	assert.Equal(t, Eviction{ExpirationEnabled: true, Holds: []EvictionHold{}}, NewEviction(nil, nil), "nothing known: nothing held")
	assert.Equal(t, `{"expirationEnabled":true,"holds":[]}`, string(marshalJSON(NewEviction(nil, holdList(nil)))))

	// Engaged without a known start, and a source's hold with a nil member
	// list and local times.
	zone := time.FixedZone("x", 3600)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, zone)
	e := NewEviction(&actors.SelfPreservationStatus{Enabled: true, Engaged: true},
		holdList{{Reason: HoldDeaf, Since: at, Until: at.Add(time.Minute), Detail: "d"}})
	assert.False(t, e.ExpirationEnabled)
	assert.Equal(t, HoldSelfPreservation, e.Holds[0].Reason)
	assert.NotEmpty(t, e.Holds[0].Detail, "a hold always says why")
	assert.Equal(t, `{"reason":"deaf","members":[],"since":"2026-01-02T02:04:05Z","until":"2026-01-02T02:05:05Z","detail":"d"}`,
		string(marshalJSON(e.Holds[1])))
	assert.Equal(t, `{"reason":"self-preservation","members":[],"detail":"`+e.Holds[0].Detail+`"}`, string(marshalJSON(e.Holds[0])),
		"no since when the start is unknown, no until")

	// The self-preservation object carries evictionHolds only when filled.
	assert.NotContains(t, string(marshalJSON(SelfPreservation{})), "evictionHolds")
	assert.Contains(t, string(marshalJSON(SelfPreservation{EvictionHolds: []EvictionHold{}})), `"evictionHolds":[]`)
}

func TestEvictionXML(t *testing.T) {
	var b strings.Builder
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	appendEvictionXML(&b, Eviction{Holds: []EvictionHold{{Reason: HoldSilentMember, Members: []string{"a<b"}, Since: at, Detail: "x & y"}}})
	assert.Equal(t, "  <eviction>\n    <expirationEnabled>false</expirationEnabled>\n    <holds>\n      <hold>\n"+
		"        <reason>silent-member</reason>\n        <members>\n          <member>a&lt;b</member>\n        </members>\n"+
		"        <since>2026-01-02T03:04:05Z</since>\n        <detail>x &amp; y</detail>\n      </hold>\n    </holds>\n  </eviction>\n",
		b.String())
}
