//go:build sabotage

package eureka

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/sabotage"
)

// With direct-json-leading-zeros on, the direct decoder takes a number JSON
// forbids, and the checks of TestDecodeDirectGivesUp fail: a body that
// encoding/json refuses is accepted.
func TestSabotageDirectJSONLeadingZeros(t *testing.T) {
	require.NoError(t, sabotage.Set(sabotage.DirectJSONLeadingZeros))
	defer func() { require.NoError(t, sabotage.Set()) }()

	body := []byte(`{"instance":{"app":"A","countryId":01}}`)
	_, err := decodeInstanceJSON(body)
	require.Error(t, err, "encoding/json refuses it")
	sc := fjScratches.New().(*fjScratch)
	_, ok := sc.decodeDirect(body)
	assert.True(t, ok, "the direct decoder takes it")
	_, err = decodeInstanceJSONFast(body)
	assert.NoError(t, err, "and so the register decoder accepts what JSON forbids")
}
