package eureka

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// fastJSONLenientBodies are register bodies that fastjson's parser accepts
// but JSON forbids: a control character inside a string, a number with a
// leading zero, a fraction without digits. encoding/json refuses each, so
// the fast decoder must refuse it with encoding/json's message.
var fastJSONLenientBodies = []string{
	"{\"instance\":{\"instanceId\":\"i\x01d\",\"hostName\":\"h\",\"app\":\"A\",\"ipAddr\":\"1.2.3.4\"}}",
	`{"instance":{"instanceId":"i","hostName":"h","app":"A","ipAddr":"1.2.3.4","countryId":01}}`,
	`{"instance":{"instanceId":"i","hostName":"h","app":"A","ipAddr":"1.2.3.4","countryId":1.}}`,
}

// TestDecodeInstanceJSONFastRefusesWhatJSONForbids: the fast decoder's
// strict validation refuses, as encoding/json does, every body its lenient
// parser would take (the fast-json-unvalidated sabotage switch removes the
// validation, and json_decode_fast_sabotage_test.go sees this fail).
func TestDecodeInstanceJSONFastRefusesWhatJSONForbids(t *testing.T) {
	for _, body := range fastJSONLenientBodies {
		_, err := decodeInstanceJSON([]byte(body))
		require.Error(t, err, "encoding/json refuses %q", body)
		sameDecoding(t, []byte(body))
	}
}
