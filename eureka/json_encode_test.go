package eureka

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendJSONString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain ascii", `"plain ascii"`},
		{`q"b\s/`, `"q\"b\\s/"`},
		{"<&>", `"<&>"`}, // no HTML escaping
		{"\n\r\t\b\f\x00\x1f\x7f", `"\n\r\t\b\f\u0000\u001f` + "\x7f" + `"`},
		{"héllo ✓ 😀", `"héllo ✓ 😀"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"bad\xffutf8\xc3", `"bad\ufffdutf8\ufffd"`},
	}
	for _, tt := range tests {
		got := AppendJSONString([]byte("x"), tt.in)
		assert.Equal(t, "x"+tt.want, string(got), "%q", tt.in)
		var back string
		require.NoError(t, json.Unmarshal(got[1:], &back))
		if !strings.Contains(tt.in, "\xff") {
			assert.Equal(t, tt.in, back)
		}
	}
}
