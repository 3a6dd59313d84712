package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The transfers in flight are kept per application and peer, counted, and
// a finished application ends its transfers from every peer.
func TestInflightSet(t *testing.T) {
	s := inflightSet{byApp: map[string]map[string]time.Time{}}
	t0 := time.Unix(100, 0)
	s.put("A", "p1", t0)
	s.put("A", "p2", t0)
	s.put("A", "p1", t0.Add(time.Second)) // asked again: still one transfer
	s.put("B", "p1", t0)
	assert.Equal(t, 3, s.n)
	at, ok := s.get("A", "p1")
	assert.True(t, ok)
	assert.Equal(t, t0.Add(time.Second), at)
	_, ok = s.get("B", "p2")
	assert.False(t, ok)

	s.drop("A", "p2")
	s.drop("A", "p3") // never asked: nothing changes
	assert.Equal(t, 2, s.n)
	s.dropApp("A")
	assert.Equal(t, 1, s.n)
	_, ok = s.get("A", "p1")
	assert.False(t, ok)
	s.drop("B", "p1")
	assert.Zero(t, s.n)
	assert.Empty(t, s.byApp)
}
