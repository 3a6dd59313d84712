package httpapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseRegions(t *testing.T) {
	for in, want := range map[string][]string{
		"dc2":             {"dc2"},
		"DC3,dc2":         {"dc2", "dc3"},
		" dc2 ,, DC2,dc1": {"dc1", "dc2"},
		",":               nil,
	} {
		assert.Equal(t, want, parseRegions(in), in)
	}
}
