package httpapi

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// renewQuery reads a renewal's parameters exactly as url.ParseQuery and
// Values.Get do, on the split-in-place path and on the fallback.
func TestRenewQueryMatchesParseQuery(t *testing.T) {
	for _, raw := range []string{
		"", "status=UP&lastDirtyTimestamp=1754499999870", "lastDirtyTimestamp=1&lastDirtyTimestamp=2",
		"lastDirtyTimestamp=&lastDirtyTimestamp=2", "overriddenstatus=DOWN&status=UP", "lastDirtyTimestamp",
		"&&lastDirtyTimestamp=5&", "=5&lastDirtyTimestamp=6", "lastDirtyTimestamp=1=2", "LastDirtyTimestamp=7",
		"lastDirtyTimestamp=%31%32", "overriddenstatus=OUT%5FOF%5FSERVICE", "lastDirtyTimestamp=1;x=2",
		"a=1;lastDirtyTimestamp=3&lastDirtyTimestamp=4", "lastDirty%54imestamp=8", "overriddenstatus=a+b",
		"lastDirtyTimestamp=%zz&lastDirtyTimestamp=9",
	} {
		q, _ := url.ParseQuery(raw)
		dirty, overridden := renewQuery(raw)
		assert.Equal(t, q.Get("lastDirtyTimestamp"), dirty, raw)
		assert.Equal(t, q.Get("overriddenstatus"), overridden, raw)
	}
}
