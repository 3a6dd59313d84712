package eureka

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxRegisterDecodeAllocs is what decoding and normalizing the Java
// client's register body may allocate: the Instance, the strings
// unique to the instance (id, host, address, three URLs), the metadata map
// and its strings. Values the registry interns (application, status, data
// center, VIP addresses) come from the decoder's cache, and the body is
// not copied.
const maxRegisterDecodeAllocs = 14

// TestRegisterDecodeAllocations guards the register decoder's allocations:
// a copy of the body, a value interned the slow way, or a new per-field
// allocation shows here.
func TestRegisterDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not stable under the race detector")
	}
	body := []byte(codecJavaBody)
	// Warm the scratch's cache (a fresh scratch interns each value once).
	in, err := DecodeInstance("application/json", body)
	require.NoError(t, err)
	in.Normalize()
	n := testing.AllocsPerRun(100, func() {
		in, err := DecodeInstance("application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		in.Normalize()
	})
	assert.LessOrEqual(t, n, float64(maxRegisterDecodeAllocs), "allocations per decode and Normalize")
}
